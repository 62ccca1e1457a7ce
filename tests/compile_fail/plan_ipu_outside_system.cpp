// A block placed on IPU 2 of a two-IPU system.
// expect: ipu_index_outside_system
// expect: "stage2[.]conv1"
// expect: ipu_index[{]2[}]
// expect: ipus_in_target[{]2[}]
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr int second = 1;
#else
constexpr int second = 2;
#endif
constexpr auto g = ipu::input<ipu::f32, 1, 8, 8, 8> | ipu::on<0>(nn::scope<"stage1">(nn::conv<8, 3>)) |
                   ipu::on<second>(nn::scope<"stage2">(nn::conv<8, 3>));
static_assert(ipu::fits_v<decltype(g), ipu::system<ipu::mk2, 2>>);
int main() {}
