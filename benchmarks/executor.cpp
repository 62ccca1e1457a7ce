// Whole-network throughput of the engine: ResNeXt-101 32x4d as the seed runs it (batch 4,
// 224x224x4 NHWC, one Mk2, available memory proportion 0.3), f32 and f16, fast and faithful
// modes. Counters: host images/s measured here, and the images/s the cycle model predicts on
// the target (`simulated_images_per_second`).
//
//   bench_executor --benchmark_filter=fast        # the fast mode only
//   bench_executor --benchmark_min_time=1         # steadier figures

#include <ipu/ipu.hpp>

#include <benchmark/benchmark.h>

#include <random>

namespace {

constexpr ipu::options seed_options{.available_memory_proportion = {3, 10}};

template <class T>
using seed_model = ipu::models::resnext101_32x4d<T, 4, 4>;

template <class T, ipu::execution_mode Mode>
void resnext101(benchmark::State& state) {
  using G = seed_model<T>;
  ipu::engine<G, ipu::mk2, seed_options> engine{ipu::weights<G>::random(42), {Mode, 0}};
  ipu::input_tensor_t<G> x;
  std::mt19937 rng(1);
  for (auto& v : x) v = static_cast<T>(std::uniform_real_distribution<float>(-1, 1)(rng));
  ipu::output_tensor_t<G> y;
  for (auto _ : state) {
    engine.infer(x, y);
    benchmark::DoNotOptimize(y.data());
  }
  const double batch = static_cast<double>(ipu::batch_size_v<G>);
  state.counters["images_per_second"] = benchmark::Counter(batch, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["simulated_images_per_second"] = engine.profile().simulated_images_per_second();
  state.counters["threads"] = engine.threads();
}

}  // namespace

BENCHMARK(resnext101<ipu::f32, ipu::execution_mode::fast>)
    ->Name("resnext101_32x4d/f32/fast")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(resnext101<ipu::f16, ipu::execution_mode::fast>)
    ->Name("resnext101_32x4d/f16/fast")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(resnext101<ipu::f32, ipu::execution_mode::faithful>)
    ->Name("resnext101_32x4d/f32/faithful")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(resnext101<ipu::f16, ipu::execution_mode::faithful>)
    ->Name("resnext101_32x4d/f16/faithful")->Unit(benchmark::kMillisecond)->UseRealTime();
