// A dense layer whose f32 weights (8192 x 16384, 512 MiB) fit no Mk1 IPU, however the graph is split.
// expect: auto_shard_found_no_placement
// expect: "dense1"
// expect: ipus_in_target[{]2[}]
// expect: bytes_available[{]262144[}]
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr int channels = 1024, units = 16;
#else
constexpr int channels = 8192, units = 16384;
#endif
constexpr auto g = ipu::input<ipu::f32, 4, 1, 1, channels> | nn::global_avg_pool | nn::dense<units>;
using target = ipu::system<ipu::mk1, 2>;
static_assert(ipu::fits_v<ipu::auto_shard<decltype(g), target>, target>);
int main() {}
