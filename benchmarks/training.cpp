// A training step on the host: forward in training mode, softmax cross-entropy, backward and
// an SGD update with momentum, for ResNet-50 and ResNeXt-50 32x4d at micro-batch 8, 224x224x3,
// f32. Counter: images per second measured here.
//
//   bench_training --benchmark_filter=resnet50     # one network
//   bench_training --benchmark_min_time=1          # steadier figures

#include <ipu/ipu.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

namespace {

constexpr ipu::train_options sgd_momentum{.optimizer = ipu::sgd{.learning_rate = 0.01, .momentum = 0.9}};

template <class G>
void training_step(benchmark::State& state) {
  ipu::trainer<G, ipu::mk2, sgd_momentum> trainer{ipu::weights<G>::random(42)};
  std::vector<float> x(static_cast<std::size_t>(ipu::node_table_v<G>[0].out.elements()));
  std::mt19937 rng(1);
  for (float& v : x) v = std::uniform_real_distribution<float>(-1, 1)(rng);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(ipu::batch_size_v<G>));
  for (auto& l : labels) l = static_cast<std::int32_t>(rng() % 1000);
  for (auto _ : state) benchmark::DoNotOptimize(trainer.step(x, labels));
  const double batch = static_cast<double>(ipu::batch_size_v<G>);
  state.counters["images_per_second"] = benchmark::Counter(batch, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = trainer.threads();
}

}  // namespace

BENCHMARK(training_step<ipu::models::resnet50<ipu::f32, 8>>)
    ->Name("resnet50/f32/batch8")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(training_step<ipu::models::resnext50_32x4d<ipu::f32, 8>>)
    ->Name("resnext50_32x4d/f32/batch8")->Unit(benchmark::kMillisecond)->UseRealTime();
