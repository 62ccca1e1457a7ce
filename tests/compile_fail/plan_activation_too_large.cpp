// One activation (f32, 2 x 1024 x 1024 x 64: 512 MiB) and its relu overfill a Mk1's 256 KiB tiles.
// expect: tile_out_of_memory
// expect: "relu1"
// expect: largest_is_activations
// expect: bytes_available[{]262144[}]
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr int channels = 4;
#else
constexpr int channels = 64;
#endif
constexpr auto g = ipu::input<ipu::f32, 2, 1024, 1024, channels> | nn::relu;
static_assert(ipu::require_fit<decltype(g), ipu::mk1>);
int main() {}
