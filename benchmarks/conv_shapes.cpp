// ipu's convolution kernel against oneDNN's, on every distinct convolution of three networks at
// batch 4, in f32: ResNeXt-101 32x4d as the seed runs it (224x224x4 NHWC input, stride in the
// first 1x1 conv), and the zoo's MobileNetV2 and EfficientNet-B0 (224x224x3), whose depthwise
// convolutions have one channel per group.
//
// The shapes come from the models' node tables at compile time; a benchmark is named
// `conv/<model>/<shape>/<impl>`. For each shape, two benchmarks on the same random data:
// - `ipu`: `ipu::kernels::packed_conv<float>` (weights packed once, before timing), its work
//   items handed out over an `ipu::runtime::team` by `run_items`, as the executor hands them
//   out (one team for the program, as an engine keeps its own);
// - `onednn`: oneDNN's convolution primitive (created once), NHWC source and destination,
//   weights reordered once into the layout the primitive asks for (`format_tag::any`),
//   `convolution_auto`, on as many OpenMP threads.
// Neither has a bias or post-ops. Before timing, each benchmark checks once per shape that the
// two outputs agree (bench_common.hpp's `max_relative_error` below 1e-3) and fails otherwise;
// its label gives the error (and, for oneDNN, the implementation it chose).
//
// Counters: `GFLOP/s` (multiply-adds counted as two operations, padding taps included, as
// `conv_shape::flops`), `flop` per call, `layers` (how many layers of the network have the
// shape). Threads: `IPU_BENCH_THREADS`, else one per hardware thread.
//
//   bench_conv_shapes --benchmark_filter='resnext.*k3'      # ResNeXt's grouped 3x3 convolutions
//   bench_conv_shapes --benchmark_filter='mobilenet'        # MobileNetV2's
//   bench_conv_shapes --benchmark_min_time=0.05             # quick (benchmark 1.7: no `s`)

#include "bench_common.hpp"

#include <ipu/core/aligned.hpp>
#include <ipu/graph/queries.hpp>
#include <ipu/kernels/packed_conv.hpp>
#include <ipu/models/efficientnet.hpp>
#include <ipu/models/mobilenet.hpp>
#include <ipu/models/resnext.hpp>
#include <ipu/runtime/team.hpp>

#include <benchmark/benchmark.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using ipu::kernels::conv_shape;

using resnext_t = ipu::models::resnext<ipu::f32, /*batch*/ 4, /*layers*/ 101, /*cardinality*/ 32, /*width per group*/ 4,
                                       /*input channels*/ 4, /*classes*/ 1000, /*image size*/ 224,
                                       ipu::models::stride_at::first_conv>;
using mobilenet_t = ipu::models::mobilenet_v2<ipu::f32, /*batch*/ 4>;
using efficientnet_t = ipu::models::efficientnet_b0<ipu::f32, /*batch*/ 4>;

constexpr conv_shape shape_of(const ipu::node& n) noexcept {
  return {n.in.dim[0], n.in.dim[1], n.in.dim[2], n.in.dim[3], n.layer.filters, n.layer.kernel, n.layer.stride, n.layer.groups,
          n.layer.pad, n.layer.dilation};
}

/// A distinct convolution shape of a model and how many of its layers have it.
struct shape_use {
  conv_shape shape;
  int layers = 0;
  const char* model = "";  ///< as the benchmark names it
};

/// The distinct convolution shapes of `table`, in the order they first occur.
template <std::size_t Count, std::size_t N>
constexpr std::array<shape_use, Count> distinct_convs(const std::array<ipu::node, N>& table) noexcept {
  std::array<shape_use, Count> out{};
  std::size_t found = 0;
  for (const ipu::node& n : table) {
    if (n.kind != ipu::op_of<ipu::ops::conv>) continue;
    std::size_t k = 0;
    while (k < found && !(out[k].shape == shape_of(n))) ++k;
    if (k == found && found < Count) out[found++].shape = shape_of(n);
    if (k < Count) ++out[k].layers;
  }
  return out;
}

template <std::size_t N>
constexpr std::size_t distinct_conv_count(const std::array<ipu::node, N>& table) noexcept {
  std::size_t found = 0;
  for (std::size_t j = 0; j < N; ++j) {
    if (table[j].kind != ipu::op_of<ipu::ops::conv>) continue;
    bool seen = false;
    for (std::size_t i = 0; i < j; ++i) seen = seen || (table[i].kind == ipu::op_of<ipu::ops::conv> && shape_of(table[i]) == shape_of(table[j]));
    found += seen ? 0 : 1;
  }
  return found;
}

/// The distinct convolution shapes of graph `G`, named `model`.
template <ipu::Graph G>
std::vector<shape_use> shapes_of(const char* model) {
  static constexpr auto& table = ipu::node_table_v<G>;
  static constexpr std::array distinct = distinct_convs<distinct_conv_count(table)>(table);
  static_assert(distinct.size() > 10, "each network has a few dozen distinct convolutions");
  std::vector<shape_use> out(distinct.begin(), distinct.end());
  for (shape_use& u : out) u.model = model;
  return out;
}

/// Every benchmarked shape, the three networks' in turn.
const std::vector<shape_use> shapes = [] {
  std::vector<shape_use> all = shapes_of<resnext_t>("resnext101_32x4d");
  for (auto more : {shapes_of<mobilenet_t>("mobilenet_v2"), shapes_of<efficientnet_t>("efficientnet_b0")})
    all.insert(all.end(), more.begin(), more.end());
  return all;
}();

/// `conv/resnext101_32x4d/56x56x128->128 k3 s1 g32` (`k1x7`, `s2x1` where the axes differ,
/// ` d2` when dilated).
std::string name_of(const shape_use& use) {
  const conv_shape& s = use.shape;
  const auto pair = [](ipu::hw x) {
    return x.h == x.w ? std::to_string(x.h) : std::to_string(x.h) + "x" + std::to_string(x.w);
  };
  return "conv/" + std::string(use.model) + "/" + std::to_string(s.in_height) + "x" + std::to_string(s.in_width) + "x" +
         std::to_string(s.in_channels) + "->" + std::to_string(s.out_channels) + " k" + pair(s.kernel) + " s" + pair(s.stride) + " g" +
         std::to_string(s.groups) + (s.dilation == ipu::hw{1, 1} ? "" : " d" + pair(s.dilation));
}

/// Random input `[batch][h][w][c]` in [-1, 1] and HWIO weights with variance 1 / fan_in; the
/// same for a shape every time. Input and output start on a cache line, for both
/// implementations (as the engine's tensors do).
struct problem {
  ipu::aligned_vector<float> input, output;
  std::vector<float> kernel;

  explicit problem(const conv_shape& s) {
    std::mt19937 rng(static_cast<std::uint32_t>(s.in_height * 1'000'003 + s.in_channels * 1009 + s.out_channels * 31 +
                                                s.kernel.area() * 7 + s.stride.h * 3 + s.groups));
    input.resize(static_cast<std::size_t>(s.batch * s.in_height * s.in_width * s.in_channels));
    for (float& v : input) v = std::uniform_real_distribution<float>(-1, 1)(rng);
    const std::int64_t fan_in = s.kernel.area() * (s.in_channels / s.groups);
    const float limit = std::sqrt(3.0f / static_cast<float>(fan_in));
    kernel.resize(static_cast<std::size_t>(fan_in * s.out_channels));
    for (float& v : kernel) v = std::uniform_real_distribution<float>(-limit, limit)(rng);
    output.assign(static_cast<std::size_t>(s.positions() * s.out_channels), 0.0f);
  }
};

/// The team every ipu benchmark runs on, made at the first and kept, as an engine makes its
/// team once and as oneDNN's OpenMP threads persist. With a team made per repetition and the
/// repetitions interleaved at random, ipu's 1x1 convolution 112x112x16->96 on 2 threads took
/// 580 to 1230 us, against 590 to 630 us with this one.
ipu::runtime::team& team_of(unsigned threads) {
  static ipu::runtime::team team(threads);
  return team;
}

/// ipu's convolution over a team: its work items handed out as the executor hands them out
/// (`team::run_items`).
class ipu_conv {
 public:
  ipu_conv(const conv_shape& s, std::span<const float> kernel, ipu::runtime::team& team) : conv_(s, kernel), team_(team) {}

  void run(const float* in, float* out) {
    team_.run_items(conv_.work_items(), [&](std::int64_t i) { conv_.run(in, out, {}, i); });
  }

 private:
  ipu::kernels::packed_conv<float> conv_;
  ipu::runtime::team& team_;
};

#if IPU_BENCH_HAVE_DNNL
/// oneDNN's convolution on `in` and `out`, created once.
class onednn_conv {
 public:
  onednn_conv(const conv_shape& s, std::span<const float> kernel, const float* in, float* out)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    const auto pd = ipu_bench::conv_primitive(s, false, {}, engine_);
    primitive_ = dnnl::convolution_forward(pd);
    args_[DNNL_ARG_SRC] = dnnl::memory(pd.src_desc(), engine_, const_cast<float*>(in));
    args_[DNNL_ARG_WEIGHTS] = ipu_bench::conv_weights(s, kernel, pd.weights_desc(), engine_);
    args_[DNNL_ARG_DST] = dnnl::memory(pd.dst_desc(), engine_, out);
    if (pd.scratchpad_desc().get_size() > 0) args_[DNNL_ARG_SCRATCHPAD] = dnnl::memory(pd.scratchpad_desc(), engine_);
    implementation_ = pd.impl_info_str();
  }

  void run() {
    primitive_.execute(stream_, args_);
    stream_.wait();
  }
  /// oneDNN's name for the implementation it chose, e.g. `brgconv:avx512_core`.
  const std::string& implementation() const noexcept { return implementation_; }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::primitive primitive_;
  std::unordered_map<int, dnnl::memory> args_;
  std::string implementation_;
};

/// How far ipu's output is from oneDNN's on shape `k`, computed once per shape.
double agreement(std::size_t k, unsigned threads) {
  static std::map<std::size_t, double> known;
  if (const auto it = known.find(k); it != known.end()) return it->second;
  const conv_shape& s = shapes[k].shape;
  problem p(s);
  ipu::aligned_vector<float> reference(p.output.size(), 0.0f);
  {
    ipu::runtime::team team(threads);
    ipu_conv conv(s, p.kernel, team);
    conv.run(p.input.data(), p.output.data());
  }
  {
    ipu_bench::set_onednn_threads(threads);
    onednn_conv conv(s, p.kernel, p.input.data(), reference.data());
    conv.run();
  }
  return known[k] = ipu_bench::max_relative_error(p.output, reference);
}

/// Fails the benchmark unless ipu and oneDNN agree on shape `k`; sets the label to the error.
bool check(benchmark::State& state, std::size_t k, unsigned threads) {
  const double error = agreement(k, threads);
  if (!(error < ipu_bench::tolerance)) {
    state.SkipWithError(("ipu and oneDNN disagree: max relative error " + std::to_string(error)).c_str());
    return false;
  }
  state.SetLabel(ipu_bench::error_label(error));
  return true;
}
#endif

void set_counters(benchmark::State& state, const shape_use& use) {
  const double flops = use.shape.flops();
  state.counters["GFLOP/s"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["flop"] = flops;
  state.counters["layers"] = use.layers;
}

void bench_ipu(benchmark::State& state, std::size_t k, unsigned threads) {
#if IPU_BENCH_HAVE_DNNL
  if (!check(state, k, threads)) return;
#endif
  const shape_use& use = shapes[k];
  problem p(use.shape);
  ipu_conv conv(use.shape, p.kernel, team_of(threads));
  for (auto _ : state) {
    conv.run(p.input.data(), p.output.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, use);
}

#if IPU_BENCH_HAVE_DNNL
void bench_onednn(benchmark::State& state, std::size_t k, unsigned threads) {
  if (!check(state, k, threads)) return;
  const shape_use& use = shapes[k];
  problem p(use.shape);
  ipu_bench::set_onednn_threads(threads);
  onednn_conv conv(use.shape, p.kernel, p.input.data(), p.output.data());
  for (auto _ : state) {
    conv.run();
    benchmark::ClobberMemory();
  }
  set_counters(state, use);
  state.SetLabel(conv.implementation() + "; " + ipu_bench::error_label(agreement(k, threads)));
}
#endif

}  // namespace

int main(int argc, char** argv) {
  return ipu_bench::run_main(argc, argv, [](unsigned threads) {
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      const std::string name = name_of(shapes[k]);
      benchmark::RegisterBenchmark((name + "/ipu").c_str(), bench_ipu, k, threads)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
#if IPU_BENCH_HAVE_DNNL
      benchmark::RegisterBenchmark((name + "/onednn").c_str(), bench_onednn, k, threads)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
#endif
    }
  });
}
