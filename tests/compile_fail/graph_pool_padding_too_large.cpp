// A VALID 3x3 max pool on a 2x2 input: the padded input must hold the window.
// expect: window_padding_must_be_below_the_window
// expect: "max_pool1"
// expect: window_size[{]3, 3[}]
// expect: padding_top_bottom_left_right[{]0, 0, 0, 0[}]
// expect: input_height[{]2[}]
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr auto pool = nn::max_pool<3, 1>.padded(nn::pad<1>);
#else
constexpr auto pool = nn::max_pool<3, 1>.valid();
#endif
constexpr auto g = ipu::input<ipu::f32, 1, 2, 2, 3> | pool;
static_assert(ipu::node_count_v<decltype(g)> == 2);
int main() {}
