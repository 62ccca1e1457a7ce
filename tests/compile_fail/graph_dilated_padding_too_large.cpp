// A 1x3 conv dilated by 2 along the width spans 1x5 cells: explicit padding must be below that span.
// expect: window_padding_must_be_below_the_window
// expect: "conv1"
// expect: window_size[{]1, 5[}]
// expect: padding_top_bottom_left_right[{]0, 0, 5, 4[}]
// expect: smaller than the window on each side
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr int left = 4;
#else
constexpr int left = 5;
#endif
constexpr auto g = ipu::input<ipu::f32, 1, 8, 8, 3> |
                   nn::conv<8, nn::hw{1, 3}>.dilated(nn::dilation<nn::hw{1, 2}>).padded(nn::pad<0, 0, left, 4>);
static_assert(ipu::output_shape_v<decltype(g)>[2] == 8 + left + 4 - 5 + 1);
int main() {}
