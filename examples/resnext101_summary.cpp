// Prints the summary of the seed's ResNeXt-101 32x4d (f16, batch 4, 224x224 with 4 channels):
// every node with its output shape, parameters and multiply-accumulates, all computed by the
// compiler. The static_asserts below are checked before the program exists.
#include <ipu/ipu.hpp>

#include <cstring>
#include <iostream>

using model_t = ipu::models::resnext101_32x4d<ipu::f16, /*batch*/ 4, /*in channels*/ 4>;

static_assert(ipu::output_shape_v<model_t> == std::array<std::int64_t, 2>{4, 1000});
static_assert(ipu::param_count_v<model_t> > 44'000'000);

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::cout << "usage: resnext101_summary\n"
                   "Prints ResNeXt-101 32x4d (f16, batch 4, 224x224x4) node by node, as the compiler sees it.\n";
      return 0;
    }
    std::cerr << "resnext101_summary: unknown argument '" << argv[i] << "' (try --help)\n";
    return 2;
  }
  std::cout << "ResNeXt-101 32x4d, as in the TensorFlow inference seed\n\n" << ipu::summary<model_t>();
}
