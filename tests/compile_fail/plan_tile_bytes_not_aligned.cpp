// A chip whose tiles hold a number of bytes that is not a multiple of the buffer alignment.
// expect: tile_bytes_must_be_a_multiple_of_the_alignment
// expect: bytes_per_tile[{]638974[}]
// expect: alignment[{]4[}]
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
struct odd_chip {
  static constexpr ipu::chip_spec chip = [] {
    ipu::chip_spec c = ipu::mk2::chip;
#ifdef IPU_COMPILE_FAIL_OK
    c.bytes_per_tile = 638972;
#else
    c.bytes_per_tile = 638974;
#endif
    return c;
  }();
  static constexpr int ipus = 1;
  static constexpr const char* name = "odd";
};
constexpr auto g = ipu::input<ipu::f32, 1, 8, 8, 8> | nn::conv<8, 3>;
static_assert(ipu::fits_v<decltype(g), odd_chip>);
int main() {}
