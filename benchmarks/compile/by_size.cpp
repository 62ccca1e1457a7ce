// Compile-time benchmark against graph size (run by sizes.sh, which names the model with
// -DIPU_BENCH_MODEL=<type>): the model planned tile by tile for one Mk2 at available memory
// proportion 0.3, as the seed runs ResNeXt-101, fit or not; with -DIPU_BENCH_TRAINING, its
// training step instead (SGD with momentum, recomputation per block). It includes what a fit
// check needs, <ipu/planning.hpp>. Run, it prints the graph's node count, the plan's step count
// and whether it fits.
#include <ipu/planning.hpp>

#include <cstdio>

#ifndef IPU_BENCH_MODEL
#error "give the model's type: -DIPU_BENCH_MODEL='ipu::models::resnet50<ipu::f16, 4>'"
#endif

using model_t = IPU_BENCH_MODEL;
constexpr ipu::options opts{.available_memory_proportion = {3, 10}};
#ifdef IPU_BENCH_TRAINING
constexpr ipu::train_options train{.optimizer = ipu::sgd{.learning_rate = 0.1, .momentum = 0.9},
                                   .recompute = ipu::recompute::per_block};
using planned_t = ipu::training<model_t, train>;
constexpr std::size_t steps = ipu::plan_v<planned_t, ipu::mk2, opts>.step_count;
#else
using planned_t = model_t;
constexpr std::size_t steps = ipu::node_count_v<model_t>;
#endif
constexpr auto& plan = ipu::plan_v<planned_t, ipu::mk2, opts>;
static_assert(plan.ipus[0].peak > 0);

int main() {
  std::printf("%zu %zu %d\n", ipu::node_count_v<model_t>, steps, plan.fits ? 1 : 0);
  return 0;
}
