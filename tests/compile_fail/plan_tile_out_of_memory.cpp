// A dense layer whose f32 weights (16384 x 16384, 1 GiB) exceed a Mk2 IPU's 897 MiB.
// expect: tile_out_of_memory_even_at_batch_1
// expect: on_ipu[{]0[}]
// expect: on_tile[{]
// expect: "dense1"
// expect: bytes_available[{]638976[}]
// expect: needs more memory than it has, even at batch size 1; place part of the model
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr int channels = 2048, units = 1000;
#else
constexpr int channels = 16384, units = 16384;
#endif
constexpr auto g = ipu::input<ipu::f32, 4, 1, 1, channels> | nn::global_avg_pool | nn::dense<units>;
static_assert(ipu::require_fit<decltype(g), ipu::mk2>);
int main() {}
