// A training step runs on the IPUs: a block placed on the host is an error naming it.
// expect: trained_layer_on_the_host
// expect: "head[.]dense1"
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr auto head = ipu::on<1>(nn::scope<"head">(nn::dense<4>));
#else
constexpr auto head = ipu::on_host(nn::scope<"head">(nn::dense<4>));
#endif
constexpr auto g = ipu::input<ipu::f32, 1, 8, 8, 8> | nn::conv<8, 3> | nn::global_avg_pool | head;
static_assert(ipu::fits_v<ipu::training<decltype(g)>, ipu::system<ipu::mk2, 2>>);
int main() {}
