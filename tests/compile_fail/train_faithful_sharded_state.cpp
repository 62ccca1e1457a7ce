// The faithful trainer runs one replica holding all of its optimiser state: it refuses the
// state shared out over the replicas of a replicated target.
// expect: static assert
// expect: faithful_trainer runs one replica holding all of the optimiser state
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr bool sharded = false;
#else
constexpr bool sharded = true;
#endif
constexpr auto g = ipu::input<ipu::f32, 2, 8, 8, 3> | nn::conv<8, 3> | nn::relu | nn::global_avg_pool | nn::dense<4>;
constexpr ipu::train_options opts{.optimizer = ipu::adam{}, .shard_optimizer_state = sharded};
static_assert(sizeof(ipu::faithful_trainer<decltype(g), ipu::replicated<ipu::system<ipu::mk2, 2>, 2>, opts>) > 0);
int main() {}
