// Compile-time benchmark: define ResNeXt-101 32x4d as the seed does (f16, batch 4, 224x224x4)
// and evaluate every graph query on it. Compiled, never run, by run.sh.
#include <ipu/planning.hpp>
#include <ipu/report/summary.hpp>

namespace nn = ipu::nn;

template <int Width, int Out, int Stride>
constexpr auto body = nn::conv<Width, 1> | nn::batch_norm | nn::relu | nn::conv<Width, 3, Stride, 32> |
                      nn::batch_norm | nn::relu | nn::conv<Out, 1> | nn::batch_norm;
template <int Width, int Out, int Stride>
constexpr auto first_block = nn::residual(body<Width, Out, Stride>, nn::conv<Out, 1, Stride> | nn::batch_norm) | nn::relu;
template <int Width, int Out>
constexpr auto block = nn::residual(body<Width, Out, 1>) | nn::relu;

constexpr auto model = ipu::input<ipu::f16, 4, 224, 224, 4> |
                       nn::scope<"stem">(nn::conv<64, 7, 2> | nn::batch_norm | nn::relu | nn::max_pool<3, 2>) |
                       nn::scope<"stage1">(first_block<128, 256, 1> | nn::repeat<2>(block<128, 256>)) |
                       nn::scope<"stage2">(first_block<256, 512, 2> | nn::repeat<3>(block<256, 512>)) |
                       nn::scope<"stage3">(first_block<512, 1024, 2> | nn::repeat<22>(block<512, 1024>)) |
                       nn::scope<"stage4">(first_block<1024, 2048, 2> | nn::repeat<2>(block<1024, 2048>)) |
                       nn::global_avg_pool | nn::dense<1000>;
using model_t = decltype(model);
using zoo_t = ipu::models::resnext101_32x4d<ipu::f16, 4, 4>;

static_assert(ipu::node_count_v<model_t> == 345);
static_assert(ipu::output_shape_v<model_t>[1] == 1000);
static_assert(ipu::param_count_v<model_t> == ipu::param_count_v<zoo_t>);
static_assert(ipu::mac_count_v<model_t> == ipu::mac_count_v<zoo_t>);
static_assert(ipu::node_table_v<model_t>[ipu::find_node(ipu::node_table_v<model_t>, "stage3.block23.add")].out ==
              ipu::nhwc(4, 14, 14, 1024));

#ifdef IPU_BENCH_PLAN
#include IPU_BENCH_PLAN
#endif

int main() { return static_cast<int>(ipu::summary<model_t>().nodes().size() != 345); }
