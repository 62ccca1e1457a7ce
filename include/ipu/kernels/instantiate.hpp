#pragma once
/// \file
/// The fast convolution's work items, compiled here for `float` and `ipu::f16`: include this
/// header in exactly one translation unit of a program whose translation units all define
/// `IPU_EXTERN_KERNELS`, and the others compile none of them.
///
/// A translation unit that runs an engine or a trainer spends most of its compile time on
/// `packed_conv`'s register tiles: `tests/executor/sigmoid.cpp` (two engines, f32 and f16)
/// compiles in 43 s with g++ 12 at -O2 and in 39 s with clang 16 at -O1, and in 18 s and 15 s
/// with `IPU_EXTERN_KERNELS`, its object file a third of the size. A program of several such
/// translation units compiles the kernels once instead of once in each.
///
/// Like every translation unit of the program, the one that includes this header must be
/// built with the same `-march` and `IPU_SIMD` as the others (see `IPU_SIMD`). Where they
/// would select different instruction sets, the kernels' names differ (`IPU_SIMD_NAMESPACE`),
/// and the program does not link. With CMake, for example:
///
/// ```cmake
/// add_library(my_ipu_kernels STATIC ipu_kernels.cpp)   # #include <ipu/kernels/instantiate.hpp>
/// target_link_libraries(my_ipu_kernels PUBLIC ipu::ipu)
/// target_compile_definitions(my_ipu_kernels PUBLIC IPU_EXTERN_KERNELS)
/// target_link_libraries(my_program PRIVATE my_ipu_kernels)
/// ```

#include <ipu/kernels/packed_conv.hpp>

namespace ipu::kernels {
inline namespace IPU_SIMD_NAMESPACE {

template class packed_conv<float>;
template class packed_conv<f16>;

}  // namespace IPU_SIMD_NAMESPACE
}  // namespace ipu::kernels
