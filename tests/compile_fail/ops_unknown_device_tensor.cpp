// Device tensors are found by name; a name the op does not have is a compile error.
// expect: the_op_has_no_device_tensor_of_this_name
#include <ipu/ipu.hpp>
#ifdef IPU_COMPILE_FAIL_OK
constexpr std::size_t scale = ipu::ops::device_index<ipu::ops::batch_norm>("scale");
#else
constexpr std::size_t scale = ipu::ops::device_index<ipu::ops::conv>("scale");
#endif
static_assert(scale < 2);
int main() {}
