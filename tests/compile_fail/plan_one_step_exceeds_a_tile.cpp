// EfficientNet-B0's first squeeze-and-excitation pools a 112x112 map with one tile per output:
// at any batch size that step's exchange buffers alone overfill tile 0, so the error advises
// neither a smaller batch nor another placement. (clang shows the first 34 characters of a
// path, then "[...]".)
// expect: one_step_exceeds_a_tile_even_at_batch_1
// expect: "stage1[.]se[.]multiply1[.]branch2[.]adapti
// expect-gcc: "stage1[.]se[.]multiply1[.]branch2[.]adaptive_avg_pool1"
// expect: largest_is_exchange
// expect: bytes_available[{]638976[}]
// expect: neither a smaller batch nor another placement
#include <ipu/ipu.hpp>
#ifdef IPU_COMPILE_FAIL_OK
constexpr int image = 32;
#else
constexpr int image = 224;
#endif
constexpr ipu::options half_partials{.partials = ipu::dtype::f16};
static_assert(ipu::require_fit<ipu::models::efficientnet_b0<ipu::f16, 4, 3, 1000, image>, ipu::mk2, half_partials>);
int main() {}
