// The kernel tests of conv_cases.hpp compiled for the portable kernels, which every target has;
// and the check that every instruction set the target allows gives the portable kernels' bits.
#define IPU_SIMD IPU_SIMD_PORTABLE

#include "kernels/conv_cases.hpp"

#include <algorithm>
#include <iterator>
#include <span>
#include <string_view>
#include <vector>

namespace ipu_kernels_test::portable {
namespace {

using outputs_function = std::vector<float> (*)(const conv_shape&, bool, std::uint32_t);

/// The other instruction sets the target flags allow.
struct other_isa {
  std::string_view name;
  outputs_function outputs_for;
};

/// Multiply-adds of `s`, padding taps included.
constexpr double multiply_adds(const conv_shape& s) { return s.flops() / 2; }

/// Each of `others` against the portable kernels, bit for bit, for `shapes`.
void check_same_bits(std::span<const other_isa> others, std::span<const named_shape> shapes, bool half) {
  for (const named_shape& c : shapes) {
    INFO(c.what << ": " << describe(c.shape) << (half ? ", f16" : ", f32"));
    const std::vector<float> expected = outputs_for(c.shape, half, 13);
    for (const other_isa& isa : others) {
      INFO(isa.name << " against portable");
      const std::vector<float> actual = isa.outputs_for(c.shape, half, 13);
      const bit_difference d = compare_bits<float>(actual, expected, c.shape.out_channels);
      INFO("without, then with every epilogue step: " << d.message);
      CHECK(d.count == 0);
    }
  }
}

}  // namespace

TEST_CASE("portable avx2 and avx512 packed_conv give the same bits") {
  std::vector<other_isa> others;
#if IPU_SIMD_TARGET >= IPU_SIMD_AVX2
  others.push_back({"avx2", avx2::outputs_for});
#endif
#if IPU_SIMD_TARGET >= IPU_SIMD_AVX512
  others.push_back({"avx512", avx512::outputs_for});
#endif
  if (others.empty()) {
    WARN("nothing to compare: the target flags enable only the portable kernels");
    return;
  }
  // The model shapes of up to 2^26 multiply-adds (the stems, the grouped convs, 1x1 and 3x3
  // convs at strides 1 and 2): each instruction set is also compared with the scalar kernels,
  // bit for bit, on all of them, so this is a direct check of the same promise, kept short.
  std::vector<named_shape> models;
  std::copy_if(std::begin(model_shapes), std::end(model_shapes), std::back_inserter(models),
               [](const named_shape& c) { return multiply_adds(c.shape) <= 0x1p26; });
  check_same_bits(others, models, false);
  check_same_bits(others, odd_shapes, false);
  check_same_bits(others, odd_shapes, true);
  check_same_bits(others, f16_shapes, true);
}

}  // namespace ipu_kernels_test::portable
