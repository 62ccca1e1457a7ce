// A 3x3 conv padded by 3 rows above: explicit padding must be below the window on each side.
// expect: window_padding_must_be_below_the_window
// expect: "stem[.]conv1"
// expect: window_size[{]3, 3[}]
// expect: padding_top_bottom_left_right[{]3, 1, 1, 1[}]
// expect: smaller than the window on each side
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr int top = 2;
#else
constexpr int top = 3;
#endif
constexpr auto g = ipu::input<ipu::f32, 1, 8, 8, 3> | nn::scope<"stem">(nn::conv<8, 3>.padded(nn::pad<top, 1, 1, 1>) | nn::relu);
static_assert(ipu::node_count_v<decltype(g)> == 3 && ipu::output_shape_v<decltype(g)>[1] == 9);
int main() {}
