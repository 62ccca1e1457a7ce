// The branches of nn::concat must agree in every extent but the channels.
// expect: concat_branches_must_agree_but_in_channels
// expect: concat1
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr auto g = ipu::input<ipu::f32, 1, 8, 8, 4> | nn::concat(nn::identity, nn::conv<8, 3>);
#else
constexpr auto g = ipu::input<ipu::f32, 1, 8, 8, 4> | nn::concat(nn::identity, nn::conv<8, 3, 2>);
#endif
static_assert(ipu::output_shape_v<decltype(g)>[0] == 1);
int main() {}
