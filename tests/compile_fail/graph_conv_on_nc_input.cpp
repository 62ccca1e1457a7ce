// A conv after global pooling: conv and pooling need NHWC.
// expect: layer_needs_a_4d_input
// expect: "conv2"
// expect: input_nc[{]2, 32[}]
// expect: need an NHWC input
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr auto tail = nn::dense<3>;
#else
constexpr auto tail = nn::conv<3, 1>;
#endif
constexpr auto g = ipu::input<ipu::f32, 2, 8, 8, 3> | nn::conv<32, 3> | nn::global_avg_pool | tail;
static_assert(ipu::output_shape_v<decltype(g)>[1] == 3);
int main() {}
