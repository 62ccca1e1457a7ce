// A dropout rate must be in [0, 1): a rate of 1 would drop every value.
// expect: dropout_t
// expect: scalar{1, 0}
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr auto g = ipu::input<ipu::f32, 1, 4, 4, 3> | nn::conv<8, 3> | nn::dropout<0.5> | nn::relu;
#else
constexpr auto g = ipu::input<ipu::f32, 1, 4, 4, 3> | nn::conv<8, 3> | nn::dropout<1.0> | nn::relu;
#endif
static_assert(ipu::node_count_v<decltype(g)> == 3);
int main() {}
