// An 8-bit input stream normalises up to 4 channels: 5 is a compile error that says so.
// expect: an 8-bit stream normalises images of up to 4 channels
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr int channels = 4;
#else
constexpr int channels = 5;
#endif
constexpr auto g = ipu::input<ipu::f16, 1, 8, 8, channels, ipu::eight_bit_io()> | nn::conv<8, 3>;
static_assert(ipu::fits_v<decltype(g), ipu::mk2>);
int main() {}
