// A grouped conv whose input channels (6) are not divisible by its groups (4).
// expect: conv_groups_must_divide_channels
// expect: "stage2[.]block1[.]conv2"
// expect: input_channels[{]6[}]
// expect: groups[{]4[}]
// expect: divisible by its groups
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr int groups = 3;
#else
constexpr int groups = 4;
#endif
constexpr auto g = ipu::input<ipu::f32, 1, 8, 8, 6> |
                   nn::scope<"stage2">(nn::residual(nn::conv<6, 1> | nn::conv<6, 3, 1, groups>));
static_assert(ipu::param_count_v<decltype(g)> > 0);
int main() {}
