// A graph may not end in a dropout: no layer would read what it drops.
// expect: dropout_must_precede_a_layer
// expect: "dense1"
// expect: put it before a layer
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr auto g = ipu::input<ipu::f32, 1, 4, 4, 3> | nn::flatten | nn::dropout<0.5> | nn::dense<4>;
#else
constexpr auto g = ipu::input<ipu::f32, 1, 4, 4, 3> | nn::flatten | nn::dense<4> | nn::dropout<0.5>;
#endif
static_assert(ipu::node_count_v<decltype(g)> == 3);
int main() {}
