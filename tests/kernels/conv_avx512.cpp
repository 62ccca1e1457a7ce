// The kernel tests of conv_cases.hpp compiled for AVX-512. When the target flags do not enable
// AVX-512 (e.g. -march=x86-64-v3), this file compiles one test that says it was skipped.
//
// IPU_SIMD must be defined before any include, yet whether the target allows AVX-512 is known
// only from simd.hpp's IPU_SIMD_TARGET: so IPU_SIMD asks for AVX-512 when the target has it and
// for the portable kernels otherwise (a conditional expression, evaluated where simd.hpp tests
// IPU_SIMD), and the tests are included only in the first case.
#define IPU_SIMD (IPU_SIMD_AVX512 <= IPU_SIMD_TARGET ? IPU_SIMD_AVX512 : IPU_SIMD_PORTABLE)

#include <ipu/kernels/simd.hpp>

#if IPU_SIMD == IPU_SIMD_AVX512

#include "kernels/conv_cases.hpp"

#else

#include <catch2/catch.hpp>

TEST_CASE("avx512 kernel tests skipped as the target flags do not enable AVX-512") {
  WARN("skipped: the tests of the AVX-512 kernels need -march with AVX-512F (e.g. x86-64-v4 or native on "
       "an AVX-512 machine)");
}

#endif
