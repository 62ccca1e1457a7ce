// The branches of nn::add must give one shape; the error names the join and the branch.
// expect: join_branches_must_have_equal_shapes
// expect: add1
// expect: branch[{]2[}]
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr auto g = ipu::input<ipu::f32, 1, 8, 8, 4> | nn::add(nn::identity, nn::conv<4, 3>);
#else
constexpr auto g = ipu::input<ipu::f32, 1, 8, 8, 4> | nn::add(nn::identity, nn::conv<8, 3>);
#endif
static_assert(ipu::output_shape_v<decltype(g)>[0] == 1);
int main() {}
