// Compile-time benchmark: the seed's ResNeXt-101 32x4d (f16, batch 4, 224x224x4), which no
// Mk1 holds alone, placed by auto_shard over four Mk1 IPUs (it needs two), planned tile by
// tile, and the fit checked. Compiled, never run.
#include <ipu/planning.hpp>

using model_t = ipu::models::resnext101_32x4d<ipu::f16, 4, 4>;
using target_t = ipu::system<ipu::mk1, 4>;
constexpr ipu::options opts{.available_memory_proportion = {3, 10}};
using placed_t = ipu::auto_shard<model_t, target_t>;

static_assert(ipu::require_fit<placed_t, target_t, opts>);

int main() { return ipu::plan_v<placed_t, target_t, opts>.ipus[0].peak > 0 ? 0 : 1; }
