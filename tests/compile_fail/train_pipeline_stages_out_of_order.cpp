// An interleaved pipeline whose second block is on IPU 0, after a block on IPU 1: a
// pipeline's stages follow the IPUs in order.
// expect: pipeline_stages_out_of_order
// expect: "head[.]dense1"
// expect: on_ipu[{]0[}]
// expect: previous_ipu[{]1[}]
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr int first = 0, second = 1;
#else
constexpr int first = 1, second = 0;
#endif
constexpr auto g = ipu::input<ipu::f32, 2, 8, 8, 3> | ipu::on<first>(nn::scope<"body">(nn::conv<8, 3> | nn::relu | nn::global_avg_pool))
                   | ipu::on<second>(nn::scope<"head">(nn::dense<4>));
constexpr ipu::train_options opts{.gradient_accumulation = 2, .pipeline = ipu::pipeline_schedule::interleaved};
static_assert(sizeof(ipu::trainer<decltype(g), ipu::system<ipu::mk2, 2>, opts>) > 0);
int main() {}
