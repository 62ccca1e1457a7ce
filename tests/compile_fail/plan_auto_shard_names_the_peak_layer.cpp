// A residual block too large for two Mk1 IPUs, however it is split: auto_shard names the layer
// require_fit names for the same block on one Mk1 (block1.conv2, the 3x3 convolution), not the
// block's first layer.
// expect: auto_shard_found_no_placement
// expect: "block1.conv2"
// expect: ipus_in_target[{]2[}]
// expect: bytes_available[{]262144[}]
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr int batch = 1;
#else
constexpr int batch = 96;
#endif
constexpr auto g = ipu::input<ipu::f32, batch, 56, 56, 64>
    | nn::residual(nn::conv<64, 1> | nn::batch_norm | nn::relu | nn::conv<64, 3> | nn::batch_norm) | nn::relu;
using target = ipu::system<ipu::mk1, 2>;
static_assert(ipu::fits_v<ipu::auto_shard<decltype(g), target>, target>);
int main() {}
