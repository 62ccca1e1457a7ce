// One result of 4096 x 4096 x 3 f32 values (192 MiB) exceeds the 128 MB stream buffer.
// expect: outfeed_element_exceeds_stream_buffer
// expect: element_bytes[{]201326592[}]
// expect: stream_buffer_limit[{]134217728[}]
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
#ifdef IPU_COMPILE_FAIL_OK
using model_t = decltype(ipu::input<ipu::f32, 1, 2048, 2048, 3> | nn::relu);
#else
using model_t = decltype(ipu::input<ipu::f32, 1, 4096, 4096, 3> | nn::relu);
#endif
using out_t = ipu::outfeed<model_t, ipu::outfeed_mode::last>;
static_assert(out_t::mode == ipu::outfeed_mode::last);
int main() {}
