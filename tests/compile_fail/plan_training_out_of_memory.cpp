// Training a small network at micro-batch 32 on a Mk1: the activations stashed for the backward
// pass overfill a 256 KiB tile; the error names the category with the most bytes at the peak
// and the layer of its largest buffer (conv1's output, the largest stashed), the step and
// every category.
// expect: training_tile_out_of_memory
// expect: largest_is<[^>]*stashed_activations_of
// expect: stashed_activations_of, .*[{]"conv1"[}]>, [a-z:]*during<
// expect: during<[^>]*backward_step
// expect: bytes_available[{]262144[}]
// expect: optimizer_state[{]
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr int batch = 1;
#else
constexpr int batch = 32;
#endif
constexpr auto g = ipu::input<ipu::f32, batch, 128, 128, 16> | nn::conv<32, 3> | nn::relu | nn::conv<16, 3> | nn::relu
                   | nn::global_avg_pool | nn::dense<10>;
constexpr ipu::train_options opts{.optimizer = ipu::sgd{.learning_rate = 0.1, .momentum = 0.9}};
static_assert(ipu::require_fit<ipu::training<decltype(g), opts>, ipu::mk1>);
int main() {}
