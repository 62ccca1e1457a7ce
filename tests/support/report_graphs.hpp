// The small residual network the report tests read back: whole on one IPU, or its second half
// on IPU 1 (which then holds copies of IPU 0's outputs), so that each IPU has steps of its own.
#pragma once

#include <ipu/ipu.hpp>

namespace ipu_test::report_graphs {

namespace nn = ipu::nn;

inline constexpr auto block = nn::conv<16, 1> | nn::batch_norm | nn::relu | nn::conv<16, 3> | nn::batch_norm;
inline constexpr auto head = ipu::input<ipu::f16, 2, 16, 16, 8> | nn::conv<16, 3> | nn::relu | nn::residual(block) | nn::relu;
inline constexpr auto tail = nn::residual(block) | nn::relu | nn::global_avg_pool | nn::dense<10>;

using split_t = decltype(head | ipu::on<1>(tail));  ///< the tail on IPU 1
using whole_t = decltype(head | tail);              ///< all on one IPU

}  // namespace ipu_test::report_graphs
