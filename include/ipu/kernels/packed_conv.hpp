#pragma once
/// \file
/// The fast convolution: weights packed once for the vector unit, outputs computed in register
/// tiles, and the ops that follow a convolution in a network (bias, folded batch norm, the
/// residual add, ReLU) applied while the tile is still in registers.
///
/// **Arithmetic.** Each output is the same sum, in the same order, as `kernels::conv` computes:
/// one `madd` per tap inside the image, kernel row, then kernel column, then input channel,
/// from +0 in f32; then the epilogue, each of its steps rounded to `T` as the separate layer
/// would round it. So a network run with the fast kernels and fused epilogues gives the bits the
/// faithful executor gives, layer by layer, whatever the instruction set or the threads.
///
/// **Three paths.**
/// - *Dense panels* (any convolution, grouped or not): for each group, its output channels in
///   panels of up to four vectors; a tile is a few output positions by one panel, each input
///   value broadcast to every lane. Grouped convolutions with more than a vector's width of
///   channels per group run here, one group at a time.
/// - *Groups in lanes* (grouped, 2 to a vector's width of channels per group in and out,
///   dividing the width): one vector holds one or several whole groups, as PopLibs' vertices
///   hold several groups in one accumulator on the IPU. The input window is first copied with
///   each pixel's channels transposed, channel `j` of every group in the vector side by side,
///   so that one broadcast load gives every group's lanes their own group's channel `j`: no
///   lane idles, and no multiply-add waits on a shuffle.
/// - *Depthwise* (one channel per group in and out): a tile is a few output positions by up to
///   four vectors of consecutive channels, each input vector multiplied by its channels'
///   weights in place, read from the input directly, so each position's channels are read and
///   written together.

#include <ipu/core/aligned.hpp>
#include <ipu/kernels/simd.hpp>
#include <ipu/kernels/views.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#if __has_include(<unistd.h>)
#include <unistd.h>  // sysconf
#endif

namespace ipu::kernels {

/// The shape of one convolution, NHWC, kernel HWIO
/// `[kernel.h][kernel.w][in_channels / groups][out_channels]`. A dense layer is a 1x1
/// convolution on 1x1 images.
struct conv_shape {
  /// \var batch
  /// Images.
  /// \var in_height
  /// Rows of each input image.
  /// \var in_width
  /// Columns of each input image.
  /// \var in_channels
  /// Channels of each input pixel, all groups together.
  std::int64_t batch = 1, in_height = 1, in_width = 1, in_channels = 1;
  std::int64_t out_channels = 1;  ///< channels of each output pixel, all groups together
  hw kernel = 1;  ///< taps of the kernel, rows x columns
  hw stride = 1;  ///< pixels from one window to the next, along rows and columns
  /// Channel groups: the input and output channels split into `groups` equal runs, and
  /// output group `g` reads input group `g` only; 1 for an ordinary convolution. Must divide
  /// `in_channels` and `out_channels`.
  std::int64_t groups = 1;
  /// TensorFlow's SAME (the default) or explicit amounts, each below the kernel's extent
  /// (`ipu::padding`).
  padding pad{};
  hw dilation = 1;  ///< pixels from one tap to the next, along rows and columns (1: adjacent)

  /// The pixels the kernel spans along rows and columns (`dilated_extent`).
  constexpr hw extent() const noexcept { return dilated_extent(kernel, dilation); }
  /// Rows of each output image: `ceil(in_height / stride.h)` with SAME padding.
  constexpr std::int64_t out_height() const noexcept { return pad.out_height(in_height, extent(), stride); }
  /// Columns of each output image: `ceil(in_width / stride.w)` with SAME padding.
  constexpr std::int64_t out_width() const noexcept { return pad.out_width(in_width, extent(), stride); }
  /// Output positions over all images.
  constexpr std::int64_t positions() const noexcept { return batch * out_height() * out_width(); }
  /// The sliding-window geometry that `for_each_tap` and `kernels::conv` take.
  constexpr window_geometry geometry() const noexcept {
    return window_geometry::of(in_height, in_width, out_height(), out_width(), kernel, stride, dilation, pad);
  }
  /// Multiply-adds counted as two operations, padding taps included (the usual convention).
  constexpr double flops() const noexcept {
    return 2.0 * static_cast<double>(positions() * out_channels * kernel.area() * (in_channels / groups));
  }
  /// True when every field is equal.
  friend constexpr bool operator==(const conv_shape&, const conv_shape&) = default;
};

/// The activation an epilogue applies last.
enum class activation_kind : std::uint8_t {
  none,
  relu,   ///< `max(x, 0)`: NaN gives +0, as `kernels::relu`
  relu6,  ///< `min(max(x, 0), 6)`: NaN stays NaN, as `ops::relu6`
  silu,   ///< `x / (1 + e^-x)` as `kernels::silu` (`ops::silu`)
};

/// What happens to each convolution output before it is stored, in this order, each step
/// rounded to `T` as the separate layer would round it: `+ bias`, then `* scale + shift`
/// (batch norm folded), then `+ residual`, then the activation (`activation_kind`: ReLU, ReLU6
/// or SiLU). Null pointers skip a step.
///
/// \tparam T  the element type of the output and the residual: `float` or `ipu::f16`
template <class T>
struct epilogue {
  const float* bias = nullptr;      ///< `out_channels` values
  const float* scale = nullptr;     ///< `out_channels` values; with `shift`
  const float* shift = nullptr;     ///< `out_channels` values; with `scale`
  const T* residual = nullptr;      ///< a tensor shaped as the output (NHWC)
  activation_kind activation = activation_kind::none;  ///< applied last
};

/// Work items that a convolution is cut into at least, where its items could be larger: with
/// fewer, the threads end apart. `packed_conv`'s 1x1 items that compute every panel, and
/// `ops::conv`'s kernel gradient, which splits its positions into parts below as many blocks.
inline constexpr std::int64_t min_work_items = 8;

inline namespace IPU_SIMD_NAMESPACE {
namespace detail {

using simd::vec;
constexpr int width = vec::width;

/// Register tiles: positions per tile for a panel of `vectors` vectors (1 to 4), so that the
/// accumulators, one panel of weights and a broadcast fit the register file.
constexpr int dense_rows(int vectors) noexcept {
  if constexpr (width == 16) {
    return vectors == 1 ? 12 : vectors == 2 ? 12 : vectors == 3 ? 8 : 6;
  } else {
    return vectors == 1 ? 8 : vectors == 2 ? 6 : 4;
  }
}
constexpr int max_panel_vectors = width == 16 ? 4 : 3;
/// Groups-in-lanes tiles: positions of one output row per tile, each an accumulator beside one
/// weight vector (`lanes_tile`). With AVX-512, 14: a whole row of the 14x14 maps of a 224x224
/// image, and half or a quarter of a row of the 28x28 and 56x56 ones, which ResNeXt's grouped
/// convolutions run on; with tiles of 12 across the rows and the window's padding between
/// them, its 14x14 and 28x28 layers (16 and 8 channels per group) ran 1.12 times slower on 2
/// threads.
constexpr int lanes_rows = width == 16 ? 14 : width == 8 ? 6 : 4;
/// Depthwise tiles: vectors of consecutive channels, and positions, per tile; the
/// accumulators and one weight vector per channel vector fit the register file (32 vector
/// registers with AVX-512: 6 x 4 + 4; 16 with AVX2: 6 x 2 + 2), each input vector an operand
/// of its multiply-add.
constexpr int depthwise_vectors = width == 16 ? 4 : 2;
constexpr int depthwise_rows = 6;
/// Bytes of a core's L1 data cache, the least of the x86-64 cores with AVX2 or AVX-512: 32 KiB
/// on Intel's cores from Haswell to Skylake-SP (Intel 64 and IA-32 Architectures Optimization
/// Reference Manual; AnandTech, "The Intel Skylake-X Review", 2017, p. 4: "32KB 8-way") and on
/// AMD's Zen 1 to 4; 48 KiB since Ice Lake.
constexpr std::int64_t l1_data_bytes = 32 * 1024;

/// Bytes of a core's L2 cache, as the C library reads them from the processor (glibc's
/// `sysconf(_SC_LEVEL2_CACHE_SIZE)`, from CPUID); where it cannot tell, 256 KiB, the least of
/// the x86-64 cores with AVX2 or AVX-512 (Haswell to Skylake client: Intel 64 and IA-32
/// Architectures Optimization Reference Manual, their cache parameters; AMD's Zen 1 to 3 have
/// 512 KiB, Zen 4 1 MiB, Intel's server cores from Skylake-SP 1 to 2 MiB).
inline std::int64_t l2_bytes() noexcept {
  static const std::int64_t bytes = [] {
    constexpr std::int64_t least = 256 * 1024;
#if defined(_SC_LEVEL2_CACHE_SIZE)
    const long read = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return read > 0 ? static_cast<std::int64_t>(read) : least;
#else
    return least;
#endif
  }();
  return bytes;
}

/// The taps of one output position inside the image: kernel rows `[kh0, kh1)`, columns
/// `[kw0, kw1)`.
struct taps {
  std::int64_t kh0, kh1, kw0, kw1;
};

/// Where a tile reads: tap `(kh, kw)` of tile position `r` (channel offset included) is
/// `data + base + kh * row + kw * pixel + r * step` (`row` and `pixel` include the dilation).
template <class T>
struct input_walk {
  const T* data;
  std::int64_t base, step, row, pixel;
  const T* at(std::int64_t kh, std::int64_t kw, int r) const noexcept { return data + (base + kh * row + kw * pixel + r * step); }
};

/// The epilogue's per-channel terms of one vector of output channels, loaded once for every
/// position of a tile (the compiler cannot keep them across the tile's stores, which may alias
/// them); zero where the epilogue has no such step.
struct channel_terms {
  vec bias, scale, shift;
};

/// What a tile's epilogue reads of a panel of `Vectors` vectors from output channel `c`, the
/// last vector `last` lanes wide: the epilogue, and each vector's channel terms, loaded once
/// per panel rather than once per tile.
template <int Vectors, class T>
struct panel_epilogue {
  epilogue<T> e;
  channel_terms k[Vectors];
  std::int64_t c;
  int last;

  panel_epilogue(const epilogue<T>& epi, std::int64_t first, int last_lanes) noexcept : e(epi), c(first), last(last_lanes) {
    unroll<Vectors>([&](auto v) {
      const int n = v + 1 < Vectors ? width : last;
      k[v] = {e.bias != nullptr ? simd::load(e.bias + c + v * width, n) : simd::zero(),
              e.scale != nullptr ? simd::load(e.scale + c + v * width, n) : simd::zero(),
              e.scale != nullptr ? simd::load(e.shift + c + v * width, n) : simd::zero()};
    });
  }
};

/// Which positions `r` of a tile its epilogue stores (`stored(r)`): all of a whole tile, with no
/// test; the first `count`; or those whose bit is set (a depthwise window's tile whose positions
/// fall on the padding between two rows). With a bit mask for every tile, a test per position
/// at run time, MobileNetV2 and EfficientNet-B0 ran 1.05 to 1.07 times slower.
struct all_positions {
  constexpr bool operator()(int) const noexcept { return true; }
};
struct first_positions {
  int count;  ///< positions stored, from the first
  constexpr bool operator()(int r) const noexcept { return r < count; }
};
struct marked_positions {
  unsigned bits;  ///< bit `r` set: position `r` stored
  constexpr bool operator()(int r) const noexcept { return (bits >> r & 1u) != 0; }
};

/// The most positions of a tile whose epilogue goes step by step (`epilogue_positions`): the
/// tiles of 6 rows (dense 6x4, depthwise, and AVX2's), not those of 12.
constexpr int epilogue_step_positions = 6;

/// `epilogue_positions`' steps for a small tile: each step one pass over every position, so
/// that its test is made once per tile and the tile's values stay in registers from step to
/// step. With a test per position, GCC kept a 6x4 tile's values and channel terms in memory,
/// and its epilogue took about as long as 16 input channels of its multiply-adds.
template <int Full, int Vectors, class T, class Stored>
inline void epilogue_by_step(const vec (*acc)[Vectors], Stored stored, const epilogue<T>& e, const channel_terms (&k)[Vectors],
                             int last, const std::int64_t (&first)[Full], T* out) noexcept {
  vec x[Full][Vectors];
  // `f(r, v)` for position `r` and vector `v`.
  const auto each = [&](auto&& f) {
    unroll<Full>([&](auto r) {
      if (stored(r)) unroll<Vectors>([&](auto v) { f(r, v); });
    });
  };
  // `f(r, v, lanes)`, vector `v` being `lanes` wide: the last one's width tested once.
  const auto each_lanes = [&](auto&& f) {
    if (last == width) {
      each([&](auto r, auto v) { f(r, v, width); });
    } else {
      each([&](auto r, auto v) { f(r, v, v + 1 < Vectors ? width : last); });
    }
  };
  each([&](auto r, auto v) { x[r][v] = acc[r][v]; });
  if (e.bias != nullptr) each([&](auto r, auto v) { x[r][v] = simd::add(x[r][v], k[v].bias); });
  each([&](auto r, auto v) { x[r][v] = simd::rounded<T>(x[r][v]); });
  if (e.scale != nullptr) each([&](auto r, auto v) { x[r][v] = simd::rounded<T>(simd::madd(x[r][v], k[v].scale, k[v].shift)); });
  if (e.residual != nullptr)
    each_lanes([&](auto r, auto v, int lanes) {
      x[r][v] = simd::rounded<T>(simd::add(x[r][v], simd::load_widened(e.residual + first[r] + v * width, lanes)));
    });
  switch (e.activation) {
    case activation_kind::relu: each([&](auto r, auto v) { x[r][v] = simd::relu(x[r][v]); }); break;
    case activation_kind::relu6: each([&](auto r, auto v) { x[r][v] = kernels::relu6<simd::lanes>(x[r][v]); }); break;
    case activation_kind::silu: each([&](auto r, auto v) { x[r][v] = kernels::silu<simd::lanes>(x[r][v]); }); break;
    case activation_kind::none: break;
  }
  // Each position's vectors stored at fixed offsets from one pointer: with the offsets added
  // per vector, g++ 12 kept the 6x4 tile's store addresses on the stack (its function made
  // 199 references to the stack, against 146).
  const auto store = [&](auto lanes) {
    unroll<Full>([&](auto r) {
      if (!stored(r)) return;
      T* o = out + first[r];
      unroll<Vectors>([&](auto v) { simd::store_rounded(o + v * width, x[r][v], lanes(v)); });
    });
  };
  if (last == width) {
    store([](int) { return width; });
  } else {
    store([&](int v) { return v + 1 < Vectors ? width : last; });
  }
}

/// `epilogue_positions`' steps for a large tile: position by position, each step one pass over
/// the position's vectors. The large tiles (12 positions) leave some accumulators in memory
/// after their multiply-adds, and by step their epilogue also kept every position's output
/// offset in a general-purpose register (x86-64 has 16): ResNeXt's grouped 3x3 convolutions
/// ran 0.86 to 0.97 times as fast.
template <int Full, int Vectors, class T, class Stored>
inline void epilogue_by_position(const vec (*acc)[Vectors], Stored stored, const epilogue<T>& e, const channel_terms (&k)[Vectors],
                                 int last, const std::int64_t (&first)[Full], T* out) noexcept {
  const auto lanes = [&](int v) { return v + 1 < Vectors ? width : last; };
  unroll<Full>([&](auto r) __attribute__((always_inline)) {
    if (!stored(r)) return;
    const auto each = [](auto&& f) { unroll<Vectors>(f); };
    vec x[Vectors];
    each([&](auto v) { x[v] = acc[r][v]; });
    if (e.bias != nullptr) each([&](auto v) { x[v] = simd::add(x[v], k[v].bias); });
    each([&](auto v) { x[v] = simd::rounded<T>(x[v]); });
    if (e.scale != nullptr) each([&](auto v) { x[v] = simd::rounded<T>(simd::madd(x[v], k[v].scale, k[v].shift)); });
    if (e.residual != nullptr)
      each([&](auto v) { x[v] = simd::rounded<T>(simd::add(x[v], simd::load_widened(e.residual + first[r] + v * width, lanes(v)))); });
    switch (e.activation) {
      case activation_kind::relu: each([&](auto v) { x[v] = simd::relu(x[v]); }); break;
      case activation_kind::relu6: each([&](auto v) { x[v] = kernels::relu6<simd::lanes>(x[v]); }); break;
      case activation_kind::silu: each([&](auto v) { x[v] = kernels::silu<simd::lanes>(x[v]); }); break;
      case activation_kind::none: break;
    }
    each([&](auto v) { simd::store_rounded(out + first[r] + v * width, x[v], lanes(v)); });
  });
}

/// The epilogue of the positions `r < Full` that `stored` marks (`all_positions`,
/// `first_positions`, `marked_positions`), by `Vectors` vectors, `acc[r][v]` stored at
/// `out + offsets[r] + v * width` with its channels' terms `pe.k[v]`: `epilogue`'s steps in
/// order (bias, rounding to `T`, scale and shift, residual, activation), by step for a tile of
/// at most `epilogue_step_positions` (the 6x4 tiles of 1x1 convolutions from a few channels
/// and the depthwise tiles ran 1.1 to 1.25 times as fast as by position), by position for a
/// larger one.
/// Everything the steps read is copied first: the intrinsics' unaligned stores may alias any
/// object, so a field read after one is read again from memory. Unrolled; inlined in the
/// flattened functions that call it (`whole_tile`, `finish_positions`).
template <int Full, int Vectors, class T, class Stored>
inline void epilogue_positions(const vec (*acc)[Vectors], Stored stored, const panel_epilogue<Vectors, T>& pe,
                               const std::int64_t (&offsets)[Full], T* out) noexcept {
  const epilogue<T> e = pe.e;
  const int last = pe.last;
  channel_terms k[Vectors];
  std::int64_t first[Full];
  unroll<Vectors>([&](auto v) { k[v] = pe.k[v]; });
  unroll<Full>([&](auto r) { first[r] = offsets[r]; });
  if constexpr (Full <= epilogue_step_positions) {
    epilogue_by_step<Full, Vectors, T, Stored>(acc, stored, e, k, last, first, out);
  } else {
    epilogue_by_position<Full, Vectors, T, Stored>(acc, stored, e, k, last, first, out);
  }
}

/// `epilogue_positions` out of line and flattened, for the smaller tiles at the ends of runs,
/// whose accumulators it reads from memory: one function per whole tile's shape, which they
/// share (one per smaller tile made the kernels' translation unit compile 1.25 times as long).
template <int Full, int Vectors, class T, class Stored>
[[gnu::flatten]] inline void finish_positions(const vec (*acc)[Vectors], Stored stored, const panel_epilogue<Vectors, T>& pe,
                                              const std::int64_t (&offsets)[Full], T* out) noexcept {
  epilogue_positions<Full, Vectors, T, Stored>(acc, stored, pe, offsets, out);
}

/// The epilogue of a tile's `Count` positions (at most `Full`, a whole tile's) by `Vectors`
/// vectors, those `stored` marks (all `Count` by default), position `r` at output element
/// `at(r)` plus its vector's channels (channel `pe.c + v * width` of the whole output): each
/// position's offset, then `finish_positions`, which the dense, groups-in-lanes and depthwise
/// paths share.
template <int Full, int Count, int Vectors, class T, class At, class Stored = first_positions>
[[gnu::always_inline]] inline void finish_tile(const vec (&acc)[Count][Vectors], const panel_epilogue<Vectors, T>& pe, At&& at, T* out,
                                               Stored stored = first_positions{Count}) noexcept {
  static_assert(Count <= Full);
  std::int64_t first[Full];
  unroll<Full>([&](auto r) { first[r] = r < Count && stored(r) ? at(r) + pe.c : 0; });
  finish_positions<Full, Vectors, T, Stored>(acc, stored, pe, first, out);
}

/// A whole tile: `compute()`'s `Full` positions by `Vectors` vectors, and their epilogue
/// (`finish_tile`'s), in one flattened function, so that the accumulators go from the
/// multiply-adds to the epilogue in registers. Through memory, a tile of a 1x1 convolution
/// from 16 channels (6 positions by 4 vectors: about 200 cycles of multiply-adds) paid about
/// 100 cycles more, and MobileNetV2's 112x112x16->96 ran 1.2 to 2.2 times slower on one
/// thread (docs/kernels.md, "Fusion"). `stored`: the positions stored, all by default.
template <int Full, int Vectors, class T, class Compute, class At, class Stored = all_positions>
[[gnu::flatten]] void whole_tile(Compute&& compute, const panel_epilogue<Vectors, T>& pe, At&& at, T* out, Stored stored = {}) noexcept {
  const auto tl = compute();
  std::int64_t first[Full];
  unroll<Full>([&](auto r) { first[r] = at(r) + pe.c; });
  epilogue_positions<Full, Vectors, T, Stored>(tl.acc, stored, pe, first, out);
}

/// `count` whole tiles of a run, tile `i` computed by `compute(i)`, its position `r` stored at
/// `at(i, r)` plus the panel's channels: `whole_tile` for each, in one flattened function with
/// the panel's epilogue copied once into a local, which the tiles' stores cannot alias, rather
/// than read again for each tile. With a call per tile, on one thread, MobileNetV2's
/// 56x56x24->144 ran 1.06 times slower and ResNeXt's 56x56x64->256 1.11 to 1.13 (the 7x7/2
/// stem and the 3x3 layers as fast). The depthwise runs keep a call per tile: in one function,
/// MobileNetV2's depthwise layers ran 1.14 to 1.25 times slower.
template <int Full, int Vectors, class T, class Compute, class At>
[[gnu::flatten]] void whole_tiles(std::int64_t count, Compute&& compute, const panel_epilogue<Vectors, T>& pe, At&& at, T* out) noexcept {
  const panel_epilogue<Vectors, T> local = pe;
  for (std::int64_t i = 0; i < count; ++i) {
    const auto tl = compute(i);
    std::int64_t first[Full];
    unroll<Full>([&](auto r) { first[r] = at(i, r) + local.c; });
    epilogue_positions<Full, Vectors, T, all_positions>(tl.acc, all_positions{}, local, first, out);
  }
}

/// `Rows` positions by `Vectors` vectors of a dense panel: the sum over `t`'s taps and `k`
/// input channels, weights `w[(kh * kernel_w + kw) * k + ci][panel lane]`.
template <int Rows, int Vectors>
struct tile {
  vec acc[Rows][Vectors];
};

/// Adds to `acc` the sums over `k` input channels of `Rows` positions by `Vectors` vectors,
/// position `r` reading channel `ci` at `pixel(r)[ci]`, weights `w[ci][panel lane]`: each
/// input value broadcast to every lane, in channel order. `dense_tile` sums each tap with it,
/// `pixels_tile` its one tap.
template <int Rows, int Vectors, class Pixel>
[[gnu::always_inline]] inline void add_channels(vec (&acc)[Rows][Vectors], Pixel&& pixel, std::int64_t k, const float* w) noexcept {
  constexpr std::int64_t panel = Vectors * width;
  // Two channels a turn: the 6x4 tile on data in L1 ran 210 GFLOP/s on one thread, of the
  // zmm peak's 238, against 195 a channel a turn (4 and 8 a turn: 205 and 193).
#pragma GCC unroll 2
  for (std::int64_t ci = 0; ci < k; ++ci, w += panel) {
    vec wv[Vectors];
    unroll<Vectors>([&](auto v) { wv[v] = simd::load(w + v * width); });
    unroll<Rows>([&](auto r) {
      const vec b = simd::splat(static_cast<float>(pixel(r)[ci]));
      unroll<Vectors>([&](auto v) { acc[r][v] = simd::madd(b, wv[v], acc[r][v]); });
    });
  }
}

template <int Rows, int Vectors, class T>
inline tile<Rows, Vectors> dense_tile(const input_walk<T>& x, const taps& t, std::int64_t kernel_w, std::int64_t k,
                                      const float* w) noexcept {
  constexpr std::int64_t panel = Vectors * width;
  vec acc[Rows][Vectors];  // a local that never escapes, so that it lives in registers
  unroll<Rows>([&](auto r) { unroll<Vectors>([&](auto v) { acc[r][v] = simd::zero(); }); });
  for (std::int64_t kh = t.kh0; kh < t.kh1; ++kh)
    for (std::int64_t kw = t.kw0; kw < t.kw1; ++kw) {
      const T* xt = x.at(kh, kw, 0);
      add_channels(acc, [&](int r) { return xt + r * x.step; }, k, w + (kh * kernel_w + kw) * k * panel);
    }
  tile<Rows, Vectors> out;
  unroll<Rows>([&](auto r) { unroll<Vectors>([&](auto v) { out.acc[r][v] = acc[r][v]; }); });
  return out;
}

/// `Rows` positions by `Vectors` vectors of a dense panel of a 1x1 window, position `r < Rows`
/// reading its `k` input channels at `at[r]`: `dense_tile`'s sums, so with its bits, for
/// positions whose pixels are anywhere (the ends of the rows of a strided 1x1 convolution,
/// gathered across rows).
template <int Rows, int Vectors, class T>
inline tile<Rows, Vectors> pixels_tile(const T* const* at, std::int64_t k, const float* w) noexcept {
  vec acc[Rows][Vectors];
  unroll<Rows>([&](auto r) { unroll<Vectors>([&](auto v) { acc[r][v] = simd::zero(); }); });
  add_channels(acc, [&](int r) { return at[r]; }, k, w);
  tile<Rows, Vectors> out;
  unroll<Rows>([&](auto r) { unroll<Vectors>([&](auto v) { out.acc[r][v] = acc[r][v]; }); });
  return out;
}

/// `Rows` positions by `Vectors` vectors of consecutive channels of a depthwise convolution
/// (one input channel per output channel): tap by tap, each input vector times its channels'
/// weights, `w[v * w_step + tap * width + lane]`; the last vector loads `last` lanes where
/// `Partial`, else all.
template <int Rows, int Vectors, bool Partial, class T>
inline tile<Rows, Vectors> depthwise_tile(const input_walk<T>& x, const taps& t, std::int64_t kernel_w, int last, const float* w,
                                          std::int64_t w_step) noexcept {
  vec acc[Rows][Vectors];
  unroll<Rows>([&](auto r) { unroll<Vectors>([&](auto v) { acc[r][v] = simd::zero(); }); });
  for (std::int64_t kh = t.kh0; kh < t.kh1; ++kh)
    for (std::int64_t kw = t.kw0; kw < t.kw1; ++kw) {
      const float* wt = w + (kh * kernel_w + kw) * width;
      // Rows in threes from two bases, `base + k * step` for k < 3: an address mode each
      // (scaled index), with no register per row.
      const T* xt[2] = {x.at(kh, kw, 0), Rows > 3 ? x.at(kh, kw, 3) : nullptr};
      vec wv[Vectors];
      unroll<Vectors>([&](auto v) { wv[v] = simd::load(wt + v * w_step); });
      unroll<Rows>([&](auto r) {
        unroll<Vectors>([&](auto v) {
          const T* at = xt[r / 3] + r % 3 * x.step + v * width;
          acc[r][v] = simd::madd(Partial && v + 1 == Vectors ? simd::load_widened(at, last) : simd::load_widened(at, width), wv[v], acc[r][v]);
        });
      });
    }
  tile<Rows, Vectors> out;
  unroll<Rows>([&](auto r) { unroll<Vectors>([&](auto v) { out.acc[r][v] = acc[r][v]; }); });
  return out;
}

/// `depthwise_tile`'s sums, with its bits, for `Rows` positions along an input row, `Stride`
/// taps apart, that each take `Taps` consecutive kernel columns from `t.kw0`: kernel row by
/// kernel row, each input vector is loaded once and multiplied into every position whose
/// window holds it (a position's taps in the same order as `depthwise_tile`'s). A 6x4 tile of
/// a 3x3 kernel at stride 1 loads 11 vectors per 18 multiply-adds of each channel vector,
/// where `depthwise_tile` loads one per multiply-add: its tile, bound by loads, ran at about a
/// third of the core's peak with the input in L1. The walk along the row is a pointer bumped
/// by a pixel per vector; from the tile's base, the addresses took the general-purpose
/// registers and the compiler spilled them.
template <int Rows, int Vectors, int Taps, int Stride, class T>
inline tile<Rows, Vectors> depthwise_row_tile(const input_walk<T>& x, const taps& t, std::int64_t kernel_w, const float* w,
                                              std::int64_t w_step) noexcept {
  constexpr int columns = (Rows - 1) * Stride + Taps;
  vec acc[Rows][Vectors];
  unroll<Rows>([&](auto r) { unroll<Vectors>([&](auto v) { acc[r][v] = simd::zero(); }); });
  for (std::int64_t kh = t.kh0; kh < t.kh1; ++kh) {
    const T* xr = x.at(kh, t.kw0, 0);
    const float* wr = w + (kh * kernel_w + t.kw0) * width;
    unroll<Vectors>([&](auto v) __attribute__((always_inline)) {
      vec wv[Taps];
      unroll<Taps>([&](auto j) { wv[j] = simd::load(wr + j * width + v * w_step); });
      const T* at = xr + v * width;
      unroll<columns>([&](auto c) __attribute__((always_inline)) {
        const vec xv = simd::load_widened(at, width);
        at += x.pixel;
        unroll<Rows>([&](auto r) {
          constexpr int j = c - r * Stride;
          if constexpr (j >= 0 && j < Taps) acc[r][v] = simd::madd(xv, wv[j], acc[r][v]);
        });
      });
    });
  }
  tile<Rows, Vectors> out;
  unroll<Rows>([&](auto r) { unroll<Vectors>([&](auto v) { out.acc[r][v] = acc[r][v]; }); });
  return out;
}

/// `f(std::integral_constant<int, Taps>{}, std::integral_constant<int, Stride>{})` where the
/// positions that `x` walks can take `depthwise_row_tile`: 3 kernel columns at stride 1, or 5
/// at stride 1 or 2 (MobileNetV2's and EfficientNet-B0's interior depthwise rows, but for
/// their 3x3 at stride 2). Whether it called `f`. Each combination is a tile of its own in
/// every instruction set; all 16 of 1 to 5 columns at stride 1 or 2 made the kernels'
/// translation unit compile in 103 s against 80 s, these three in 86 s, and 3x3 at stride 2
/// ran only 1.02 times faster.
template <class T, class F>
inline bool with_row_taps(const input_walk<T>& x, const taps& t, F&& f) {
  const std::int64_t n = t.kw1 - t.kw0;
  if (x.step == x.pixel && n == 3) return f(std::integral_constant<int, 3>{}, std::integral_constant<int, 1>{}), true;
  if (x.step == x.pixel && n == 5) return f(std::integral_constant<int, 5>{}, std::integral_constant<int, 1>{}), true;
  if (x.step == 2 * x.pixel && n == 5) return f(std::integral_constant<int, 5>{}, std::integral_constant<int, 2>{}), true;
  return false;
}

/// One output position of a gather tile: its input at its first tap, and the weights of that tap.
template <class T>
struct lone_position {
  const T* x;
  const float* w;
  std::int64_t p;  ///< the position
};

/// Positions left alone by the runs (an image's corners, whose kernel rows and columns both
/// differ from their neighbours'), up to `gather_rows` at a time, for a panel of one vector:
/// each has windows of `nh` kernel rows by `nw` columns, but from its own first tap. They share
/// no weights; their independent sums keep the multiply-adds in flight, where one position
/// alone waits on each one's latency. A wider panel's position has a sum per vector, and stays
/// alone.
constexpr int gather_rows = 4;

/// `gather_rows` positions `at[r]` by one vector, each summed in `dense_tile`'s order (kernel
/// row, kernel column, input channel), so with its bits: tap `(i, j)` of position `r` reads
/// `at[r].x + i * row + j * pixel` and the weights `at[r].w + (i * kernel_w + j) * k * width`.
/// Fewer positions repeat the first.
template <class T>
inline tile<gather_rows, 1> gather_tile(const lone_position<T>* at, std::int64_t nh, std::int64_t nw, std::int64_t row,
                                        std::int64_t pixel, std::int64_t kernel_w, std::int64_t k) noexcept {
  vec acc[gather_rows];
  unroll<gather_rows>([&](auto r) { acc[r] = simd::zero(); });
  for (std::int64_t i = 0; i < nh; ++i)
    for (std::int64_t j = 0; j < nw; ++j) {
      const std::int64_t xo = i * row + j * pixel, wo = (i * kernel_w + j) * k * width;
      for (std::int64_t ci = 0; ci < k; ++ci)
        unroll<gather_rows>([&](auto r) {
          acc[r] = simd::madd(simd::splat(static_cast<float>(at[r].x[xo + ci])), simd::load(at[r].w + wo + ci * width), acc[r]);
        });
    }
  tile<gather_rows, 1> out;
  unroll<gather_rows>([&](auto r) { out.acc[r][0] = acc[r]; });
  return out;
}

/// `Rows` positions by one vector of whole groups, `Chunk` groups of `width / Chunk` channels
/// in and out, read from a window whose cells hold a pixel's channels of the vector's groups
/// transposed, channel `j` of each group side by side (`transpose<Chunk, width / Chunk>`): tap
/// by tap, for each input channel `j`, the `Chunk` values of the groups' channel `j` repeated
/// over the vector by one broadcast load, times the packed weights `w[(tap * (width / Chunk) +
/// j)][lane]`, where lane `o * Chunk + g` is output channel `o` of group `g`. So no lane idles
/// and no multiply-add waits on a shuffle, as a dense panel's tile; the sums come out in the
/// same transposed order and are put back in channel order once per tile. Position `r` reads
/// `Step` floats after position `r - 1` (`x.step` when `Step` is 0): a constant step makes
/// each broadcast a fixed offset from one register.
/// Flattened: g++ 12 left each channel's step of the unrolled loop as a call, with the
/// accumulators in memory, and 4- and 8-channel groups ran 2 to 2.3 times slower.
template <int Chunk, int Rows, std::int64_t Step>
[[gnu::flatten]] inline tile<Rows, 1> lanes_tile(const input_walk<float>& x, const taps& t, std::int64_t kernel_w,
                                                  const float* w) noexcept {
  constexpr int group = width / Chunk;  // input channels per group
  const std::int64_t step = Step > 0 ? Step : x.step;
  vec acc[Rows];
  unroll<Rows>([&](auto r) { acc[r] = simd::zero(); });
  for (std::int64_t kh = t.kh0; kh < t.kh1; ++kh)
    for (std::int64_t kw = t.kw0; kw < t.kw1; ++kw) {
      const float* wt = w + (kh * kernel_w + kw) * group * width;
      const float* xt = x.at(kh, kw, 0);
      unroll<group>([&](auto j) {
        const vec wv = simd::load(wt + j * width);
        unroll<Rows>([&](auto r) { acc[r] = simd::madd(simd::broadcast<Chunk>(xt + r * step + j * Chunk), wv, acc[r]); });
      });
    }
  tile<Rows, 1> out;
  unroll<Rows>([&](auto r) { out.acc[r][0] = simd::transpose<group, Chunk>(acc[r]); });
  return out;
}

}  // namespace detail

/// A convolution with its weights packed for `kernels::simd`, computed in independent work
/// items (see `work_items`) that any threads may run in any order.
///
/// Construction packs the weights (`O(weights)`); `run` reads NHWC `T` input and writes NHWC
/// `T` output. The groups-in-lanes path, and the dense path on f16 input, copy the input an
/// item reads into a per-thread buffer, which grows to the largest item and is then reused.
///
/// \tparam T  the element type of the input and output: `float` or `ipu::f16`
template <class T>
class packed_conv {
 public:
  /// No weights and no work items: `run` does nothing.
  packed_conv() = default;

  /// Packs `kernel` (HWIO, `[kernel.h][kernel.w][in_channels / groups][out_channels]`, f32).
  /// Throws `std::invalid_argument` for a shape that is not a convolution or a kernel of the
  /// wrong size.
  packed_conv(const conv_shape& s, std::span<const float> kernel) { assign(s, kernel); }

  /// Packs the kernel whose weight at tap `tap` (`kh * kernel.w + kw`), input channel `ci` of
  /// its group and output channel `co` is `kernel(tap, ci, co)`, read once each, without a
  /// copy of the kernel in HWIO (e.g. a kernel flipped and transposed, or rounded). Throws
  /// `std::invalid_argument` for a shape that is not a convolution.
  template <class Kernel>
    requires std::is_invocable_r_v<float, const Kernel&, std::int64_t, std::int64_t, std::int64_t>
  packed_conv(const conv_shape& s, const Kernel& kernel) {
    assign(s, kernel);
  }

  /// `for_each(count, work)` as `assign` takes it: `work(i)` for each `i < count` in order, on
  /// the calling thread.
  struct in_order {
    /// Calls `work(i)` for `i` from 0 to `count - 1`.
    template <class F>
    void operator()(std::int64_t count, F&& work) const {
      for (std::int64_t i = 0; i < count; ++i) work(i);
    }
  };

  /// Packs `kernel` for shape `s`, as the constructor of the same arguments does, into the
  /// storage of the weights packed before: no allocation where they fit, as for a kernel
  /// packed again after each training step. Each panel of output channels is packed by one
  /// call `work(i)` of `for_each(count, work)`, which calls it for each `i < count` in any
  /// order and on any threads and returns when all have returned (a thread team's parallel
  /// loop; by default in order on the calling thread). Throws as the constructor does, and
  /// then holds no weights.
  template <class ForEach = in_order>
  void assign(const conv_shape& s, std::span<const float> kernel, ForEach&& for_each = {}) {
    reset();
    validate(s, kernel.size());
    const std::int64_t cin_g = s.in_channels / s.groups, out = s.out_channels;
    pack(
        s, [&](std::int64_t tap, std::int64_t ci, std::int64_t co) { return kernel[static_cast<std::size_t>((tap * cin_g + ci) * out + co)]; },
        for_each);
  }
  /// \copydoc assign
  template <class Kernel, class ForEach = in_order>
    requires std::is_invocable_r_v<float, const Kernel&, std::int64_t, std::int64_t, std::int64_t>
  void assign(const conv_shape& s, const Kernel& kernel, ForEach&& for_each = {}) {
    reset();
    validate(s, static_cast<std::size_t>(s.kernel.area() * (s.in_channels / std::max<std::int64_t>(1, s.groups)) * s.out_channels));
    pack(s, kernel, for_each);
  }

  /// The shape the weights were packed for.
  const conv_shape& shape() const noexcept { return shape_; }
  /// The number of independent pieces of work: panels of output channels (or a few consecutive
  /// ones) by runs of positions; for a depthwise convolution, runs of whole output rows with
  /// all their channels.
  std::int64_t work_items() const noexcept { return panel_groups_ * chunks_; }

  /// Computes work item `item` (`0 <= item < work_items()`): `in` is the whole input
  /// `[batch][in_height][in_width][in_channels]`, `out` the whole output.
  void run(const T* in, T* out, const epilogue<T>& e, std::int64_t item) const noexcept;
  /// Computes the whole convolution on the calling thread.
  void run(const T* in, T* out, const epilogue<T>& e) const noexcept {
    for (std::int64_t i = 0; i < work_items(); ++i) run(in, out, e, i);
  }

 private:
  /// A panel: output channels `[first, first + channels)`, reading input channels from
  /// `in_first`, weights at `weights_[offset]`.
  struct panel {
    std::int64_t first, channels, in_first, offset;
  };
  /// A run of positions `p + i * ps` (`i < n`) that share their taps `t`, the first reading
  /// from `walk` (as `for_each_run` gives it).
  struct position_run {
    detail::input_walk<T> walk;
    detail::taps t;
    std::int64_t p, n, ps;
  };

  /// Back to a convolution without panels, keeping the storage of the weights (and their
  /// values, each of which the next packing writes) and of the panels.
  void reset() noexcept {
    aligned_vector<float> weights = std::move(weights_);
    std::vector<panel> panels = std::move(panels_);
    *this = packed_conv();
    panels.clear();
    weights_ = std::move(weights), panels_ = std::move(panels);
  }

  static void validate(const conv_shape& s, std::size_t kernel_size) {
    if (s.batch < 1 || s.in_height < 1 || s.in_width < 1 || s.in_channels < 1 || s.out_channels < 1 || s.groups < 1 ||
        s.kernel.h < 1 || s.kernel.w < 1 || s.stride.h < 1 || s.stride.w < 1 || s.dilation.h < 1 || s.dilation.w < 1)
      throw std::invalid_argument("ipu::kernels::packed_conv: every extent must be positive");
    if (s.in_channels % s.groups != 0 || s.out_channels % s.groups != 0)
      throw std::invalid_argument("ipu::kernels::packed_conv: groups must divide the input and output channels");
    if (!s.pad.valid_for(s.in_height, s.in_width, s.extent()))
      throw std::invalid_argument(
          "ipu::kernels::packed_conv: explicit padding must be below the kernel on each side and the padded image "
          "at least the kernel");
    if (kernel_size != static_cast<std::size_t>(s.kernel.area() * (s.in_channels / s.groups) * s.out_channels))
      throw std::invalid_argument("ipu::kernels::packed_conv: the kernel must hold kernel.h*kernel.w*in/groups*out values");
  }

  /// Packs `kernel` (as the constructors take it) for shape `s`, a panel per call of
  /// `for_each`'s (as `assign` takes it), and cuts the work items.
  template <class Kernel, class ForEach>
  void pack(const conv_shape& s, const Kernel& kernel, ForEach& for_each) {
    shape_ = s;
    geometry_ = s.geometry();
    cin_ = s.in_channels / s.groups;
    cout_ = s.out_channels / s.groups;
    // A vector of whole groups: below the width, or one group of a grouped convolution with a
    // window at stride 1, whose positions the zero-padded window puts a cell apart (at another
    // stride, or for a 1x1 window, a dense panel of one vector reads the group in place, with
    // no copy: ResNeXt's 3x3/2 on 14x14x512, 16 channels per group, ran 0.82 times as fast in
    // the window).
    const bool cells_apart = s.stride.h == 1 && s.stride.w == 1 && s.kernel.area() > 1;
    lanes_ = cin_ == cout_ && detail::width % cin_ == 0  // the width is a power of two
             && (cin_ < detail::width || (s.groups > 1 && cells_apart));
    depthwise_ = lanes_ && cin_ == 1;
    finite_ = lanes_ ? fill_panels(pack_lanes(kernel), for_each) : fill_panels(pack_dense(kernel), for_each);
    const std::int64_t per_position = 2 * s.kernel.area() * cin_ * panel_channels_;
    constexpr std::int64_t target_flops = 1 << 20;  // a few microseconds of work per item
    const std::int64_t positions = std::max<std::int64_t>(1, target_flops / per_position);
    const auto panels = static_cast<std::int64_t>(panels_.size());
    panel_groups_ = panels;
    panels_per_item_ = 1;
    constexpr std::int64_t tiles = 24;
    constexpr std::int64_t quarter = 4;  // a depthwise item's share of the others' work (below)
    // A depthwise convolution at stride 1 whose edge columns (a kernel's span less one) are at
    // least half of each output row, as a 5x5 kernel's on a 7x7 image: in place, such a row is
    // a run too short for a whole tile and a short run down each edge column, all tiles of a
    // few positions. `run_depthwise_window` computes the rows from a zero-padded window in
    // whole tiles instead, with every tap: EfficientNet-B0's 7x7x1152 5x5 ran 1.13 to 1.31
    // times faster on 2 threads (`bench_conv_shapes`; 1.35 to 1.6 alternating in one
    // process). Where the edges are less of the row it gains nothing, or loses (one process,
    // 2 threads: 7x7x960 3x3, 1.0 to 1.2; 14x14x672 5x5, 1.0 to 1.1; 14x14x576 3x3, 0.77),
    // the copy and the positions on the padding costing what the whole tiles save. With a
    // non-finite weight, `0 * w` on the padding would be NaN: in place.
    const bool edge_rows = s.stride.h == 1 && s.stride.w == 1 && 2 * (geometry_.span_w() - 1) >= s.out_width();
    if (depthwise_ && finite_ && edge_rows) {  // items of whole output rows of one image, by a tile's vectors
      depthwise_window_ = true;
      panels_per_item_ = std::min<std::int64_t>(panels, detail::depthwise_vectors);
      panel_groups_ = (panels + panels_per_item_ - 1) / panels_per_item_;
      cut_rows(std::max<std::int64_t>(1, positions / panels_per_item_ / quarter));
    } else if (depthwise_) {  // items of whole output rows, every channel
      // A quarter of the others' work: nothing is copied per item, so a smaller item costs
      // little, and a small layer (7x7x960, 3.4 MFLOP) still makes items for every thread.
      // MobileNetV2's depthwise layers on 2 threads ran 1.1 to 1.4 times faster than with
      // whole-size items (`bench_conv_shapes`). Rounded up to whole bands of
      // `depthwise_rows` output rows, so that each edge column of an item fills whole tiles
      // as its interior rows do: with items of one or two rows, an edge column was a tile of
      // one or two positions, and the depthwise layers of MobileNetV2 and EfficientNet-B0 ran
      // 0.95 to 1.3 times as fast on 2 threads (most 1.02 to 1.13). An output of at most two
      // bands' rows is cut into whole images instead, not into bands that straddle images
      // (7x7x960 3x3 at batch 4: four items of 7 rows, not five of 6 over its 28 rows; the runs
      // of positions that share their taps break at each image's first and last rows). On 2
      // threads 7x7x960 3x3 ran 1.12 to 1.33 times faster, 7x7x1152 3x3 1.12 to 1.44, and the
      // stride-2 layers onto 7x7 (14x14x576 3x3, 14x14x672 5x5) as before (`bench_conv_shapes`,
      // three alternating runs, medians of 5).
      panel_groups_ = 1;
      const std::int64_t item_positions = std::max<std::int64_t>(1, positions / panels / quarter);
      const std::int64_t item_rows = (item_positions + s.out_width() - 1) / s.out_width();
      constexpr std::int64_t band = detail::depthwise_rows;
      const std::int64_t rows_per_cut = s.out_height() <= 2 * band ? s.out_height() : band;
      chunk_ = std::min(s.positions(), (item_rows + rows_per_cut - 1) / rows_per_cut * rows_per_cut * s.out_width());
      chunks_ = (s.positions() + chunk_ - 1) / chunk_;
    } else if (lanes_) {  // items of whole output rows of one image, by up to four consecutive panels
      // An input pixel's channels of consecutive panels lie side by side: copied into the
      // window together, four cache lines at a time, rather than one line of each pixel per
      // item (a depthwise convolution's reads were a cache miss per pixel).
      constexpr std::int64_t max_panels_per_item = 4;
      panel_groups_ = (panels + max_panels_per_item - 1) / max_panels_per_item;
      panels_per_item_ = (panels + panel_groups_ - 1) / panel_groups_;
      cut_rows(std::max<std::int64_t>(1, positions / panels_per_item_));
    } else {  // items of a multiple of every tile's rows
      // A kernel no larger than the L1 data cache (a 1x1 from a few channels) computes every
      // panel in each item: the item's input, read once from memory, is then read again from
      // L1 by the other panels, and the whole kernel stays in L1 as the items go by.
      // MobileNetV2's 1x1 convolutions from 16 to 32 channels ran 1.05 to 1.1 times faster on
      // one thread. A 1x1 kernel of up to half the L2 computes every panel too, over as many
      // positions as one panel would: each panel's pass reads the item's input from L2, not
      // from memory again, and the kernel stays in L2 beside the input and output that stream
      // through. On 2 threads, ResNet's 1x1 convolutions on 56x56 and 28x28 ran 1.05 to 1.17
      // times faster, EfficientNet-B0's 28x28x40->240 1.12 to 1.26; a 2 MiB kernel on a 2 MiB
      // L2 (14x14x512->1024) ran 0.92 times as fast. At stride 2 as well: ResNeXt's
      // 56x56x256->512 and ->256 ran 1.14 and 1.16 times faster on 2 threads (one process,
      // alternating; 28x28x256->512 1.06). The items are made smaller where they would be
      // fewer than `min_work_items`: 3 items of 7x7x160->960 ran 0.85 times as fast. A larger
      // kernel keeps one panel per item, so that the panel, not the input, stays in cache; on
      // f16 input, a 1x1 kernel's items take as many panels as half the L2 holds, since each
      // item widens its input once for all its panels (`dense_source`). ResNeXt's 1x1
      // convolutions in f16 ran 1.04 to 1.08 times faster at stride 1 and 1.14 to 1.19 at
      // stride 2 (one process, alternating, 2 threads), 7x7x2048->1024 (one panel) as before.
      std::int64_t item_positions = positions;
      const auto kernel_bytes = static_cast<std::int64_t>(weights_.size() * sizeof(float));
      if (kernel_bytes <= detail::l1_data_bytes) {
        panel_groups_ = 1;
        panels_per_item_ = panels;
        item_positions = std::max<std::int64_t>(1, positions / panels);
      } else if (s.kernel.area() == 1 && kernel_bytes <= detail::l2_bytes() / 2) {
        panel_groups_ = 1;
        panels_per_item_ = panels;
        item_positions = std::clamp<std::int64_t>(s.positions() / min_work_items, 1, positions);
      } else if (std::same_as<T, f16> && s.kernel.area() == 1) {
        panels_per_item_ = std::clamp<std::int64_t>(detail::l2_bytes() / 2 / (kernel_bytes / panels), 1, panels);
        panel_groups_ = (panels + panels_per_item_ - 1) / panels_per_item_;
      }
      if (geometry_.one_to_one()) {
        // As many items as `item_positions` asks for, the positions' granules of `tiles` (whole
        // tiles of every panel's shape) spread evenly over them (`positions_of`), so that no
        // item is much larger than the others. Rounded up to whole granules instead,
        // 14x14x64->384 and 14x14x80->480 at batch 4 (784 positions, 98 per item) made 7 items
        // of 120, of which one thread took 4, and on 2 threads ran at 172 to 193 GFLOP/s
        // against 198 to 209 with 8 (`bench_conv_shapes`, four alternating runs).
        chunk_ = tiles;
        chunks_ = std::min((s.positions() + item_positions - 1) / item_positions, (s.positions() + tiles - 1) / tiles);
      } else {
        // A window with edges: items of whole output rows of one image, so that the runs
        // are whole rows and each edge column goes down the item's rows as one run. Items of
        // a multiple of the tiles' rows cut rows anywhere, and left the edge positions of
        // their partial rows to tiles of one: with them and without gathered positions,
        // ResNeXt's grouped 3x3 convolutions on 14x14 and 7x7 (16 and 32 channels per group)
        // ran 1.2 times slower on 2 threads (`bench_conv_shapes`). A kernel wider than one
        // pixel takes at least as many rows as a tile holds positions, so that its edge
        // columns are whole tiles too: with an item per output row, as ResNet's 3x3 layers
        // had, each edge position was a tile of one, and 56x56x64, 28x28x128, 14x14x256 and
        // 7x7x512 ran 1.06, 1.12, 1.10 and 1.35 times slower on 2 threads (one process,
        // alternating; the 7x7/2 stem 1.04, the 3x3/2 layers 1.07).
        row_items_ = true;
        const auto vectors = static_cast<int>(panel_channels_ / detail::width);
        cut_rows(s.kernel.area() > 1 ? std::max(item_positions, detail::dense_rows(vectors) * s.out_width()) : item_positions);
      }
    }
  }

  /// The output positions `[p0, p1)` of item `item` of a panel group: the granules of `chunk_`
  /// positions spread evenly over the `chunks_` items.
  std::pair<std::int64_t, std::int64_t> positions_of(std::int64_t item) const noexcept {
    const std::int64_t granules = (shape_.positions() + chunk_ - 1) / chunk_, i = item % chunks_;
    return {i * granules / chunks_ * chunk_, std::min(shape_.positions(), (i + 1) * granules / chunks_ * chunk_)};
  }

  /// Items of whole output rows of one image, about `item_positions` positions each.
  void cut_rows(std::int64_t item_positions) {
    rows_per_item_ = std::min(shape_.out_height(), (item_positions + shape_.out_width() - 1) / shape_.out_width());
    chunks_ = shape_.batch * ((shape_.out_height() + rows_per_item_ - 1) / rows_per_item_);
  }

  /// The image and output rows `[oh0, oh1)` of item `item` (items cut by `cut_rows`).
  struct item_rows {
    std::int64_t image, oh0, oh1;
  };
  item_rows rows_of(std::int64_t item) const noexcept {
    const std::int64_t per_image = chunks_ / shape_.batch, chunk = item % chunks_;
    const std::int64_t oh0 = chunk % per_image * rows_per_item_;
    return {chunk / per_image, oh0, std::min(shape_.out_height(), oh0 + rows_per_item_)};
  }

  /// Fills each panel by `fill(panel, its first weight)`, a panel per call of `for_each`'s (as
  /// `assign` takes it), every weight of it written; returns whether all the weights, the
  /// zeros beside the kernel's included, are finite.
  template <class Fill, class ForEach>
  bool fill_panels(const Fill& fill, ForEach& for_each) {
    const auto count = static_cast<std::int64_t>(panels_.size());
    std::vector<unsigned char> finite(static_cast<std::size_t>(count));
    for_each(count, [&](std::int64_t k) {
      const auto i = static_cast<std::size_t>(k);
      float* first = weights_.data() + panels_[i].offset;
      float* last = i + 1 < panels_.size() ? weights_.data() + panels_[i + 1].offset : weights_.data() + weights_.size();
      fill(panels_[i], first);
      finite[i] = std::all_of(first, last, [](float x) { return std::isfinite(x); });
    });
    return std::all_of(finite.begin(), finite.end(), [](unsigned char f) { return f != 0; });
  }

  /// Dense panels: `[tap][ci][panel lane]`, lanes past the panel's channels zero. Lays out the
  /// panels and returns how to fill one (`fill_panels`).
  template <class Kernel>
  auto pack_dense(const Kernel& kernel) {
    const std::int64_t taps = shape_.kernel.area();
    const std::int64_t vectors = std::min<std::int64_t>(detail::max_panel_vectors, (cout_ + detail::width - 1) / detail::width);
    panel_channels_ = vectors * detail::width;
    const auto width_of = [](const panel& pn) {
      return std::min<std::int64_t>(detail::max_panel_vectors, (pn.channels + detail::width - 1) / detail::width) * detail::width;
    };
    std::int64_t size = 0;
    for (std::int64_t g = 0; g < shape_.groups; ++g)
      for (std::int64_t c = 0; c < cout_; c += panel_channels_) {
        panels_.push_back({g * cout_ + c, std::min(panel_channels_, cout_ - c), g * cin_, size});
        size += taps * cin_ * width_of(panels_.back());
      }
    weights_.resize(static_cast<std::size_t>(size));
    return [this, taps, width_of, &kernel](const panel& pn, float* to) {
      const std::int64_t width = width_of(pn);
      // By bands of `band` input channels, each output channel's band in turn: `kernel` read
      // along its input channels (a flipped kernel's rows, `input_gradient`'s) or along its
      // output channels (HWIO's) stays in L1 either way, a band's lines of the other axis
      // reused from there.
      constexpr std::int64_t band = 16;
      for (std::int64_t tap = 0; tap < taps; ++tap)
        for (std::int64_t ci0 = 0; ci0 < cin_; ci0 += band) {
          const std::int64_t ci1 = std::min(cin_, ci0 + band);
          for (std::int64_t co = 0; co < pn.channels; ++co)
            for (std::int64_t ci = ci0; ci < ci1; ++ci) to[(tap * cin_ + ci) * width + co] = kernel(tap, ci, pn.first + co);
          for (std::int64_t ci = ci0; ci < ci1; ++ci)
            std::fill(to + (tap * cin_ + ci) * width + pn.channels, to + (tap * cin_ + ci + 1) * width, 0.0f);
        }
    };
  }

  /// Groups in lanes: one panel per vector of whole groups, `[tap][j][lane]`, lane `o * chunk +
  /// g` for output channel `o` of the vector's group `g` (`lanes_tile`'s order). Lays out the
  /// panels and returns how to fill one (`fill_panels`).
  template <class Kernel>
  auto pack_lanes(const Kernel& kernel) {
    const std::int64_t taps = shape_.kernel.area(), chunk = detail::width / cin_;  // groups per vector
    panel_channels_ = detail::width;
    for (std::int64_t c = 0; c < shape_.out_channels; c += detail::width)
      panels_.push_back({c, std::min<std::int64_t>(detail::width, shape_.out_channels - c), c, c / detail::width * taps * cin_ * detail::width});
    weights_.resize(panels_.size() * static_cast<std::size_t>(taps * cin_ * detail::width));
    return [this, taps, chunk, &kernel](const panel& pn, float* to) {
      for (std::int64_t tap = 0; tap < taps; ++tap)
        for (std::int64_t j = 0; j < cin_; ++j)
          for (std::int64_t lane = 0; lane < detail::width; ++lane) {
            const std::int64_t co = lane % chunk * cin_ + lane / chunk;
            to[(tap * cin_ + j) * detail::width + lane] = co < pn.channels ? kernel(tap, j, pn.first + co) : 0.0f;
          }
    };
  }

  /// Where the input of a run of work is read: pixel `q` (`(image * in_height + ih) *
  /// in_width + iw`), channel `c` at `data[(q - first_pixel) * pixel + offset + c]`.
  template <class In>
  struct source {
    const In* data;
    std::int64_t first_pixel, pixel, offset;
  };

  /// Calls `tile(walk, taps, first_position, count, position_step)` for runs of output
  /// positions `[p0, p1)` that share their taps, `count` positions `position_step` apart:
  /// whole interior runs of an output row (step 1); the edge columns of the whole rows, each
  /// column down the rows of one image whose kernel rows are alike (step one output row), so
  /// that edges fill tiles as interiors do; the edge positions of partial rows one by one. For
  /// a 1x1 convolution at stride 1 without padding, where position `p` reads pixel `p`, the
  /// whole range at once. `walk` starts at tap (0, 0) of the run's first position and steps
  /// to the next position of the run.
  template <class In, class F>
  void for_each_run(const source<In>& in, std::int64_t p0, std::int64_t p1, F&& tile) const {
    const window_geometry& g = geometry_;
    const std::int64_t c = in.pixel, row = g.in_width * c, ow_n = g.out_width;
    if (g.one_to_one()) {
      if (p0 < p1) tile(detail::input_walk<In>{in.data, (p0 - in.first_pixel) * c + in.offset, c, row, c}, detail::taps{0, 1, 0, 1}, p0, p1 - p0, 1);
      return;
    }
    const std::int64_t per_image = g.positions_per_image();
    // Columns whose every kernel column is inside the image: [lo, hi).
    const std::int64_t lo = std::min(ow_n, (g.pad_left + g.stride_w - 1) / g.stride_w);
    const std::int64_t last = g.in_width - g.span_w() + g.pad_left;  // rightmost start inside, times stride
    const std::int64_t hi = last < 0 ? lo : std::max(lo, std::min(ow_n, last / g.stride_w + 1));
    // Tap (0, 0) of output position (image, oh, ow), stepping by `step` input elements.
    const auto walk = [&](std::int64_t image, std::int64_t oh, std::int64_t ow, std::int64_t step) {
      const std::int64_t ih = oh * g.stride_h - g.pad_top, iw = ow * g.stride_w - g.pad_left;
      return detail::input_walk<In>{in.data, ((image * g.in_height + ih) * g.in_width + iw - in.first_pixel) * c + in.offset,
                                    step, row * g.dilation_h, c * g.dilation_w};
    };
    const auto row_taps = [&](std::int64_t oh) {
      const auto [kh0, kh1] = g.rows_inside(oh * g.stride_h - g.pad_top);
      return detail::taps{kh0, kh1, 0, g.kernel_w};
    };
    for (std::int64_t p = p0; p < p1;) {
      const std::int64_t image = p / per_image, oh = p % per_image / ow_n, ow = p % ow_n;
      const detail::taps rows = row_taps(oh);
      if (ow == 0 && p + ow_n <= p1) {
        // Whole rows from `oh` down, in this image, with the kernel rows of this one.
        const auto alike = [&](std::int64_t r) {
          const detail::taps t = row_taps(r);
          return t.kh0 == rows.kh0 && t.kh1 == rows.kh1;
        };
        std::int64_t count = 1;
        while (oh + count < g.out_height && p + (count + 1) * ow_n <= p1 && alike(oh + count)) ++count;
        for (std::int64_t r = 0; r < count && hi > lo; ++r)
          tile(walk(image, oh + r, lo, g.stride_w * c), rows, p + r * ow_n + lo, hi - lo, 1);
        const auto edge = [&](std::int64_t col) {
          const auto [kw0, kw1] = g.columns_inside(col * g.stride_w - g.pad_left);
          tile(walk(image, oh, col, g.stride_h * row), detail::taps{rows.kh0, rows.kh1, kw0, kw1}, p + col, count, ow_n);
        };
        for (std::int64_t col = 0; col < lo; ++col) edge(col);
        for (std::int64_t col = hi; col < ow_n; ++col) edge(col);
        p += count * ow_n;
        continue;
      }
      for (const std::int64_t row_end = std::min(p1, p - ow + ow_n); p < row_end;) {
        const std::int64_t col = p % ow_n;
        if (col >= lo && col < hi) {
          const std::int64_t run = std::min(row_end - p, hi - col);
          tile(walk(image, oh, col, g.stride_w * c), rows, p, run, 1);
          p += run;
        } else {
          const auto [kw0, kw1] = g.columns_inside(col * g.stride_w - g.pad_left);
          tile(walk(image, oh, col, g.stride_w * c), detail::taps{rows.kh0, rows.kh1, kw0, kw1}, p, 1, 1);
          ++p;
        }
      }
    }
  }

  template <int Vectors>
  void dense_runs(const source<float>& in, T* out, const epilogue<T>& e, const panel& pn, std::int64_t p0, std::int64_t p1) const {
    constexpr int rows = detail::dense_rows(Vectors);
    const float* w = weights_.data() + pn.offset;
    const std::int64_t oc = shape_.out_channels;
    const int last = static_cast<int>(pn.channels - (Vectors - 1) * detail::width);  // lanes of the panel's last vector
    const detail::panel_epilogue<Vectors, T> pe(e, pn.first, last);
    // Positions left alone, gathered by their windows' shape, for a panel of one vector (as
    // many as a tile's rows, which its epilogue reads up to the gathered count).
    static_assert(detail::gather_rows <= rows);
    detail::lone_position<float> lone[rows]{};
    int lone_count = 0;
    std::int64_t lone_h = 0, lone_w = 0, row = 0, pixel = 0;
    const auto flush = [&] {
      if constexpr (Vectors == 1) {
        for (int r = lone_count; r < detail::gather_rows; ++r) lone[r] = lone[0];
        const auto tl = detail::gather_tile(lone, lone_h, lone_w, row, pixel, shape_.kernel.w, cin_);
        detail::finish_tile<rows>(tl.acc, pe, [&](int r) { return lone[r].p * oc; }, out, detail::first_positions{lone_count});
        lone_count = 0;
      }
    };
    // A strided 1x1 window's runs are its output rows, and a row's last positions short of a
    // whole tile are gathered with the next rows' into whole tiles: ResNet's 1x1 convolutions
    // at stride 2 have rows of 28, 14 and 7 positions, 4, 2 and 1 past the 6-row tiles of
    // their 4-vector panels, and a tile of 4 rows took 2.3 times a 6-row tile's time per
    // multiply-add (`perf`, 56x56x256->512 at stride 2, one thread).
    const bool gather_ends = shape_.kernel.area() == 1 && !geometry_.one_to_one();
    const float* end_x[rows]{};
    std::int64_t end_p[rows]{};
    int end_count = 0;
    const auto flush_ends = [&] {
      detail::with_count<rows>(end_count, [&](auto count) {
        const auto at = [&](int r) { return end_p[r] * oc; };
        if constexpr (count == rows) {
          detail::whole_tile<rows>([&] { return detail::pixels_tile<rows, Vectors>(end_x, cin_, w); }, pe, at, out);
        } else {
          detail::finish_tile<rows>(detail::pixels_tile<count, Vectors>(end_x, cin_, w).acc, pe, at, out);
        }
      });
      end_count = 0;
    };
    // Always inlined: left out of line, its tiles were calls (ResNeXt's 7x7x1024 grouped
    // convolution ran 0.91 times as fast).
    const auto run = [&](detail::input_walk<float> x, const detail::taps& t, std::int64_t p, std::int64_t n,
                         std::int64_t ps) __attribute__((always_inline)) {
      const auto at = [&](int r) { return (p + r * ps) * oc; };
      const auto finish_tile = [&](const auto& tl) { detail::finish_tile<rows>(tl.acc, pe, at, out); };
      if (const std::int64_t whole = n / rows; whole > 0) {  // a run shorter than a tile makes no call
        const auto tile_at = [&](std::int64_t i, int r) { return (p + (i * rows + r) * ps) * oc; };
        detail::whole_tiles<rows>(whole, [&](std::int64_t i) {
          detail::input_walk<float> xi = x;
          xi.base += i * rows * x.step;
          return detail::dense_tile<rows, Vectors>(xi, t, shape_.kernel.w, cin_, w);
        }, pe, tile_at, out);
        n -= whole * rows, p += whole * rows * ps, x.base += whole * rows * x.step;
      }
      if (gather_ends) {
        for (int r = 0; r < n; ++r) {
          end_x[end_count] = x.at(0, 0, r), end_p[end_count] = p + r * ps;
          if (++end_count == rows) flush_ends();
        }
        return;
      }
      if (Vectors == 1 && n == 1) {
        if (lone_count > 0 && (t.kh1 - t.kh0 != lone_h || t.kw1 - t.kw0 != lone_w)) flush();
        lone_h = t.kh1 - t.kh0, lone_w = t.kw1 - t.kw0, row = x.row, pixel = x.pixel;
        lone[lone_count++] = {x.at(t.kh0, t.kw0, 0), w + (t.kh0 * shape_.kernel.w + t.kw0) * cin_ * detail::width, p};
        if (lone_count == detail::gather_rows) flush();
        return;
      }
      detail::with_count<rows - 1>(static_cast<int>(n), [&](auto count) {
        finish_tile(detail::dense_tile<count, Vectors>(x, t, shape_.kernel.w, cin_, w));
      });
    };
    for_each_run(in, p0, p1, run);
    if (lone_count > 0) flush();
    if (end_count > 0) flush_ends();
  }

  /// Where dense panels read input channels `[c0, c1)` of the pixels that positions `[p0, p1)`
  /// read: f32 input in place; f16 input widened first, those pixels (the positions' own where
  /// position `p` reads pixel `p`, else whole rows) and channels only, into a per-thread
  /// buffer, so that the tiles broadcast f32 values. Channel `c` is at `offset + c`, as in the
  /// input, so that a panel's source is this one's with `offset` moved by its first channel.
  source<float> dense_source(const T* in, std::int64_t p0, std::int64_t p1, std::int64_t c0, std::int64_t c1) const {
    if constexpr (std::same_as<T, float>) {
      return {in, 0, shape_.in_channels, 0};
    } else {
      const bool one_to_one = geometry_.one_to_one();
      const auto [r0, r1] = geometry_.input_rows(p0, p1);
      const std::int64_t first = one_to_one ? p0 : r0 * shape_.in_width;
      const std::int64_t pixels = one_to_one ? p1 - p0 : (r1 - r0) * shape_.in_width, channels = c1 - c0;
      thread_local aligned_vector<float> widened;
      widened.resize(static_cast<std::size_t>(pixels * channels));
      const auto widen_run = [](const T* from, float* to, std::int64_t count) {
        for (std::int64_t c = 0; c < count; c += detail::width) {
          const int n = static_cast<int>(std::min<std::int64_t>(detail::width, count - c));
          simd::store(to + c, simd::load_widened(from + c, n), n);
        }
      };
      if (channels == shape_.in_channels) {  // the pixels' channels are one contiguous run
        widen_run(in + first * channels, widened.data(), pixels * channels);
      } else {
        for (std::int64_t q = 0; q < pixels; ++q)
          widen_run(in + (first + q) * shape_.in_channels + c0, widened.data() + q * channels, channels);
      }
      return {widened.data(), first, channels, -c0};
    }
  }

  /// Panel `pn` over output positions `[p0, p1)`, its input channels read from `in` (as
  /// `dense_source` gives it).
  void run_dense(const source<float>& in, T* out, const epilogue<T>& e, const panel& pn, std::int64_t p0, std::int64_t p1) const {
    const source<float> x{in.data, in.first_pixel, in.pixel, in.offset + pn.in_first};
    switch ((pn.channels + detail::width - 1) / detail::width) {
      case 1: dense_runs<1>(x, out, e, pn, p0, p1); break;
      case 2: dense_runs<2>(x, out, e, pn, p0, p1); break;
      case 3: dense_runs<3>(x, out, e, pn, p0, p1); break;
      default: if constexpr (detail::max_panel_vectors >= 4) dense_runs<4>(x, out, e, pn, p0, p1); break;
    }
  }

  /// Where a groups-in-lanes span stores: position `i` of its row `r` is output position
  /// `first + r * row_step + i * step`.
  struct run_places {
    std::int64_t first, step, row_step;
  };

  /// The zero-padded window of output rows `[oh0, oh1)` that `lanes_window` copies: its input
  /// `rows`; its `pitch`, the cells from one row's start to the next's (the image's columns
  /// after the left padding, or the cells a row's windows reach past it, whichever is more); at
  /// stride 1, the `positions` of the run across the rows, a cell apart (the depthwise window's
  /// tiles go across the rows); and its `cells`, all that the rows and the run's positions,
  /// rounded up to whole tiles of `tile`, read.
  struct padded_window {
    std::int64_t rows, pitch, positions, cells;
  };
  padded_window padded_window_of(std::int64_t oh0, std::int64_t oh1, std::int64_t tile = 1) const noexcept {
    const window_geometry& g = geometry_;
    const std::int64_t rows = (oh1 - oh0 - 1) * g.stride_h + g.span_h();
    const std::int64_t reach = (g.out_width - 1) * g.stride_w + g.span_w();  // cells a row's windows span from column -pad_left
    const std::int64_t pitch = std::max(g.pad_left + g.in_width, reach - g.pad_left);
    const std::int64_t positions = (oh1 - oh0 - 1) * pitch + g.out_width;
    const std::int64_t padded = (positions + tile - 1) / tile * tile;
    return {rows, pitch, positions,
            std::max((rows - 1) * pitch + std::max(pitch, reach), padded - 1 + (g.span_h() - 1) * pitch + g.span_w())};
  }

  /// Copies the input rows `[ih0, ih0 + rows)` of `image` that panels `[first_panel,
  /// last_panel)` read into a per-thread window, one plane of `cells` cells per `group`
  /// consecutive panels. A cell is `group` vectors, one per panel: one pixel's channels of the
  /// panel's groups, widened to f32 and transposed (`transpose<Chunk, width / Chunk>`), channel
  /// `j` of each group side by side, as `lanes_tile` reads them (one vector per cell), or, for a
  /// depthwise convolution (`Chunk` the width, no transposition), a pixel's consecutive
  /// channels as `depthwise_tile` reads them in place. Window row `r` starts at cell `r *
  /// pitch`, and column `iw` of the image is its cell `lead + iw`; every other cell, and every
  /// row outside the image, is zero. Each pixel's channels of all the panels lie side by side
  /// in the input and are copied together, several cache lines of a pixel at a time rather
  /// than one.
  template <int Chunk>
  const float* lanes_window(const T* in, std::int64_t image, std::int64_t ih0, std::int64_t rows, std::int64_t lead, std::int64_t pitch,
                            std::int64_t cells, std::int64_t first_panel, std::int64_t last_panel, std::int64_t group = 1) const {
    const std::int64_t cell = group * detail::width;
    const window_geometry& g = geometry_;
    // Everything the copy reads besides the input, read before its first store (which may
    // alias anything). The panels are consecutive: each pixel's channels of all of them are
    // one run, whole vectors but for the last panel's.
    const std::int64_t c = shape_.in_channels, panels = last_panel - first_panel, plane = cells * cell;
    const std::int64_t planes = (panels + group - 1) / group;
    const std::int64_t first = panels_[static_cast<std::size_t>(first_panel)].first;
    const int last = static_cast<int>(panels_[static_cast<std::size_t>(last_panel - 1)].channels);
    thread_local aligned_vector<float> buffer;  // (plane, cells, panel of the group, lanes)
    buffer.resize(static_cast<std::size_t>(planes * plane));
    float* const window = buffer.data();
    const auto zeros = [&](std::int64_t from, std::int64_t to) {  // cells [from, to) of every plane
      for (std::int64_t p = 0; p < planes; ++p) std::fill(window + p * plane + from * cell, window + p * plane + to * cell, 0.0f);
    };
    const auto vector_at = [&](std::int64_t p) { return p / group * plane + p % group * detail::width; };  // panel p's, in a cell
    std::int64_t written = 0;  // cells before it are written
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t ih = ih0 + r;
      if (ih < 0 || ih >= g.in_height) continue;
      const std::int64_t begin = r * pitch + lead;
      zeros(written, begin);
      const T* pixel = in + (image * g.in_height + ih) * g.in_width * c + first;
      float* to = window + begin * cell;
      for (std::int64_t iw = 0; iw < g.in_width; ++iw, pixel += c, to += cell) {
        for (std::int64_t p = 0; p + 1 < panels; ++p)
          simd::store(to + vector_at(p), simd::transpose<Chunk, detail::width / Chunk>(simd::load_widened(pixel + p * detail::width, detail::width)));
        simd::store(to + vector_at(panels - 1),
                    simd::transpose<Chunk, detail::width / Chunk>(simd::load_widened(pixel + (panels - 1) * detail::width, last)));
      }
      written = begin + g.in_width;
    }
    zeros(written, cells);
    return window;
  }

  /// Groups in lanes: `rows` rows of `n` positions that share their taps `t`, for panel `pn`,
  /// stored at `at`; `x` at the first row's first position, the next row `row_pitch` floats on.
  /// Each row goes in as few tiles of up to `lanes_rows` positions as hold it, their sizes a
  /// position apart at most (`lanes_tile<Chunk, ..., Step>`): no tile computes the window's
  /// padding between two rows, and a row of 14 splits into whole tiles rather than a tile of
  /// 12 and one of 2. One call for all the rows: a call per row of 14x14 (a tile each) made
  /// ResNeXt's 14x14x512 grouped convolution 1.05 times slower than tiles across the rows.
  template <int Chunk, std::int64_t Step>
  void lanes_span(detail::input_walk<float> x, const detail::taps& t, std::int64_t rows, std::int64_t n, std::int64_t row_pitch,
                  const run_places& at, const panel& pn, const epilogue<T>& e, T* out) const {
    constexpr int full = detail::lanes_rows;
    const float* w = weights_.data() + pn.offset;
    const std::int64_t oc = shape_.out_channels, step = at.step * oc;
    const detail::panel_epilogue<1, T> pe(e, pn.first, static_cast<int>(pn.channels));
    const std::int64_t tiles = (n + full - 1) / full;  // per row
    for (std::int64_t row = 0; row < rows; ++row, x.base += row_pitch) {
      detail::input_walk<float> y = x;
      for (std::int64_t q = 0, i = 0; i < tiles; ++i) {
        const auto count = static_cast<int>((n - q + tiles - i - 1) / (tiles - i));
        const std::int64_t first = (at.first + row * at.row_step + q * at.step) * oc;
        const auto place = [&](int r) { return first + r * step; };
        if (count == full) {
          detail::whole_tile<full>([&] { return detail::lanes_tile<Chunk, full, Step>(y, t, shape_.kernel.w, w); }, pe, place, out);
        } else {
          detail::with_count<full - 1>(count, [&](auto c) {
            detail::finish_tile<full>(detail::lanes_tile<Chunk, c, Step>(y, t, shape_.kernel.w, w).acc, pe, place, out);
          });
        }
        q += count, y.base += count * y.step;
      }
    }
  }

  /// `f(std::integral_constant<int, Chunk>{})` for this convolution's groups per vector in
  /// lanes, `width / cin_`: 1, 2, 4 or 8 (one channel per group is `run_depthwise`'s).
  template <class F>
  void with_chunk(F&& f) const {
    switch (detail::width / cin_) {
      case 1: f(std::integral_constant<int, 1>{}); break;
      case 2: f(std::integral_constant<int, 2>{}); break;
      case 4: if constexpr (detail::width > 4) f(std::integral_constant<int, 4>{}); break;
      case 8: if constexpr (detail::width > 8) f(std::integral_constant<int, 8>{}); break;
      default: break;  // none: `pack` puts groups in lanes for 2 to `width` channels dividing the width only
    }
  }

  /// A depthwise convolution over positions `[p0, p1)` (whole output rows), every channel: in
  /// bands of `depthwise_rows` output rows, so that the input rows a band reads stay in cache
  /// while every channel of them is used (a cache line is read whole, and the prefetcher's
  /// streams are used whole).
  void run_depthwise(const T* in, T* out, const epilogue<T>& e, std::int64_t p0, std::int64_t p1) const {
    const std::int64_t band = detail::depthwise_rows * shape_.out_width();
    for (std::int64_t b0 = p0; b0 < p1; b0 += band) depthwise_runs(in, out, e, b0, std::min(p1, b0 + band));
  }

  /// Positions `[p0, p1)` of a depthwise convolution: the runs of positions that share their
  /// taps are found first (a tile is a few hundred cycles, and finding its run as much again),
  /// then each group of `depthwise_vectors` vectors of consecutive channels goes over every run,
  /// so that the input rows of those channels stay in L1 from one output row to the next (all
  /// the channels of three rows do not: 56x56x144 reads 97 KB). The input is read in place, each
  /// position's channels together; edge positions skip their outside taps.
  void depthwise_runs(const T* in, T* out, const epilogue<T>& e, std::int64_t p0, std::int64_t p1) const {
    // A band's runs, without allocating. For a 3x3 kernel: a run per row, and a run per edge
    // column of each set of rows with the same kernel rows. That is 12 inside one image
    // (three sets), and 14 across two (four sets). Smaller images give more sets, and more
    // runs than the capacity go in parts.
    constexpr std::size_t capacity = 32;
    std::array<position_run, capacity> runs;
    std::size_t count = 0;
    for_each_run(source<T>{in, 0, shape_.in_channels, 0}, p0, p1,
                 [&](const detail::input_walk<T>& walk, const detail::taps& t, std::int64_t p, std::int64_t n, std::int64_t ps) {
                   runs[count++] = {walk, t, p, n, ps};
                   if (count == capacity) {
                     depthwise_channels(std::span(runs.data(), count), out, e);
                     count = 0;
                   }
                 });
    depthwise_channels(std::span(runs.data(), count), out, e);
  }

  /// Every channel of a depthwise convolution over `runs`: `depthwise_vectors` vectors of
  /// consecutive channels in each tile, one group of them over every run before the next.
  void depthwise_channels(std::span<const position_run> runs, T* out, const epilogue<T>& e) const {
    constexpr int rows = detail::depthwise_rows, vectors = detail::depthwise_vectors;
    const std::int64_t w_step = shape_.kernel.area() * detail::width, oc = shape_.out_channels;
    const auto panels = static_cast<std::int64_t>(panels_.size());
    const int last = static_cast<int>(panels_.back().channels);  // lanes of the last vector
    const std::int64_t whole = (last == detail::width ? panels : panels - 1) / vectors;  // tiles of whole vectors
    // Panels `[first, first + v_n)`, the last one `Partial`.
    const auto channels = [&]<int v_n, bool Partial>(std::int64_t first) {
      const panel& pn = panels_[static_cast<std::size_t>(first)];
      const float* w = weights_.data() + pn.offset;
      const int lanes = Partial ? last : detail::width;
      const detail::panel_epilogue<v_n, T> pe(e, pn.first, lanes);
      for (const position_run& piece : runs) {
        detail::input_walk<T> x = piece.walk;
        x.base += pn.in_first;
        std::int64_t q = piece.p, left = piece.n;
        const auto at = [&](int r) { return (q + r * piece.ps) * oc; };
        // The run's whole tiles, each computed by `compute()` from `x`: along an interior row
        // of whole vectors, by `depthwise_row_tile`. On one thread, with the same bits,
        // MobileNetV2's and EfficientNet-B0's depthwise layers ran 1.08 to 1.22 times faster
        // (14x14x576 at batch 1, in L2, 1.22; 28x28x240 5x5 1.21; 56x56x144 1.10; 56x56x144
        // 5x5/2 1.08; 14x14x576 at batch 4, bound by memory, 1.0). The ends of runs keep
        // `depthwise_tile`: with row tiles there too, 14x14x576 ran 1.1 times faster, not 1.22.
        // So do 7x7 images, whose interior rows (5 positions) are shorter than a tile.
        const auto whole_tiles = [&](auto&& compute) {
          for (; left >= rows; left -= rows, q += rows * piece.ps, x.base += rows * x.step) detail::whole_tile<rows>(compute, pe, at, out);
        };
        bool slid = false;
        if constexpr (v_n == vectors && !Partial)
          slid = detail::with_row_taps(x, piece.t, [&](auto taps, auto stride) {
            whole_tiles([&] { return detail::depthwise_row_tile<rows, v_n, taps, stride>(x, piece.t, shape_.kernel.w, w, w_step); });
          });
        if (!slid) whole_tiles([&] { return detail::depthwise_tile<rows, v_n, Partial>(x, piece.t, shape_.kernel.w, lanes, w, w_step); });
        detail::with_count<rows - 1>(static_cast<int>(left), [&](auto count) {
          detail::finish_tile<rows>(detail::depthwise_tile<count, v_n, Partial>(x, piece.t, shape_.kernel.w, lanes, w, w_step).acc, pe, at, out);
        });
      }
    };
    for (std::int64_t k = 0; k < whole; ++k) channels.template operator()<vectors, false>(k * vectors);
    detail::with_count<vectors>(static_cast<int>(panels - whole * vectors), [&](auto v_n) {
      last == detail::width ? channels.template operator()<v_n, false>(whole * vectors)
                            : channels.template operator()<v_n, true>(whole * vectors);
    });
  }

  /// A depthwise convolution at stride 1, output rows `[oh0, oh1)` of `image`, the channels of
  /// panels `[first_panel, last_panel)` (at most `depthwise_vectors`), from a zero-padded window
  /// of the rows they read, each cell a pixel's channels of the panels (`lanes_window`): as in
  /// `run_lanes`, the output rows are one run of positions a cell apart, those on the padding
  /// between two rows computed and not stored, every position takes every tap (a padding tap
  /// adds `0 * w`, which leaves the sum's bits as they were for finite weights), and the run's
  /// end is padded with zero cells to whole tiles, so that every tile is a whole one
  /// (`depthwise_row_tile` for `depthwise_vectors` whole vectors and 3 or 5 kernel columns,
  /// else `depthwise_tile`).
  void run_depthwise_window(const T* in, T* out, const epilogue<T>& e, std::int64_t first_panel, std::int64_t last_panel,
                            std::int64_t image, std::int64_t oh0, std::int64_t oh1) const {
    constexpr int rows = detail::depthwise_rows, vectors = detail::depthwise_vectors;
    constexpr std::int64_t cell = vectors * detail::width;
    const window_geometry& g = geometry_;
    const std::int64_t ow_n = g.out_width, oc = shape_.out_channels, first = (image * g.out_height + oh0) * ow_n;
    const padded_window pw = padded_window_of(oh0, oh1, rows);
    const float* const window =
        lanes_window<detail::width>(in, image, oh0 - g.pad_top, pw.rows, g.pad_left, pw.pitch, pw.cells, first_panel, last_panel, vectors);
    const std::int64_t w_step = shape_.kernel.area() * detail::width;
    const int last = static_cast<int>(panels_[static_cast<std::size_t>(last_panel - 1)].channels);  // lanes of the last vector
    const detail::taps all{0, g.kernel_h, 0, g.kernel_w};
    const auto channels = [&]<int v_n, bool Partial>() {
      const panel& pn = panels_[static_cast<std::size_t>(first_panel)];
      const float* w = weights_.data() + pn.offset;
      const detail::panel_epilogue<v_n, T> pe(e, pn.first, Partial ? last : detail::width);
      detail::input_walk<float> x{window, 0, cell, g.dilation_h * pw.pitch * cell, g.dilation_w * cell};
      std::int64_t row = 0, column = 0;  // of the next position
      for (std::int64_t q = 0; q < pw.positions; q += rows, x.base += rows * cell) {
        std::int64_t offsets[rows]{};
        detail::marked_positions stored{0};
        for (int r = 0; r < rows; ++r) {  // as `lanes_span`'s
          if (q + r < pw.positions && column < ow_n) stored.bits |= 1u << r, offsets[r] = (first + row * ow_n + column) * oc;
          if (++column == pw.pitch) column = 0, ++row;
        }
        const auto place = [&](int r) { return offsets[r]; };
        bool slid = false;
        if constexpr (v_n == vectors && !Partial)  // as `depthwise_channels`: fewer tiles to compile
          slid = detail::with_row_taps(x, all, [&](auto taps, auto stride) {
            detail::whole_tile<rows>([&] { return detail::depthwise_row_tile<rows, v_n, taps, stride>(x, all, g.kernel_w, w, w_step); },
                                     pe, place, out, stored);
          });
        if (!slid)
          detail::whole_tile<rows>([&] { return detail::depthwise_tile<rows, v_n, Partial>(x, all, g.kernel_w, last, w, w_step); }, pe,
                                   place, out, stored);
      }
    };
    detail::with_count<vectors>(static_cast<int>(last_panel - first_panel), [&](auto v_n) {
      last == detail::width ? channels.template operator()<v_n, false>() : channels.template operator()<v_n, true>();
    });
  }

  /// Groups in lanes, output rows `[oh0, oh1)` of `image`, panels `[first_panel, last_panel)`,
  /// from the input window the rows read (`lanes_window`), zero-padded, so that every position
  /// takes every tap. A padding tap then adds `0 * w`, which leaves every partial sum as it was
  /// (a sum that starts at +0 is never -0): the same bits as skipping it, for finite weights.
  /// At stride 1 the window's rows share their padding columns (the right padding of one row is
  /// the left padding of the next). Each output row goes in tiles of its own positions
  /// (`lanes_span`). With a non-finite weight `0 * w` is NaN, so such kernels copy the rows
  /// inside the image only, and their runs skip the taps outside it.
  void run_lanes(const T* in, T* out, const epilogue<T>& e, std::int64_t first_panel, std::int64_t last_panel, std::int64_t image,
                 std::int64_t oh0, std::int64_t oh1) const {
    constexpr std::int64_t cell = detail::width;
    const window_geometry& g = geometry_;
    const std::int64_t ow_n = g.out_width, first = (image * g.out_height + oh0) * ow_n;
    const auto at = [&](std::int64_t p) -> const panel& { return panels_[static_cast<std::size_t>(p)]; };
    with_chunk([&](auto chunk) {
      constexpr int Chunk = decltype(chunk)::value;
      if (!finite_) {
        const std::int64_t last = first + (oh1 - oh0) * ow_n;
        const auto [r0, r1] = g.input_rows(first, last);  // over all images' rows
        const std::int64_t cells = (r1 - r0) * g.in_width;
        const float* window =
            lanes_window<Chunk>(in, image, r0 - image * g.in_height, r1 - r0, 0, g.in_width, cells, first_panel, last_panel);
        for (std::int64_t p = first_panel; p < last_panel; ++p)
          for_each_run(source<float>{window + (p - first_panel) * cells * cell, r0 * g.in_width, cell, 0}, first, last,
                       [&](const detail::input_walk<float>& x, const detail::taps& t, std::int64_t q, std::int64_t n, std::int64_t ps) {
                         lanes_span<Chunk, 0>(x, t, 1, n, 0, {q, ps, 0}, at(p), e, out);
                       });
        return;
      }
      const padded_window pw = padded_window_of(oh0, oh1);
      const float* window =
          lanes_window<Chunk>(in, image, oh0 * g.stride_h - g.pad_top, pw.rows, g.pad_left, pw.pitch, pw.cells, first_panel, last_panel);
      const detail::taps all{0, g.kernel_h, 0, g.kernel_w};
      const run_places places{first, 1, ow_n};
      const std::int64_t row_pitch = g.stride_h * pw.pitch * cell;  // from one output row's cells to the next's
      for (std::int64_t p = first_panel; p < last_panel; ++p) {
        // Tap (0, 0) of output row `oh0`'s first position, the next position `stride_w` cells on.
        const detail::input_walk<float> x{window + (p - first_panel) * pw.cells * cell, 0, g.stride_w * cell, g.dilation_h * pw.pitch * cell,
                                          g.dilation_w * cell};
        if (g.stride_w == 1) {
          lanes_span<Chunk, cell>(x, all, oh1 - oh0, ow_n, row_pitch, places, at(p), e, out);
        } else {
          lanes_span<Chunk, 0>(x, all, oh1 - oh0, ow_n, row_pitch, places, at(p), e, out);
        }
      }
    });
  }

  conv_shape shape_{};
  window_geometry geometry_{};
  std::int64_t cin_ = 0, cout_ = 0, panel_channels_ = 0;
  // Positions per granule of the items, which `positions_of` spreads evenly over the items; output rows per
  // item (`cut_rows`); items per panel group.
  std::int64_t chunk_ = 1, rows_per_item_ = 1, chunks_ = 0;
  bool row_items_ = false;  // dense items of `rows_per_item_` output rows of one image, not granules of `chunk_` positions
  std::int64_t panel_groups_ = 0, panels_per_item_ = 1;      // consecutive panels per item (groups in lanes, padded)
  bool lanes_ = false, depthwise_ = false, finite_ = true, depthwise_window_ = false;
  std::vector<panel> panels_;
  // On a cache line, and each panel a whole number of vectors: no weight load spans two lines
  // (a split load costs two on Intel's cores).
  aligned_vector<float> weights_;
};

template <class T>
void packed_conv<T>::run(const T* in, T* out, const epilogue<T>& e, std::int64_t item) const noexcept {
  if (depthwise_ && !depthwise_window_) {
    const auto [p0, p1] = positions_of(item);
    return run_depthwise(in, out, e, p0, p1);
  }
  const std::int64_t first_panel = item / chunks_ * panels_per_item_;
  if (lanes_) {
    const item_rows r = rows_of(item);
    const std::int64_t last_panel = std::min(static_cast<std::int64_t>(panels_.size()), first_panel + panels_per_item_);
    if (depthwise_window_) return run_depthwise_window(in, out, e, first_panel, last_panel, r.image, r.oh0, r.oh1);
    return run_lanes(in, out, e, first_panel, last_panel, r.image, r.oh0, r.oh1);
  }
  auto [p0, p1] = positions_of(item);
  if (row_items_) {
    const item_rows r = rows_of(item);
    const std::int64_t first_row = r.image * shape_.out_height();
    p0 = (first_row + r.oh0) * shape_.out_width();
    p1 = (first_row + r.oh1) * shape_.out_width();
  }
  const std::int64_t last_panel = std::min(static_cast<std::int64_t>(panels_.size()), first_panel + panels_per_item_);
  // The item's panels are consecutive, so their groups' input channels are one range, which
  // f16 input widens once for all of them.
  const auto at = [&](std::int64_t k) -> const panel& { return panels_[static_cast<std::size_t>(k)]; };
  const source<float> x = dense_source(in, p0, p1, at(first_panel).in_first, at(last_panel - 1).in_first + cin_);
  for (std::int64_t k = first_panel; k < last_panel; ++k) run_dense(x, out, e, at(k), p0, p1);
}

/// Register-tile rows of `add_product_tile` (6 on AVX-512).
inline constexpr int product_tile_rows = detail::dense_rows(detail::max_panel_vectors);
/// Register-tile vectors of columns of `add_product_tile` (4 on AVX-512, 3 otherwise).
inline constexpr int product_tile_vectors = detail::max_panel_vectors;

/// `acc[r][col] += sum over k of a[k][r] * b[k][col]` for `rows` rows (at most
/// `product_tile_rows`; `lda` apart in `a`, `ldacc` apart in `acc`) and the columns of `lanes`
/// (up to `product_tile_vectors` vectors, those past the first empty one unused), `k` from 0 to
/// `count` in order: the tile of a convolution's kernel gradient (`ops::matmul_kernel`). Only
/// `float` calls it; it is a template so that its tiles, one function per shape, are compiled
/// only where a convolution trains, or once under `IPU_EXTERN_KERNELS`.
template <class Float>
void add_product_tile(std::int64_t rows, const Float* a, std::int64_t lda, const Float* b, std::int64_t ldb, std::int64_t count,
                      Float* acc, std::int64_t ldacc, const int* lanes) noexcept {
  const auto run = [&]<int Rows, int Vectors>() {
    // Only a tile's last vector of columns can be partial.
    const auto load = [&](const float* p, auto v) {
      if constexpr (v + 1 < Vectors) return simd::load(p);
      return simd::load(p, lanes[v]);
    };
    using simd::vec;
    vec sum[Rows][Vectors];  // a local that never escapes, so that it lives in registers
    detail::unroll<Rows>([&](auto r) { detail::unroll<Vectors>([&](auto v) { sum[r][v] = load(acc + r * ldacc + v * vec::width, v); }); });
#pragma GCC unroll 2  // as `add_channels`: 169-171 -> 178-188 GFLOP/s on one thread
    for (std::int64_t k = 0; k < count; ++k) {
      vec d[Vectors];
      detail::unroll<Vectors>([&](auto v) { d[v] = load(b + k * ldb + v * vec::width, v); });
      detail::unroll<Rows>([&](auto r) {
        const vec xv = simd::splat(a[k * lda + r]);
        detail::unroll<Vectors>([&](auto v) { sum[r][v] = simd::madd(xv, d[v], sum[r][v]); });
      });
    }
    detail::unroll<Rows>([&](auto r) {
      detail::unroll<Vectors>([&](auto v) { simd::store(acc + r * ldacc + v * vec::width, sum[r][v], lanes[v]); });
    });
  };
  int vectors = 0;
  while (vectors < product_tile_vectors && lanes[vectors] > 0) ++vectors;
  detail::with_count<product_tile_rows>(static_cast<int>(rows), [&](auto r) {
    detail::with_count<product_tile_vectors>(vectors, [&](auto v) { run.template operator()<r, v>(); });
  });
}

// With IPU_EXTERN_KERNELS defined in every translation unit of a program, the work items and
// the product tiles are compiled only in the one that includes <ipu/kernels/instantiate.hpp>
// (see there).
#ifdef IPU_EXTERN_KERNELS
extern template class packed_conv<float>;
extern template class packed_conv<f16>;
extern template void add_product_tile<float>(std::int64_t, const float*, std::int64_t, const float*, std::int64_t, std::int64_t,
                                             float*, std::int64_t, const int*) noexcept;
#endif

}  // namespace IPU_SIMD_NAMESPACE
}  // namespace ipu::kernels
