#pragma once
/// \file
/// `ops::global_max_pool`: the maximum over height and width, `[N, H, W, C]` to `[N, C]`
/// (Keras' `GlobalMaxPooling2D`, PyTorch's `AdaptiveMaxPool2d(1)` flattened), a NaN never
/// taken over a number as `max_pool`'s (`kernels::maximum`, `kernels::max_pixels`). Planned
/// as `ops::global_avg_pool`: each output element receives its H x W inputs.

#include <ipu/ops/global_avg_pool.hpp>

#include <string_view>

namespace ipu::ops {

/// Global max pooling (`nn::global_max_pool`).
struct global_max_pool : global_pool_base {
  using kernel = global_pool_kernel<true>;  ///< its kernel
  static constexpr std::string_view name = "global_max_pool";  ///< as `nn::global_max_pool` names it
};

}  // namespace ipu::ops

namespace ipu::nn {

/// Maximum over height and width: `[N, H, W, C]` becomes `[N, C]`.
struct global_max_pool_t {
  using op_type = ops::global_max_pool;  ///< its op
};
/// `nn::global_max_pool`: see `global_max_pool_t`.
inline constexpr global_max_pool_t global_max_pool{};

}  // namespace ipu::nn
