#pragma once
/// \file
/// The layers of `ipu::nn`, and what makes a type one. Each layer is an empty type naming its
/// op (`op_type`) and, where it has any, its hyper-parameters (`params`); `nn::conv<64, 7, 2>`
/// is a value of such a type, ready to compose with `|`. The library's layers are defined
/// beside their ops, in `ipu/ops/<op>.hpp`; a user-defined op's layer is written the same way
/// in user code.

#include <ipu/graph/node.hpp>
#include <ipu/ops/adaptive_avg_pool.hpp>
#include <ipu/ops/add.hpp>
#include <ipu/ops/batch_norm.hpp>
#include <ipu/ops/concat.hpp>
#include <ipu/ops/conv.hpp>
#include <ipu/ops/dense.hpp>
#include <ipu/ops/flatten.hpp>
#include <ipu/ops/gelu.hpp>
#include <ipu/ops/gelu_tanh.hpp>
#include <ipu/ops/global_avg_pool.hpp>
#include <ipu/ops/global_max_pool.hpp>
#include <ipu/ops/hard_sigmoid.hpp>
#include <ipu/ops/hard_swish.hpp>
#include <ipu/ops/input.hpp>
#include <ipu/ops/leaky_relu.hpp>
#include <ipu/ops/pool.hpp>
#include <ipu/ops/relu.hpp>
#include <ipu/ops/relu6.hpp>
#include <ipu/ops/reshape.hpp>
#include <ipu/ops/sigmoid.hpp>
#include <ipu/ops/silu.hpp>
#include <ipu/ops/softmax.hpp>
#include <ipu/ops/tanh.hpp>

#include <concepts>
#include <type_traits>

namespace ipu {

/// A primitive layer: an empty type that names its op as `T::op_type` and states its
/// hyper-parameters, if it has any, as `T::params`.
template <class T>
concept Layer = std::is_empty_v<T> && requires { typename T::op_type; } &&
                (!requires { T::params; } || requires {
                  { T::params } -> std::convertible_to<layer_params>;
                });

/// The hyper-parameters of layer `T`: `T::params`, or the defaults.
template <Layer T>
inline constexpr layer_params layer_params_of = [] {
  if constexpr (requires { T::params; }) {
    return layer_params{T::params};
  } else {
    return layer_params{};
  }
}();

}  // namespace ipu
