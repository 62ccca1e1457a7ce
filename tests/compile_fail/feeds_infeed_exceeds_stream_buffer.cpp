// 84 of the seed's 4x224x224x4 f16 batches (1,605,632 bytes each) exceed the 128 MB stream
// buffer; 83 fit.
// expect: infeed_exceeds_stream_buffer
// expect: prefetch_depth[{]84[}]
// expect: element_bytes[{]1605632[}]
// expect: buffer_bytes[{]134873088[}]
// expect: stream_buffer_limit[{]134217728[}]
// expect: lower the prefetch depth
#include <ipu/ipu.hpp>
namespace nn = ipu::nn;
using model_t = decltype(ipu::input<ipu::f16, 4, 224, 224, 4> | nn::relu);
#ifdef IPU_COMPILE_FAIL_OK
using feed_t = ipu::infeed<model_t, 83>;
#else
using feed_t = ipu::infeed<model_t, 84>;
#endif
static_assert(feed_t::capacity > 0);
int main() {}
