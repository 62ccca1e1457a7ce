// Compile-time benchmark: the seed's ResNeXt-101 32x4d (f16, batch 4, 224x224x4) on one Mk2 at
// available_memory_proportion 0.3, as the seed runs it: planned tile by tile, fit checked.
// Compiled, never run.
#include <ipu/planning.hpp>

using model_t = ipu::models::resnext101_32x4d<ipu::f16, 4, 4>;
constexpr ipu::options opts{.available_memory_proportion = {3, 10}};

static_assert(ipu::require_fit<model_t, ipu::mk2, opts>);

int main() { return ipu::plan_v<model_t, ipu::mk2, opts>.ipus[0].peak > 0 ? 0 : 1; }
