#pragma once
/// \file
/// The fast convolution's work items, compiled here for `float` and `ipu::f16`: include this
/// header in exactly one translation unit of a program whose translation units all define
/// `IPU_EXTERN_KERNELS`, and the others compile none of them.
///
/// Like every translation unit of the program, the one that includes this header must be
/// built with the same `-march` and `IPU_SIMD` as the others (see `IPU_SIMD`). Where they
/// would select different instruction sets, the kernels' names differ (`IPU_SIMD_NAMESPACE`),
/// and the program does not link. How much compile time it saves, and the CMake lines: the
/// fast kernels' page, "Compiling the kernels once" (`docs/kernels.md`).

#include <ipu/kernels/packed_conv.hpp>

namespace ipu::kernels {
inline namespace IPU_SIMD_NAMESPACE {

template class packed_conv<float>;
template class packed_conv<f16>;
/// A convolution's kernel-gradient tiles (`add_product_tile`), compiled here once.
template void add_product_tile<float>(std::int64_t, const float*, std::int64_t, const float*, std::int64_t, std::int64_t, float*,
                                      std::int64_t, const int*) noexcept;

}  // namespace IPU_SIMD_NAMESPACE
}  // namespace ipu::kernels
