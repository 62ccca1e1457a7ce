// A model far too large for one Mk2 (batch 64 at 224x224): the planner's cycle estimates must
// not overflow on its multi-MiB exchange buffers, so require_fit gives its own error. Its
// global average pooling sends each output's 224x224 inputs to one tile, which no batch size
// or placement fits, so the error names that step at batch size 1 and advises neither.
// expect: one_step_exceeds_a_tile_even_at_batch_1
// expect: on_ipu[{]0[}]
// expect: "global_avg_pool1"
// expect: bytes_available[{]638976[}]
// expect: neither a smaller batch nor another placement
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr int batch = 1, size = 32;
#else
constexpr int batch = 64, size = 224;
#endif
constexpr auto g = ipu::input<ipu::f32, batch, size, size, 3> | nn::conv<16, 3> | nn::batch_norm
    | nn::relu | nn::residual(nn::conv<16, 3> | nn::batch_norm | nn::relu | nn::conv<16, 3>
                             | nn::batch_norm)
    | nn::relu | nn::global_avg_pool | nn::dense<10> | nn::softmax;
static_assert(ipu::require_fit<decltype(g), ipu::mk2>);
int main() {}
