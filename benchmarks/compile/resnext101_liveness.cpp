// Compile-time benchmark: the zoo's ResNeXt-101 32x4d (f16, batch 4, 224x224x4), its node table
// and the activation liveness of every step, evaluated as constants. Compiled, never run.
#include <ipu/planning.hpp>

using model_t = ipu::models::resnext101_32x4d<ipu::f16, 4, 4>;
constexpr auto& table = ipu::node_table_v<model_t>;
constexpr auto liveness = ipu::activation_liveness_on(table, 0);

// The stem's output: conv output and its batch norm, each [4, 112, 112, 64] f16.
static_assert(liveness.peak_bytes >= 2 * 4 * 112 * 112 * 64 * 2);
static_assert(ipu::map_linearly(table[1].out.elements(), 2, ipu::mk2::chip).parts <= ipu::mk2::chip.tiles);

int main() { return liveness.peak_step < 0; }
