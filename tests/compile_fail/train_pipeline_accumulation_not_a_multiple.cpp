// A grouped pipeline over two IPUs accumulating 6 micro-batches: TensorFlow's rule needs a
// positive multiple of 2 x 2 stages.
// expect: gradient_accumulation_does_not_fit_the_schedule
// expect: grouped_schedule
// expect: pipeline_stages[{]2[}]
// expect: gradient_accumulation[{]6[}]
// expect: must_be_a_positive_multiple_of[{]4[}]
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr int accumulation = 8;
#else
constexpr int accumulation = 6;
#endif
constexpr auto g = ipu::input<ipu::f32, 2, 8, 8, 3> | ipu::on<0>(nn::conv<8, 3> | nn::relu)
                   | ipu::on<1>(nn::global_avg_pool | nn::dense<4>);
constexpr ipu::train_options opts{.gradient_accumulation = accumulation, .pipeline = ipu::pipeline_schedule::grouped};
static_assert(sizeof(ipu::trainer<decltype(g), ipu::system<ipu::mk2, 2>, opts>) > 0);
int main() {}
