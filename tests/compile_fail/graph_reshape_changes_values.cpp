// A reshape of [1, 4, 4, 3] (48 values per sample) to 4x4x4 (64): reshape must keep every value.
// expect: reshape_must_keep_every_value
// expect: "stem[.]reshape1"
// expect: input_values_per_sample[{]48[}]
// expect: target_values_per_sample[{]64[}]
// expect: must keep every value
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr int channels = 3;
#else
constexpr int channels = 4;
#endif
constexpr auto g = ipu::input<ipu::f32, 1, 4, 4, 3> | nn::scope<"stem">(nn::reshape<4, 4, channels> | nn::relu);
static_assert(ipu::node_count_v<decltype(g)> == 3);
int main() {}
