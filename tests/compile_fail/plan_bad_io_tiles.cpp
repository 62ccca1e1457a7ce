// As many I/O tiles as the IPU has tiles: none left for the model.
// expect: io_tiles_must_leave_tiles_for_the_model
// expect: io_tiles[{]1472[}]
// expect: tiles_per_ipu[{]1472[}]
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
constexpr ipu::options opts{.io_tiles = 1471};
#else
constexpr ipu::options opts{.io_tiles = 1472};
#endif
constexpr auto g = ipu::input<ipu::f32, 1, 8, 8, 8> | nn::conv<8, 3>;
static_assert(ipu::fits_v<decltype(g), ipu::mk2, opts>);
int main() {}
