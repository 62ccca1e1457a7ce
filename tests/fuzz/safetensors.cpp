// libFuzzer target: the safetensors reader (ipu/io/safetensors.hpp) on arbitrary bytes. Any
// input must either parse, with every float tensor convertible, or throw
// ipu::checkpoint_error; another exception, a crash or a sanitizer report is a failure.

#include <ipu/io/safetensors.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>(data[i]);
  try {
    const ipu::safetensors::file f = ipu::safetensors::file::parse(std::move(bytes));
    for (const ipu::safetensors::tensor& t : f.tensors()) {
      (void)f.at(t.name);
      const auto values = t.to_floats();  // throws checkpoint_error for the other types
      if (static_cast<std::int64_t>(values.size()) != t.elements()) __builtin_trap();
    }
  } catch (const ipu::checkpoint_error&) {
  }
  return 0;
}
