// A 5x5 max pool on a 4x4 input.
// expect: pool_window_must_fit_input
// expect: "stem[.]max_pool1"
// expect: window_size[{]5, 5[}]
// expect: input_height[{]4[}]
// expect: larger than its input
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr int window = 3;
#else
constexpr int window = 5;
#endif
constexpr auto g = ipu::input<ipu::f32, 1, 8, 8, 3> | nn::scope<"stem">(nn::conv<8, 3, 2> | nn::max_pool<window, 2>);
static_assert(ipu::node_count_v<decltype(g)> == 3 && ipu::output_shape_v<decltype(g)>[1] == 2);
int main() {}
