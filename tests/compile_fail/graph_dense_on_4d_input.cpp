// nn::dense straight after a conv: ipu never flattens silently.
// expect: dense_needs_a_2d_input
// expect: "dense1"
// expect: input_nhwc[{]4, 7, 7, 512[}]
// expect: global_avg_pool
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr auto head = nn::global_avg_pool | nn::dense<10>;
#else
constexpr auto head = nn::dense<10>;
#endif
constexpr auto g = ipu::input<ipu::f32, 4, 7, 7, 64> | nn::conv<512, 1> | head;
static_assert(ipu::mac_count_v<decltype(g)> > 0);
int main() {}
