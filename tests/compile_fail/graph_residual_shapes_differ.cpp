// A stride-2 body under an identity shortcut: 4x4 against 8x8.
// expect: residual_branches_must_have_equal_shapes
// expect: "stage1[.]block2[.]add"
// expect: body_output_nhwc[{]2, 4, 4, 16[}]
// expect: shortcut_output_nhwc[{]2, 8, 8, 16[}]
// expect: give the shortcut a projection
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr int stride = 1;
#else
constexpr int stride = 2;
#endif
constexpr auto g = ipu::input<ipu::f16, 2, 8, 8, 16> |
                   nn::scope<"stage1">(nn::residual(nn::conv<16, 3>) | nn::residual(nn::conv<16, 3, stride>));
static_assert(ipu::output_shape_v<decltype(g)>[0] == 2);
int main() {}
