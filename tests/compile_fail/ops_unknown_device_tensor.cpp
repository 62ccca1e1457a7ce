// Device tensors are found by name; a name the op does not have is a compile error.
// expect: the_op_has_no_device_tensor_of_this_name
#include <ipu/ipu.hpp>
#ifdef IPU_COMPILE_FAIL_OK
constexpr std::size_t bias = ipu::ops::device_index<ipu::ops::dense>("bias");
#else
constexpr std::size_t bias = ipu::ops::device_index<ipu::ops::conv>("bias");
#endif
static_assert(bias < 2);
int main() {}
