// Three pipeline stages on IPUs of 4 tiles at micro-batch 64: run sequentially or interleaved
// they fit; with the grouped schedule, IPU 0 holds the activations of six micro-batches at once
// (ipu::pipeline_stash_depth) and overfills. The error names the IPU, the stashed activations
// and every category.
// expect: training_tile_out_of_memory
// expect: on_ipu[{]0[}]
// expect: largest_is<[^>]*stashed_activations_of
// expect: bytes_available[{]638976[}]
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
struct three_small_ipus {
  static constexpr ipu::chip_spec chip = ipu::with_tiles(ipu::mk2::chip, 4);
  static constexpr int ipus = 3;
  static constexpr const char* name = "mk2-small";
};
#ifdef IPU_COMPILE_FAIL_OK
constexpr auto schedule = ipu::pipeline_schedule::interleaved;
#else
constexpr auto schedule = ipu::pipeline_schedule::grouped;
#endif
constexpr auto g = ipu::input<ipu::f32, 64, 8, 8, 8>
    | ipu::on<0>(nn::conv<8, 3> | nn::relu)
    | ipu::on<2>(nn::residual(ipu::on<1>(nn::conv<8, 3> | nn::relu) | nn::conv<8, 1>) | nn::global_avg_pool | nn::dense<4>);
constexpr ipu::train_options opts{.gradient_accumulation = 6, .pipeline = schedule};
static_assert(ipu::require_fit<ipu::training<decltype(g), opts>, three_small_ipus>);
int main() {}
