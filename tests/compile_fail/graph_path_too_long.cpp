// Scope names whose joined path exceeds ipu::path_string::capacity.
// expect: layer_path_too_long
// expect: max_characters[{]79[}]
// expect: shorter scope names
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr auto inner = nn::scope<"a_reasonably_named_scope">(nn::relu);
#else
constexpr auto inner = nn::scope<"an_unreasonably_long_scope_name_that_nobody_should_write">(nn::relu);
#endif
constexpr auto g = ipu::input<ipu::f32, 1, 2, 2, 1> | nn::scope<"another_long_outer_scope_name">(inner);
static_assert(ipu::node_count_v<decltype(g)> == 2 && ipu::node_table_v<decltype(g)>[1].kind == ipu::op_of<ipu::ops::relu>);
int main() {}
