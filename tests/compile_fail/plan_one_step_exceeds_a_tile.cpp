// A softmax over 400,000 classes holds a whole row on one tile: at any batch size that step's
// exchange buffer alone (800,000 bytes of f16) overfills the tile, so the error advises
// neither a smaller batch nor another placement.
// expect: one_step_exceeds_a_tile_even_at_batch_1
// expect: "softmax1"
// expect: largest_is_exchange
// expect: bytes_available[{]638976[}]
// expect: neither a smaller batch nor another placement
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr int classes = 100000;
#else
constexpr int classes = 400000;
#endif
constexpr auto classifier = ipu::input<ipu::f16, 4, 7, 7, 512> | nn::global_avg_pool | nn::dense<classes> | nn::softmax;
static_assert(ipu::require_fit<decltype(classifier), ipu::mk2>);
int main() {}
