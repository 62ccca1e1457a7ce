// The tests of the fast convolution (include/ipu/kernels/packed_conv.hpp) for one instruction
// set, the one IPU_SIMD selects: conv_avx512.cpp, conv_avx2.cpp and conv_portable.cpp each
// define IPU_SIMD and include this file once, so the same cases run on every instruction set
// the target flags allow. Test names start with the instruction set.
//
// Each convolution is checked two ways:
//   - against the double-precision reference (tests/support/reference.hpp), to 1e-5 in f32
//     (more for sums of more than 256 products, see `tolerance`) and 1e-2 in f16 storage. The
//     error is relative, values smaller than a tenth of the largest expected value being
//     compared against that tenth (as tests/support/kernel_checks.hpp);
//   - against the scalar kernels (`kernels::conv` per group, then `affine`, `add`, the
//     activation), bit for bit: packed_conv promises the scalar path's bits on every
//     instruction set.
// conv_portable.cpp also compares the outputs of the three instruction sets bit for bit.
//
// The fast kernels live in an inline namespace per instruction set (`ipu::kernels::avx512`, ...),
// so everything here that calls them lives in `ipu_kernels_test::<instruction set>` too: the
// three translation units then define distinct functions, and link into one program.
#pragma once

#include <ipu/kernels/simd.hpp>

// The kernels of the target's own instruction set are those every other area's tests run:
// compiled once, with the same flags, in ipu_extern_kernels, which this area links too (the
// AVX-512 unit compiles in 7 s instead of 91, g++ 12 -O2). The other instruction sets are
// compiled here, as in a program that includes only the headers.
#if defined(IPU_EXTERN_KERNELS) && IPU_SIMD != IPU_SIMD_TARGET
#undef IPU_EXTERN_KERNELS
#endif

#include "kernels/conv_support.hpp"

#include <ipu/kernels/packed_conv.hpp>
#include <ipu/kernels/simd.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>
#include <numeric>
#include <random>
#include <span>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#if IPU_SIMD == IPU_SIMD_AVX512
#define IPU_KERNELS_TEST_ISA "avx512"
#define IPU_KERNELS_TEST_WIDTH 16
#elif IPU_SIMD == IPU_SIMD_AVX2
#define IPU_KERNELS_TEST_ISA "avx2"
#define IPU_KERNELS_TEST_WIDTH 8
#else
#define IPU_KERNELS_TEST_ISA "portable"
#define IPU_KERNELS_TEST_WIDTH 4
#endif

namespace ipu_kernels_test {

// The outputs of `packed_conv` for `s` with seeded operands (`make_problem(s, seed)`), without
// and then with every epilogue step, widened to float; in f16 storage when `half`. Defined at
// the end of this file, so once by each instruction set's translation unit; compared by
// conv_portable.cpp.
namespace portable {
std::vector<float> outputs_for(const conv_shape& s, bool half, std::uint32_t seed);
}
namespace avx2 {
std::vector<float> outputs_for(const conv_shape& s, bool half, std::uint32_t seed);
}
namespace avx512 {
std::vector<float> outputs_for(const conv_shape& s, bool half, std::uint32_t seed);
}

}  // namespace ipu_kernels_test

namespace ipu_kernels_test::IPU_SIMD_NAMESPACE {

/// `p` through `packed_conv` with the steps of `f` fused, on the calling thread.
template <class T>
std::vector<T> packed_path(const problem<T>& p, const fusion& f) {
  const ipu::kernels::packed_conv<T> conv(p.shape, p.kernel);
  std::vector<T> y(p.outputs());  // (N,OH,OW,O)
  conv.run(p.input.data(), y.data(), epilogue_of(p, f));
  return y;
}

template <class T>
constexpr const char* type_name = std::is_same_v<T, float> ? "f32" : "f16";

/// `c` with seeded operands and the steps of `f`: the fast kernels against the reference and,
/// bit for bit, against the scalar kernels.
template <class T>
void check_shape(const named_shape& c, const fusion& f, std::uint32_t seed = 1) {
  INFO(c.what << ": " << describe(c.shape) << ", " << describe(f) << ", " << type_name<T>);
  problem<T> p = make_problem<T>(c.shape, seed);
  if (f.relu6)
    for (float& s : p.scale) s *= 8.0f;
  const std::vector<T> y = packed_path(p, f);
  const double error = scaled_error(reference(p, f), y);
  INFO("largest scaled relative error " << error << " (tolerance " << tolerance<T>(c.shape) << ")");
  CHECK(error < tolerance<T>(c.shape));
  if (f.relu6) {
    INFO("some outputs reach ReLU6's cap");
    CHECK(std::ranges::count_if(y, [](T v) { return static_cast<float>(v) == 6.0f; }) > 0);
  }
  const bit_difference d = compare_bits<T>(y, scalar_path(p, f), c.shape.out_channels);
  INFO("against the scalar kernels: " << d.message);
  CHECK(d.count == 0);
}

TEST_CASE(IPU_KERNELS_TEST_ISA " kernels are compiled for " IPU_KERNELS_TEST_ISA) {
  namespace simd = ipu::kernels::simd;
  CHECK(simd::name_of(simd::compiled_isa) == IPU_KERNELS_TEST_ISA);
  CHECK(simd::vec::width == IPU_KERNELS_TEST_WIDTH);
}

TEST_CASE(IPU_KERNELS_TEST_ISA " packed_conv matches the reference and the scalar kernels on ResNet-50 and ResNeXt-101 shapes") {
  for (const named_shape& c : model_shapes) check_shape<float>(c, no_fusion);
}

TEST_CASE(IPU_KERNELS_TEST_ISA " packed_conv matches the reference and the scalar kernels on odd shapes") {
  for (const named_shape& c : odd_shapes) {
    check_shape<float>(c, no_fusion);
    check_shape<float>(c, full_fusion);
  }
}

TEST_CASE(IPU_KERNELS_TEST_ISA " packed_conv fused epilogues match the reference and the separate kernels") {
  // Dense panels (several, partial), groups in lanes (a partial vector of them), the scalar
  // kernels' 1x1 path, every panel in each item of a 1x1 kernel larger than L1 (and fewer
  // positions than items) and of a grouped one (f16 input widened once for every group),
  // groups with more outputs than inputs, the stem.
  static constexpr named_shape shapes[] = {
      {"3x3 20->100 on 5x7", shape(5, 7, 20, 100, 3)},
      {"1x1 100->300 on 13x11", shape(13, 11, 100, 300, 1)},
      {"1x1 100->300 on 2x1", shape(2, 1, 100, 300, 1)},
      {"1x1 96->192 4 groups on 9x7", shape(9, 7, 96, 192, 1, 1, 4)},
      {"3x3 32->32 8 groups of 4", shape(6, 7, 32, 32, 3, 1, 8)},
      {"depthwise 3x3/2 20 channels on 9x9", shape(9, 9, 20, 20, 3, 2, 20)},
      {"depthwise 3x3 40 channels on 8x9", shape(8, 9, 40, 40, 3, 1, 40)},
      {"1x1 33->33 on 7x5", shape(7, 5, 33, 33, 1)},
      {"3x3 8->12 2 groups batch 2", shape(6, 6, 8, 12, 3, 1, 2, 2)},
      {"stem 7x7/2 3->64 on 29x29", shape(29, 29, 3, 64, 7, 2)},
  };
  static constexpr fusion fusions[] = {
      {.bias = true},
      {.affine = true},
      {.residual = true},
      {.relu = true},
      {.bias = true, .relu = true},
      {.affine = true, .relu = true},                         // conv, batch norm, relu
      {.affine = true, .residual = true, .relu = true},       // the end of a bottleneck block
      {.affine = true, .relu6 = true},                        // conv, batch norm, relu6 (MobileNetV2)
      {.bias = true, .affine = true, .residual = true, .relu6 = true},
      {.affine = true, .silu = true},                         // conv, batch norm, silu (EfficientNet)
      {.bias = true, .silu = true},                           // squeeze-and-excitation's reduction
      {.bias = true, .affine = true, .residual = true},
      full_fusion,
  };
  for (const named_shape& c : shapes)
    for (const fusion& f : fusions) {
      check_shape<float>(c, f, 3);
      check_shape<ipu::f16>(c, f, 3);
    }
}

TEST_CASE(IPU_KERNELS_TEST_ISA " packed_conv matches the reference and the scalar kernels on non-square and dilated windows") {
  // Dense panels and groups in lanes (with and without the zero-padded window), SAME padding
  // (which pads for the dilated span) and explicit, strides that differ between the axes.
  using ipu::hw, ipu::explicit_padding;
  static constexpr named_shape shapes[] = {
      {"1x7 16->24 on 9x11", shape(9, 11, 16, 24, hw{1, 7})},
      {"7x1/2x1 12->20 on 13x6 batch 2", shape(13, 6, 12, 20, hw{7, 1}, hw{2, 1}, 1, 2)},
      {"3x3 dilation 2 20->33 on 9x9", with(shape(9, 9, 20, 33, 3), 2)},
      {"3x3/2 dilation 3 8->16 on 11x10", with(shape(11, 10, 8, 16, 3, 2), 3)},
      {"3x3 dilation 2 padded 2 20->20 on 7x8", with(shape(7, 8, 20, 20, 3), 2, explicit_padding(2, 2, 2, 2))},
      {"1x7 dilation 1x2 padded 0,0,6,5 8->8 on 5x12", with(shape(5, 12, 8, 8, hw{1, 7}), hw{1, 2}, explicit_padding(0, 0, 6, 5))},
      {"depthwise 3x3 dilation 2 16 channels on 9x8", with(shape(9, 8, 16, 16, 3, 1, 16), 2)},
      {"3x5/2x1 dilation 2x3 32->32 8 groups of 4 on 10x17", with(shape(10, 17, 32, 32, hw{3, 5}, hw{2, 1}, 8), hw{2, 3})},
      // Groups in lanes at stride 1, whose window's rows share their padding columns: more
      // padding on one side than the other, and none on the other.
      {"3x3 dilation 2 32->32 2 groups of 16 on 9x10", with(shape(9, 10, 32, 32, 3, 1, 2), 2)},
      {"3x3 padded 0,2,2,0 32->32 8 groups of 4 on 7x9", with(shape(7, 9, 32, 32, 3, 1, 8), 1, explicit_padding(0, 2, 2, 0))},
      {"1x5 padded 0,0,0,4 48->48 6 groups of 8 on 5x6", with(shape(5, 6, 48, 48, hw{1, 5}, 1, 6), 1, explicit_padding(0, 0, 0, 4))},
      // Output rows that split into tiles of unequal sizes (29 positions), and rows of whole
      // tiles (14 positions with AVX-512).
      {"3x3 64->64 4 groups of 16 on 5x29", shape(5, 29, 64, 64, 3, 1, 4)},
      {"3x3 32->32 4 groups of 8 on 3x14 batch 2", shape(3, 14, 32, 32, 3, 1, 4, 2)},
  };
  for (const named_shape& c : shapes) {
    check_shape<float>(c, no_fusion);
    check_shape<float>(c, full_fusion);
    check_shape<ipu::f16>(c, full_fusion);
  }
}

TEST_CASE(IPU_KERNELS_TEST_ISA " packed_conv in f16 matches the reference and the scalar kernels") {
  for (const named_shape& c : f16_shapes) {
    check_shape<ipu::f16>(c, no_fusion);
    check_shape<ipu::f16>(c, full_fusion);
  }
}

TEST_CASE(IPU_KERNELS_TEST_ISA " packed_conv with infinite weights gives the scalar kernels' bits") {
  // With a weight that is not finite, a padding tap may not be computed as a zero input (0 * inf
  // is NaN where the scalar kernels skip the tap): every group size in lanes, dense panels, the
  // 1x1 path. Infinities only, no NaN: every NaN is then the default NaN, whichever operand an
  // instruction returns.
  static constexpr named_shape shapes[] = {
      {"depthwise 3x3 20 channels on 7x7", shape(7, 7, 20, 20, 3, 1, 20)},
      {"depthwise 3x3 64 channels on 9x8", shape(9, 8, 64, 64, 3, 1, 64)},
      {"3x3/2 24->24 12 groups of 2 on 7x6", shape(7, 6, 24, 24, 3, 2, 12)},
      {"3x3 32->32 8 groups of 4", shape(6, 7, 32, 32, 3, 1, 8)},
      {"3x3 64->64 8 groups of 8 batch 2", shape(5, 5, 64, 64, 3, 1, 8, 2)},
      {"3x3 48->48 3 groups of 16", shape(5, 5, 48, 48, 3, 1, 3)},
      {"3x3/2 32->32 2 groups of 16 on 7x6", shape(7, 6, 32, 32, 3, 2, 2)},
      {"3x3 20->33 on 5x6", shape(5, 6, 20, 33, 3)},
      {"1x1 33->33 on 7x5", shape(7, 5, 33, 33, 1)},
      {"depthwise 3x1 dilation 2 8 channels on 7x5", with(shape(7, 5, 8, 8, ipu::hw{3, 1}, 1, 8), 2)},
      {"depthwise 5x5 40 channels on 7x7 (a padded window, were the weights finite)", shape(7, 7, 40, 40, 5, 1, 40)},
  };
  const auto check = [&]<class T>(const named_shape& c, std::type_identity<T>) {
    INFO(c.what << ": " << describe(c.shape) << ", " << type_name<T>);
    problem<T> p = make_problem<T>(c.shape, 17);
    // +inf at tap (0, 0) of output channel 0, -inf at the last tap of channel 1, both from the
    // group's first input channel: outputs at the top-left corner skip the first as padding.
    const std::int64_t oc = c.shape.out_channels, cin = c.shape.in_channels / c.shape.groups;
    const std::int64_t last_tap = c.shape.kernel.area() - 1;
    p.kernel[0] = std::numeric_limits<float>::infinity();
    p.kernel[static_cast<std::size_t>(last_tap * cin * oc + 1)] = -std::numeric_limits<float>::infinity();
    for (const fusion& f : {no_fusion, full_fusion}) {
      INFO(describe(f));
      const bit_difference d = compare_bits<T>(packed_path(p, f), scalar_path(p, f), oc);
      INFO(d.message);
      CHECK(d.count == 0);
    }
  };
  for (const named_shape& c : shapes) {
    check(c, std::type_identity<float>{});
    check(c, std::type_identity<ipu::f16>{});
  }
}

/// The work items of `c` write every output exactly once between them; run in reverse, in a
/// seeded shuffle and on two threads taking every other item, they give the bits of `run`
/// over every item in order.
template <class T>
void check_work_item_orders(const named_shape& c) {
  INFO(c.what << ": " << describe(c.shape) << ", " << type_name<T>);
  const problem<T> p = make_problem<T>(c.shape, 5);
  const ipu::kernels::packed_conv<T> conv(p.shape, p.kernel);
  const ipu::kernels::epilogue<T> e = epilogue_of(p, full_fusion);
  const std::int64_t items = conv.work_items();
  INFO(items << " work items");
  REQUIRE(items > 1);
  std::vector<T> whole(p.outputs(), T(0.0f));  // (N,OH,OW,O)
  conv.run(p.input.data(), whole.data(), e);

  {  // Each item alone, on a NaN fill that no output equals: which outputs it writes.
    const T unwritten = std::numeric_limits<T>::quiet_NaN();
    std::vector<int> writes(p.outputs(), 0);
    std::vector<T> y(p.outputs());
    for (std::int64_t i = 0; i < items; ++i) {
      std::fill(y.begin(), y.end(), unwritten);
      conv.run(p.input.data(), y.data(), e, i);
      for (std::size_t j = 0; j < y.size(); ++j) writes[j] += std::memcmp(&y[j], &unwritten, sizeof(T)) != 0;
    }
    const auto once = static_cast<std::size_t>(std::count(writes.begin(), writes.end(), 1));
    INFO(writes.size() - once << " outputs are written by no item or by several, e.g. output "
                              << std::find_if(writes.begin(), writes.end(), [](int w) { return w != 1; }) - writes.begin());
    CHECK(once == writes.size());
  }

  const auto check_order = [&](const char* order, auto&& run_items) {
    INFO("items " << order);
    std::vector<T> y(p.outputs(), T(7.0f));  // another fill: an output no item writes differs
    run_items(y.data());
    const bit_difference d = compare_bits<T>(y, whole, c.shape.out_channels);
    INFO(d.message);
    CHECK(d.count == 0);
  };
  check_order("in reverse", [&](T* y) {
    for (std::int64_t i = items - 1; i >= 0; --i) conv.run(p.input.data(), y, e, i);
  });
  check_order("shuffled", [&](T* y) {
    std::vector<std::int64_t> order(static_cast<std::size_t>(items));
    std::iota(order.begin(), order.end(), std::int64_t{0});
    std::shuffle(order.begin(), order.end(), std::mt19937(9));
    for (std::int64_t i : order) conv.run(p.input.data(), y, e, i);
  });
  check_order("on two threads", [&](T* y) {
    const auto every_other = [&](std::int64_t first) {
      for (std::int64_t i = first; i < items; i += 2) conv.run(p.input.data(), y, e, i);
    };
    std::thread other(every_other, std::int64_t{1});
    every_other(0);
    other.join();
  });
}

TEST_CASE(IPU_KERNELS_TEST_ISA " packed_conv work items give the same bits in any order and on any thread") {
  // Dense panels with work items that end inside images and rows, items of a tile's rows
  // whose edge columns are whole tiles (a 3x3 window), one panel per item (a kernel larger
  // than L1) and every panel in each item (a 1x1 from few channels, and one
  // larger than L1 but within half the L2, at strides 1 and 2), in f16 as many as half the L2
  // holds (a 1x1 kernel larger than that); groups in lanes; depthwise items of whole rows
  // that run on into the next image, and of one image's rows by a few vectors (a padded window).
  // A 1x1 kernel at stride 1 spreads its positions' granules of 24 over its items unevenly:
  // 784 positions, 33 granules, 8 items of 4 or 5.
  check_work_item_orders<float>({"3x3 192->256 batch 3", shape(5, 5, 192, 256, 3, 1, 1, 3)});
  check_work_item_orders<float>({"1x1 64->384 on 14x14 batch 4", shape(14, 14, 64, 384, 1, 1, 1, 4)});
  check_work_item_orders<float>({"3x3 48->64 on 20x9 batch 2", shape(20, 9, 48, 64, 3, 1, 1, 2)});
  check_work_item_orders<float>({"1x1 24->150 on 28x28 batch 3", shape(28, 28, 24, 150, 1, 1, 1, 3)});
  check_work_item_orders<ipu::f16>({"1x1 24->150 on 28x28 batch 3", shape(28, 28, 24, 150, 1, 1, 1, 3)});
  check_work_item_orders<float>({"1x1 100->300 on 13x11 batch 3", shape(13, 11, 100, 300, 1, 1, 1, 3)});
  check_work_item_orders<ipu::f16>({"1x1 100->300 on 13x11 batch 3", shape(13, 11, 100, 300, 1, 1, 1, 3)});
  check_work_item_orders<float>({"1x1/2 128->200 on 11x13 batch 2", shape(11, 13, 128, 200, 1, 2, 1, 2)});
  check_work_item_orders<ipu::f16>({"1x1/2 128->200 on 11x13 batch 2", shape(11, 13, 128, 200, 1, 2, 1, 2)});
  check_work_item_orders<ipu::f16>({"1x1 1024->600 on 5x7 batch 2", shape(5, 7, 1024, 600, 1, 1, 1, 2)});
  check_work_item_orders<float>({"3x3 128->128 32 groups on 12x12 batch 2", shape(12, 12, 128, 128, 3, 1, 32, 2)});
  check_work_item_orders<float>({"3x3/2 256->256 32 groups", shape(28, 28, 256, 256, 3, 2, 32)});
  check_work_item_orders<float>({"3x3 64->64 16 groups of 4 on 48x48", shape(48, 48, 64, 64, 3, 1, 16)});
  check_work_item_orders<float>({"3x3 64->64 4 groups of 16 on 20x20", shape(20, 20, 64, 64, 3, 1, 4)});
  check_work_item_orders<float>({"depthwise 3x3 200 channels on 28x28 batch 2", shape(28, 28, 200, 200, 3, 1, 200, 2)});
  check_work_item_orders<ipu::f16>({"depthwise 3x3 200 channels on 28x28 batch 2", shape(28, 28, 200, 200, 3, 1, 200, 2)});
  check_work_item_orders<float>({"depthwise 5x5 100 channels on 7x7 batch 3", shape(7, 7, 100, 100, 5, 1, 100, 3)});
  check_work_item_orders<ipu::f16>({"depthwise 5x5 100 channels on 7x7 batch 3", shape(7, 7, 100, 100, 5, 1, 100, 3)});
  check_work_item_orders<ipu::f16>({"3x3 192->256 batch 3", shape(5, 5, 192, 256, 3, 1, 1, 3)});
  check_work_item_orders<ipu::f16>({"3x3/2 256->256 32 groups", shape(28, 28, 256, 256, 3, 2, 32)});
}

TEST_CASE(IPU_KERNELS_TEST_ISA " packed_conv rejects invalid shapes") {
  using ipu::kernels::packed_conv;
  const auto kernel_of = [](const conv_shape& s) {
    return std::vector<float>(static_cast<std::size_t>(s.kernel.area() * (s.in_channels / s.groups) * s.out_channels));
  };
  const conv_shape valid = shape(5, 6, 8, 12, 3, 2, 4, 2);
  CHECK_NOTHROW(packed_conv<float>(valid, kernel_of(valid)));
  CHECK_NOTHROW(packed_conv<ipu::f16>(valid, kernel_of(valid)));

  // Zero and negative extents, each in turn (a zero stride has a test of its own, below).
  const auto rejected = [&](const conv_shape& s) {
    INFO(describe(s));
    CHECK_THROWS_AS(packed_conv<float>(s, kernel_of(valid)), std::invalid_argument);
    CHECK_THROWS_AS(packed_conv<ipu::f16>(s, kernel_of(valid)), std::invalid_argument);
  };
  for (std::int64_t conv_shape::*extent : {&conv_shape::batch, &conv_shape::in_height, &conv_shape::in_width,
                                           &conv_shape::in_channels, &conv_shape::out_channels, &conv_shape::groups})
    for (std::int64_t bad : {std::int64_t{0}, std::int64_t{-1}}) {
      conv_shape s = valid;
      s.*extent = bad;
      rejected(s);
    }
  for (ipu::hw conv_shape::*pair : {&conv_shape::kernel, &conv_shape::stride, &conv_shape::dilation})
    for (int ipu::hw::*axis : {&ipu::hw::h, &ipu::hw::w})
      for (int bad : {0, -1}) {
        if (pair == &conv_shape::stride && bad == 0) continue;
        conv_shape s = valid;
        (s.*pair).*axis = bad;
        rejected(s);
      }

  // Groups that do not divide the input or the output channels.
  for (const conv_shape& s : {shape(5, 5, 6, 8, 3, 1, 4), shape(5, 5, 8, 6, 3, 1, 4), shape(5, 5, 8, 8, 3, 1, 3),
                              shape(5, 5, 4, 4, 3, 1, 8)}) {
    INFO(describe(s));
    CHECK_THROWS_AS(packed_conv<float>(s, std::vector<float>(9 * 8)), std::invalid_argument);
  }

  // Kernels of the wrong size.
  const std::size_t size = kernel_of(valid).size();
  for (std::size_t wrong : {std::size_t{0}, size - 1, size + 1, size * 4}) {
    INFO(wrong << " weights instead of " << size);
    CHECK_THROWS_AS(packed_conv<float>(valid, std::vector<float>(wrong)), std::invalid_argument);
    CHECK_THROWS_AS(packed_conv<ipu::f16>(valid, std::vector<float>(wrong)), std::invalid_argument);
  }
}

TEST_CASE(IPU_KERNELS_TEST_ISA " packed_conv::assign packs another kernel and shape in place, as a new packed_conv does") {
  // Shapes of each path in turn, so that each assignment follows one of another path: a
  // depthwise window, dense items of rows, a 1x1 with every panel per item, groups in lanes,
  // and dense again, in f32 and f16 storage; the same bits as a packed_conv made for each. The
  // second round packs the panels last to first, on another thread each.
  const auto backwards_on_threads = [](std::int64_t count, auto&& work) {
    for (std::int64_t i = count - 1; i >= 0; --i) std::thread([&] { work(i); }).join();
  };
  const named_shape shapes[] = {{"depthwise 5x5 on 7x7", shape(7, 7, 48, 48, 5, 1, 48, 2)},
                                {"3x3 48->64 on 20x9", shape(20, 9, 48, 64, 3, 1, 1, 2)},
                                {"1x1 24->144", shape(9, 9, 24, 144, 1)},
                                {"3x3 64->64 4 groups of 16", shape(5, 29, 64, 64, 3, 1, 4)},
                                {"3x3/2 40->24", shape(11, 13, 40, 24, 3, 2, 1, 2)}};
  const auto check = [&]<class T>(T) {
    ipu::kernels::packed_conv<T> q;
    CHECK(q.work_items() == 0);
    for (std::uint32_t round = 0; round < 2; ++round)
      for (const named_shape& c : shapes) {
        INFO(c.what << ", " << type_name<T> << ", round " << round);
        const problem<T> p = make_problem<T>(c.shape, round + 1);
        if (round == 0) {
          q.assign(p.shape, p.kernel);
        } else {
          q.assign(p.shape, p.kernel, backwards_on_threads);
        }
        std::vector<T> y(p.outputs());
        q.run(p.input.data(), y.data(), epilogue_of(p, no_fusion));
        const bit_difference d = compare_bits<T>(y, packed_path(p, no_fusion), c.shape.out_channels);
        INFO(d.message);
        CHECK(d.count == 0);
      }
    // A shape it rejects leaves it without weights; the next assignment packs again.
    CHECK_THROWS_AS(q.assign(shape(5, 5, 6, 8, 3, 1, 4), std::vector<float>(9 * 8)), std::invalid_argument);
    CHECK(q.work_items() == 0);
    const problem<T> p = make_problem<T>(shapes[1].shape, 3);
    q.assign(p.shape, p.kernel);
    std::vector<T> y(p.outputs());
    q.run(p.input.data(), y.data(), epilogue_of(p, no_fusion));
    CHECK(compare_bits<T>(y, packed_path(p, no_fusion), p.shape.out_channels).count == 0);
  };
  check(float{});
  check(ipu::f16{});
}

TEST_CASE(IPU_KERNELS_TEST_ISA " packed_conv rejects a zero stride") {
  // Apart because a shape's output size divides by the stride: a kernel that computes it before
  // checking the stride dies of SIGFPE, which ends the test program.
  for (const ipu::hw stride : {ipu::hw{0, 1}, ipu::hw{1, 0}}) {
    conv_shape s = shape(5, 5, 8, 8, 3);
    s.stride = stride;
    CHECK_THROWS_AS(ipu::kernels::packed_conv<float>(s, std::vector<float>(3 * 3 * 8 * 8)), std::invalid_argument);
  }
}

TEST_CASE(IPU_KERNELS_TEST_ISA " exp on vectors gives the scalar bits, within one unit in the last place") {
  // kernels::exp<simd::lanes> (silu's and sigmoid's fast kernels) against kernels::exp on one
  // float (their faithful kernels) bit for bit, and against the double-precision std::exp, on
  // a fine grid over [-100, 100] and at the ends of its range.
  namespace simd = ipu::kernels::simd;
  constexpr float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> xs{0.0f, -0.0f, 88.37f, 88.38f, -87.33f, -87.34f, inf, -inf, nan, 1e-30f, -1e-30f};
  for (int i = -72'993; i <= 72'993; ++i) xs.push_back(static_cast<float>(i) * 0.00137f);
  xs.resize((xs.size() + simd::vec::width - 1) / simd::vec::width * simd::vec::width, 1.0f);
  int mismatches = 0;
  double worst_ulps = 0;
  for (std::size_t i = 0; i < xs.size(); i += simd::vec::width) {
    float vector[simd::vec::width];
    simd::store(vector, ipu::kernels::exp<simd::lanes>(simd::load(xs.data() + i)));
    for (std::size_t k = 0; k < static_cast<std::size_t>(simd::vec::width); ++k) {
      const float x = xs[i + k], scalar = ipu::kernels::exp(x);
      if (std::memcmp(&scalar, &vector[k], sizeof scalar) != 0) ++mismatches;
      const double expected = std::exp(static_cast<double>(x));
      if (x > -87.33f && x < 88.37f) {  // normal results
        const float e = static_cast<float>(expected);
        worst_ulps = std::max(worst_ulps, std::abs(scalar - expected) / static_cast<double>(std::nextafter(e, inf) - e));
      }
    }
  }
  CHECK(mismatches == 0);
  INFO("worst error " << worst_ulps << " units in the last place");
  CHECK(worst_ulps < 1.0);
  CHECK(ipu::kernels::exp(0.0f) == 1.0f);
  CHECK(ipu::kernels::exp(88.38f) == inf);
  CHECK(ipu::kernels::exp(-87.34f) == 0.0f);
  CHECK(std::isnan(ipu::kernels::exp(nan)));
}

/// The error of `y` in units in the last place of the f32 nearest `expected` (normal results).
inline double ulps(float y, double expected) {
  const float e = static_cast<float>(expected);
  return std::abs(y - expected) / static_cast<double>(std::nextafter(e, std::numeric_limits<float>::infinity()) - e);
}

TEST_CASE(IPU_KERNELS_TEST_ISA " tanh and the normal distribution on vectors give the scalar bits, within their bounds") {
  // kernels::tanh and kernels::normal_cdf (tanh's and GELU's kernels) on vectors against one
  // float bit for bit, and against double precision's std::tanh and std::erfc on a fine grid
  // over [-20, 20]: tanh within 1.5 units in the last place; Phi within 12 where the target
  // has fused multiply-add (10 measured over a 61st of the floats in [-13, 20]), 70 without
  // it, where e^{-x^2 / 2} takes x^2's rounding (66 measured at -12.9). Phi is relative to
  // itself in the negative tail too, down to its smallest normal value.
  namespace simd = ipu::kernels::simd;
  using scalar = ipu::kernels::scalar_lanes;
  constexpr float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> xs{0.0f, -0.0f, 0.625f, -0.625f, 1.4142135f, -1.4142135f, 44.0f, -45.0f, inf, -inf, nan, 1e-30f, -1e-30f};
  for (int i = -145'985; i <= 145'985; ++i) xs.push_back(static_cast<float>(i) * 0.000137f);
  xs.resize((xs.size() + simd::vec::width - 1) / simd::vec::width * simd::vec::width, 1.0f);
  int mismatches = 0;
  double worst_tanh = 0, worst_cdf = 0;
  for (std::size_t i = 0; i < xs.size(); i += simd::vec::width) {
    float tanh_vector[simd::vec::width], cdf_vector[simd::vec::width];
    simd::store(tanh_vector, ipu::kernels::tanh<simd::lanes>(simd::load(xs.data() + i)));
    simd::store(cdf_vector, ipu::kernels::normal_cdf<simd::lanes>(simd::load(xs.data() + i)));
    for (std::size_t k = 0; k < static_cast<std::size_t>(simd::vec::width); ++k) {
      const float x = xs[i + k], t = ipu::kernels::tanh<scalar>(x), cdf = ipu::kernels::normal_cdf<scalar>(x);
      if (std::memcmp(&t, &tanh_vector[k], sizeof t) != 0 || std::memcmp(&cdf, &cdf_vector[k], sizeof cdf) != 0) ++mismatches;
      if (!std::isfinite(x)) continue;
      const double expected_cdf = 0.5 * std::erfc(-static_cast<double>(x) / std::numbers::sqrt2);
      worst_tanh = std::max(worst_tanh, x == 0 ? 0.0 : ulps(t, std::tanh(static_cast<double>(x))));
      if (expected_cdf >= std::numeric_limits<float>::min()) worst_cdf = std::max(worst_cdf, ulps(cdf, expected_cdf));
    }
  }
  CHECK(mismatches == 0);
  INFO("worst errors: tanh " << worst_tanh << ", Phi " << worst_cdf << " units in the last place");
  CHECK(worst_tanh < 1.5);
  CHECK(worst_cdf < (IPU_FMA ? 12.0 : 70.0));
  // The ends and the special values.
  const auto tanh = [](float x) { return ipu::kernels::tanh<scalar>(x); };
  const auto cdf = [](float x) { return ipu::kernels::normal_cdf<scalar>(x); };
  CHECK(std::signbit(tanh(-0.0f)));
  CHECK(tanh(-0.0f) == 0.0f);
  CHECK((tanh(45.0f) == 1.0f && tanh(-45.0f) == -1.0f && tanh(inf) == 1.0f && tanh(-inf) == -1.0f));
  CHECK(cdf(0.0f) == 0.5f);
  CHECK((cdf(inf) == 1.0f && cdf(-inf) == 0.0f && cdf(-14.0f) == 0.0f && cdf(9.0f) == 1.0f));
  CHECK((std::isnan(tanh(nan)) && std::isnan(cdf(nan))));
}

TEST_CASE(IPU_KERNELS_TEST_ISA " relu6 on vectors and on one float gives std::min(std::max(x, 0), 6)") {
  // kernels::relu6 (ops::relu6, hard_sigmoid and hard_swish, and the fused epilogue) against the
  // published definition in the standard's operand order, bit for bit: -0 stays -0, NaN stays NaN.
  namespace simd = ipu::kernels::simd;
  constexpr float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> xs{0.0f, -0.0f, 6.0f, std::nextafter(6.0f, inf), std::nextafter(6.0f, 0.0f), 1e-45f, -1e-45f, inf, -inf, nan};
  for (int i = -400; i <= 400; ++i) xs.push_back(static_cast<float>(i) * 0.0371f);
  xs.resize((xs.size() + simd::vec::width - 1) / simd::vec::width * simd::vec::width, 3.0f);
  int mismatches = 0;
  for (std::size_t i = 0; i < xs.size(); i += simd::vec::width) {
    float vector[simd::vec::width];
    simd::store(vector, ipu::kernels::relu6<simd::lanes>(simd::load(xs.data() + i)));
    for (std::size_t k = 0; k < static_cast<std::size_t>(simd::vec::width); ++k) {
      const float x = xs[i + k], expected = std::min(std::max(x, 0.0f), 6.0f);
      const float scalar = ipu::kernels::relu6<ipu::kernels::scalar_lanes>(x);
      if (std::memcmp(&expected, &vector[k], sizeof x) != 0 || std::memcmp(&expected, &scalar, sizeof x) != 0) ++mismatches;
    }
  }
  CHECK(mismatches == 0);
}

std::vector<float> outputs_for(const conv_shape& s, bool half, std::uint32_t seed) {
  std::vector<float> out;
  const auto append = [&]<class T>(std::type_identity<T>) {
    const problem<T> p = make_problem<T>(s, seed);
    for (const fusion& f : {no_fusion, full_fusion})
      for (const T& y : packed_path(p, f)) out.push_back(static_cast<float>(y));
  };
  if (half) {
    append(std::type_identity<ipu::f16>{});
  } else {
    append(std::type_identity<float>{});
  }
  return out;
}

}  // namespace ipu_kernels_test::IPU_SIMD_NAMESPACE
