#pragma once
// What bench_conv_shapes, bench_network and bench_peak share: the thread count, how oneDNN is
// given the same number of threads, the agreement measure, and the context every JSON file
// carries (CPU, ipu's instruction set, -march, compiler, oneDNN's version and threading), which
// scripts/performance-report reads.
//
// Threads: `IPU_BENCH_THREADS` if set (a positive integer), else one per hardware thread.
//
// oneDNN's threads: Debian's libdnnl is built with OpenMP (libgomp), which reads
// `OMP_NUM_THREADS` once, when it is loaded, before `main`. So the programs call libgomp's
// `omp_set_num_threads(n)` on the thread that runs the benchmarks, found with `dlsym` in the
// libraries already loaded: no OpenMP flags, no second OpenMP runtime with clang.

#include <ipu/kernels/packed_conv.hpp>
#include <ipu/kernels/simd.hpp>

#include <benchmark/benchmark.h>

// IPU_BENCH_HAVE_DNNL: 1 in the programs that race oneDNN when it was found, 0 when it was
// not; undefined in the others (no oneDNN context then).
#if defined(IPU_BENCH_HAVE_DNNL)
#define IPU_BENCH_RACES_ONEDNN 1
#else
#define IPU_BENCH_HAVE_DNNL 0
#define IPU_BENCH_RACES_ONEDNN 0
#endif
#if IPU_BENCH_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

#include <dlfcn.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#ifndef IPU_BENCH_ARCH
#define IPU_BENCH_ARCH ""
#endif

namespace ipu_bench {

/// The threads every implementation gets: `IPU_BENCH_THREADS`, else one per hardware thread.
/// Throws `std::invalid_argument` if the variable is set to anything but a positive integer.
inline unsigned threads() {
  if (const char* env = std::getenv("IPU_BENCH_THREADS"); env != nullptr && *env != '\0') {
    const std::string_view text(env);
    unsigned n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc{} || end != text.data() + text.size() || n == 0)
      throw std::invalid_argument("IPU_BENCH_THREADS must be a positive integer, not '" + std::string(text) + "'");
    return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

/// `max |a - b| / max |b|`: the largest error relative to the reference's scale (`b`), so
/// that outputs near zero do not dominate. Infinity when the sizes differ or `b` is all zero.
inline double max_relative_error(std::span<const float> a, std::span<const float> b) {
  constexpr double infinity = std::numeric_limits<double>::infinity();
  if (a.size() != b.size()) return infinity;
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    err = std::isnan(d) ? infinity : std::max(err, d);
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return scale > 0 ? err / scale : infinity;
}

/// `"max rel. error 2.1e-07"`: the label of a benchmark whose output was checked.
inline std::string error_label(double error) {
  char text[32];
  std::snprintf(text, sizeof text, "max rel. error %.1e", error);
  return text;
}

/// The tolerance of the agreement checks: f32 sums in different orders over up to a few
/// thousand terms per output (and 100 layers for the network) stay far below it.
inline constexpr double tolerance = 1e-3;

#if IPU_BENCH_HAVE_DNNL
/// Gives oneDNN `n` threads on the calling thread (see the file comment); returns how, for
/// the context, or why not.
inline std::string set_onednn_threads(unsigned n) {
  if (dnnl::version()->cpu_runtime != DNNL_RUNTIME_OMP) return "not set (oneDNN's CPU runtime is not OpenMP)";
  using setter = void (*)(int);
  static const auto set = reinterpret_cast<setter>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (set == nullptr) return "not set (omp_set_num_threads not found)";
  set(static_cast<int>(n));
  return std::to_string(n) + " (omp_set_num_threads)";
}

/// The memory descriptor of an activation: NHWC for rank 4 (oneDNN's dims are N, C, H, W),
/// NC for rank 2.
inline dnnl::memory::desc activation_desc(std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c) {
  return {{n, c, h, w}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nhwc};
}

/// A convolution as oneDNN's primitive descriptor: source and destination NHWC, weights in
/// the layout oneDNN prefers (`format_tag::any`), an optional bias, `attr`'s post-ops.
inline dnnl::convolution_forward::primitive_desc conv_primitive(const ipu::kernels::conv_shape& s, bool bias,
                                                                const dnnl::primitive_attr& attr,
                                                                const dnnl::engine& eng) {
  using md = dnnl::memory::desc;
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const std::int64_t o = s.out_channels, i = s.in_channels, g = s.groups, kh = s.kernel.h, kw = s.kernel.w;
  const md src = activation_desc(s.batch, s.in_height, s.in_width, i);
  const md dst = activation_desc(s.batch, s.out_height(), s.out_width(), o);
  const md weights = g > 1 ? md({g, o / g, i / g, kh, kw}, dt::f32, tag::any) : md({o, i, kh, kw}, dt::f32, tag::any);
  const ipu::kernels::window_geometry w = s.geometry();
  const dnnl::memory::dims strides{s.stride.h, s.stride.w}, pad_l{w.pad_top, w.pad_left}, pad_r{w.pad_bottom, w.pad_right};
  // oneDNN counts the cells skipped between taps: 0 when they are adjacent.
  const dnnl::memory::dims dilates{s.dilation.h - 1, s.dilation.w - 1};
  using conv = dnnl::convolution_forward;
  const auto kind = dnnl::prop_kind::forward_inference;
  const auto algo = dnnl::algorithm::convolution_auto;
  const conv::desc d = bias ? conv::desc(kind, algo, src, weights, md({o}, dt::f32, tag::a), dst, strides, dilates, pad_l, pad_r)
                            : conv::desc(kind, algo, src, weights, dst, strides, dilates, pad_l, pad_r);
  return {d, attr, eng};
}

/// `hwio` (ipu's layout, `[kh][kw][in / groups][out]`) reordered once into `layout`.
inline dnnl::memory conv_weights(const ipu::kernels::conv_shape& s, std::span<const float> hwio,
                                 const dnnl::memory::desc& layout, const dnnl::engine& eng) {
  using md = dnnl::memory::desc;
  const std::int64_t o = s.out_channels, i = s.in_channels / s.groups, g = s.groups, kh = s.kernel.h, kw = s.kernel.w;
  // HWIO with the output channels split into (group, channel in group), as strides.
  const md user = g > 1 ? md({g, o / g, i, kh, kw}, dnnl::memory::data_type::f32, {o / g, 1, o, kw * i * o, i * o})
                        : md({o, i, kh, kw}, dnnl::memory::data_type::f32, {1, o, kw * i * o, i * o});
  dnnl::memory from(user, eng, const_cast<float*>(hwio.data())), to(layout, eng);
  dnnl::stream stream(eng);
  dnnl::reorder(from, to).execute(stream, from, to);
  stream.wait();
  return to;
}

inline std::string onednn_isa() {
  using isa = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::sse41: return "sse41";
    case isa::avx: return "avx";
    case isa::avx2: return "avx2";
    case isa::avx2_vnni: return "avx2_vnni";
    case isa::avx512_core: return "avx512_core";
    case isa::avx512_core_vnni: return "avx512_core_vnni";
    case isa::avx512_core_bf16: return "avx512_core_bf16";
    case isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}
#endif

/// The CPU's model name from /proc/cpuinfo, or "unknown".
inline std::string cpu_model() {
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);)
    if (line.starts_with("model name"))
      if (const auto colon = line.find(':'); colon != std::string::npos)
        return line.substr(line.find_first_not_of(' ', colon + 1));
  return "unknown";
}

/// Adds the context keys scripts/performance-report reads to the JSON output.
inline void add_context(unsigned n) {
  benchmark::AddCustomContext("ipu_threads", std::to_string(n));
  benchmark::AddCustomContext("ipu_simd", std::string(ipu::kernels::simd::name_of(ipu::kernels::simd::compiled_isa)));
  benchmark::AddCustomContext("ipu_arch", IPU_BENCH_ARCH[0] != '\0' ? "-march=" IPU_BENCH_ARCH : "compiler default");
  benchmark::AddCustomContext("cpu_model", cpu_model());
#if defined(__clang__)
  benchmark::AddCustomContext("compiler", "clang " __clang_version__);
#elif defined(__GNUC__)
  benchmark::AddCustomContext("compiler", "g++ " __VERSION__);
#endif
#if IPU_BENCH_HAVE_DNNL
  const dnnl::version_t* v = dnnl::version();
  benchmark::AddCustomContext("onednn", std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                                            std::to_string(v->patch) +
                                            (v->cpu_runtime == DNNL_RUNTIME_OMP ? " (OpenMP)" : ""));
  benchmark::AddCustomContext("onednn_isa", onednn_isa());
  benchmark::AddCustomContext("onednn_threads", set_onednn_threads(n));
#elif IPU_BENCH_RACES_ONEDNN
  benchmark::AddCustomContext("onednn", "not found at build time: ipu alone");
#endif
}

/// The `main` of the three programs: context, `register_all(threads)`, then Google Benchmark.
template <class Register>
int run_main(int argc, char** argv, Register register_all) {
  unsigned n = 0;
  try {
    n = threads();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  add_context(n);
  register_all(n);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace ipu_bench
