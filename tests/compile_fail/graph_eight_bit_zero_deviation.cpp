// An 8-bit input stream divides by each channel's standard deviation: 0 is a compile error.
// expect: an 8-bit stream's standard deviations must be positive
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr ipu::input_stream stream = ipu::eight_bit_io({0.5, 0.5}, {0.25, 0.25});
#else
constexpr ipu::input_stream stream = ipu::eight_bit_io({0.5, 0.5}, {0.25, 0.0});
#endif
constexpr auto g = ipu::input<ipu::f16, 1, 8, 8, 2, stream> | nn::conv<8, 3>;
static_assert(ipu::fits_v<decltype(g), ipu::mk2>);
int main() {}
