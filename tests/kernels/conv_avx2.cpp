// The kernel tests of conv_cases.hpp compiled for AVX2 with FMA. When the target flags do not
// enable them (e.g. -march=x86-64-v2), this file compiles one test that says it was skipped.
//
// IPU_SIMD must be defined before any include, yet whether the target allows AVX2 is known only
// from simd.hpp's IPU_SIMD_TARGET: so IPU_SIMD asks for AVX2 when the target has it and for the
// portable kernels otherwise (a conditional expression, evaluated where simd.hpp tests
// IPU_SIMD), and the tests are included only in the first case.
#define IPU_SIMD (IPU_SIMD_AVX2 <= IPU_SIMD_TARGET ? IPU_SIMD_AVX2 : IPU_SIMD_PORTABLE)

#include <ipu/kernels/simd.hpp>

#if IPU_SIMD == IPU_SIMD_AVX2

#include "kernels/conv_cases.hpp"

#else

#include <catch2/catch.hpp>

TEST_CASE("avx2 kernel tests skipped as the target flags do not enable AVX2 and FMA") {
  WARN("skipped: the tests of the AVX2 kernels need -march with AVX2 and FMA (e.g. x86-64-v3)");
}

#endif
