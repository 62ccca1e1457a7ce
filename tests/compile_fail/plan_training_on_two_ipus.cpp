// Training plans one IPU: a block placed on IPU 1 is an error naming it.
// expect: training_runs_on_one_ipu
// expect: "head[.]dense1"
// expect: ipu_index[{]1[}]
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr int second = 0;
#else
constexpr int second = 1;
#endif
constexpr auto g = ipu::input<ipu::f32, 1, 8, 8, 8> | nn::conv<8, 3> | nn::global_avg_pool
                   | ipu::on<second>(nn::scope<"head">(nn::dense<4>));
static_assert(ipu::fits_v<ipu::training<decltype(g)>, ipu::system<ipu::mk2, 2>>);
int main() {}
