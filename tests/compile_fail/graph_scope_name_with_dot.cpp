// A scope name with a '.' would make paths that look like children of other nodes.
// expect: cannot contain '[.]'
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr auto g = ipu::input<ipu::f32, 1, 8, 8, 3> | nn::scope<"stage1_conv1">(nn::relu);
#else
constexpr auto g = ipu::input<ipu::f32, 1, 8, 8, 3> | nn::scope<"stage1.conv1">(nn::relu);
#endif
static_assert(ipu::node_count_v<decltype(g)> == 2);
int main() {}
