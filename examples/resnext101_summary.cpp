// Prints the summary of the seed's ResNeXt-101 32x4d (f16, batch 4, 224x224 with 4 channels, each
// stage's stride on its first 1x1 conv, as the seed places it): every node with its output
// shape, parameters and multiply-accumulates, all computed by the compiler. The static_asserts
// below are checked before the program exists.
#include <ipu/ipu.hpp>

#include <cstring>
#include <iostream>

using model_t = ipu::models::resnext<ipu::f16, /*batch*/ 4, /*layers*/ 101, /*cardinality*/ 32, /*width per group*/ 4,
                                     /*in channels*/ 4, /*classes*/ 1000, /*image*/ 224, ipu::models::stride_at::first_conv>;

static_assert(ipu::output_shape_v<model_t> == std::array<std::int64_t, 2>{4, 1000});
static_assert(ipu::param_count_v<model_t> == 44'180'840);  // the stride's place changes no weight
// The seed's placement computes the 3x3 convs at the lower resolution: 30.2 G MACs for the
// batch of 4, against 32.0 G with torchvision's (stride on the grouped conv).
static_assert(ipu::mac_count_v<model_t> == 30'187'651'072);

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::cout << "usage: resnext101_summary\n"
                   "Prints the seed's ResNeXt-101 32x4d (f16, batch 4, 224x224x4, stride on each stage's first\n"
                   "1x1 conv) node by node, as the compiler sees it.\n";
      return 0;
    }
    std::cerr << "resnext101_summary: unknown argument '" << argv[i] << "' (try --help)\n";
    return 2;
  }
  std::cout << "ResNeXt-101 32x4d as the TensorFlow inference seed builds it (stride on each stage's first 1x1 conv)\n\n"
            << ipu::summary<model_t>();
}
