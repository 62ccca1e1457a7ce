// Two sibling scopes with the same name would give two nodes the path "features.conv1", and
// weights["features.conv1"] could not tell them apart.
// expect: node_paths_must_be_unique
// expect: "features.conv1"
// expect: node_index[{]1[}], (ipu::diag::)?node_index[{]2[}]
// expect: give sibling nn::scope blocks different names
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr auto second = nn::scope<"head">(nn::conv<8, 3>);
#else
constexpr auto second = nn::scope<"features">(nn::conv<8, 3>);
#endif
constexpr auto g = ipu::input<ipu::f32, 1, 8, 8, 3> | nn::scope<"features">(nn::conv<8, 3>) | second;
static_assert(ipu::output_shape_v<decltype(g)>[3] == 8);
int main() {}
