// A model far too large for one Mk2 (batch 64 at 224x224, 205 MB per activation): the
// planner's cycle estimates must not overflow on its multi-MiB buffers, so require_fit gives its
// own error. At batch 1 it fits, so the error names the layer that overfills a tile and advises
// every remedy, a smaller batch included.
// expect: tile_out_of_memory<
// expect: on_ipu[{]0[}]
// expect: "block1[.]conv2"
// expect: bytes_available[{]638976[}]
// expect: or lower the batch size
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
