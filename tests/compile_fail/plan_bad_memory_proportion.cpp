// An available_memory_proportion above 1.
// expect: available_memory_proportion_must_be_in_0_1
// expect: numerator[{]3[}]
// expect: denominator[{]2[}]
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr ipu::options opts{.available_memory_proportion = {1, 2}};
#else
constexpr ipu::options opts{.available_memory_proportion = {3, 2}};
#endif
constexpr auto g = ipu::input<ipu::f32, 1, 8, 8, 8> | nn::conv<8, 3>;
static_assert(ipu::fits_v<decltype(g), ipu::mk2, opts>);
int main() {}
