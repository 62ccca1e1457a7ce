// An infeed prefetch depth above TensorFlow's 255.
// expect: infeed_depth_must_be_1_to_255
// expect: prefetch_depth[{]256[}]
// expect: the prefetch depth must be 1 to 255
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
using model_t = decltype(ipu::input<ipu::f16, 4, 32, 32, 4> | nn::relu);
#ifdef IPU_COMPILE_FAIL_OK
ipu::infeed<model_t, 255> in;
#else
ipu::infeed<model_t, 256> in;
#endif
int main() {}
