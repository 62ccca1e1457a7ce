// One configuration of the pipelined training table of docs/scaling.md: ResNeXt-101 32x4d
// (f16, 224x224x3, 1000 classes) trained in "16.16" with SGD and momentum, recomputation per
// block and 16 micro-batches per update, over IPU_STAGES Mk2s (1, 2 or 4) at micro-batch
// IPU_MICRO with schedule IPU_SCHEDULE (0 sequential, 1 grouped, 2 interleaved). Planned at
// compile time; prints the plan's fit and cycle model as a row of the table. run.sh compiles
// it for every configuration.
#include <ipu/ipu.hpp>

#include <algorithm>
#include <cstdio>

namespace {

constexpr auto schedule = static_cast<ipu::pipeline_schedule>(IPU_SCHEDULE);
constexpr ipu::train_options opts{.optimizer = ipu::sgd{.learning_rate = 0.1, .momentum = 0.9},
                                  .recompute = ipu::recompute::per_block,
                                  .master_weights = ipu::dtype::f16,
                                  .gradient_accumulation = 16,
                                  .pipeline = schedule};
using model_t = ipu::models::resnext101_32x4d_stages<ipu::f16, IPU_MICRO, IPU_STAGES>;
using target_t = ipu::system<ipu::mk2, IPU_STAGES>;
constexpr const auto& plan = ipu::plan_v<ipu::training<model_t, opts>, target_t>;

}  // namespace

int main() {
  constexpr auto timing = plan.timing();
  std::int64_t fullest = 0;
  int at = 0;
  for (int i = 0; i < IPU_STAGES; ++i)
    if (plan.ipus[static_cast<std::size_t>(i)].peak > fullest) fullest = plan.ipus[static_cast<std::size_t>(i)].peak, at = i;
  std::printf("| %d | %s | %d | %s | %lld (IPU %d) | %.0f | %.0f%% |\n", IPU_STAGES,
              std::string(ipu::name_of(timing.schedule)).c_str(), IPU_MICRO, plan.fits ? "yes" : "no",
              static_cast<long long>(fullest), at, timing.samples_per_second(),
              100.0 * static_cast<double>(timing.ramp_up + timing.ramp_down) / static_cast<double>(timing.total()));
}
