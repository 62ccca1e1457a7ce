#pragma once
/// \file
/// `models::padding_convention`: whether a zoo model pads its windows as TensorFlow's SAME
/// (Keras' applications, the TensorFlow seeds: the default) or as PyTorch's `(k - 1) / 2` on
/// every side (torchvision's models), and `models::detail::padded_as`, which applies it.

#include <ipu/graph/layers.hpp>

#include <cstdint>

namespace ipu::models {

/// How a zoo model pads its convolutions and pooling windows.
///
/// At the published image sizes both give the same shapes, so the same parameters and
/// multiply-accumulates. They read different pixels where a strided window over an even
/// extent needs an odd total of padding: SAME puts the extra row (and column) after the image,
/// PyTorch pads `(k - 1) / 2` before and after. A 3x3/2 convolution over 56 rows reads rows
/// 0 to 2 for its first output under SAME, rows -1 to 1 under PyTorch's rule. Weights trained
/// under one convention give other outputs under the other, so a model ported with its
/// weights takes its framework's convention.
enum class padding_convention : std::uint8_t {
  tensorflow,  ///< TensorFlow's SAME (`ipu::padding`'s default; Keras' `padding="same"`)
  pytorch,     ///< `(k - 1) / 2` on every side of a `k x k` window (torchvision's models)
};

namespace detail {

/// `layer`, a convolution or pooling layer, padded under convention `P`: unchanged for
/// TensorFlow's SAME and for a 1x1 window (both pad nothing), else `(kh - 1) / 2` rows above
/// and below and `(kw - 1) / 2` columns left and right.
template <padding_convention P, class Layer>
constexpr auto padded_as(Layer layer) noexcept {
  constexpr hw k = Layer::params.kernel;
  if constexpr (P == padding_convention::pytorch && k != hw{1, 1}) {
    return layer.padded(nn::pad<(k.h - 1) / 2, (k.h - 1) / 2, (k.w - 1) / 2, (k.w - 1) / 2>);
  } else {
    return layer;
  }
}

}  // namespace detail

}  // namespace ipu::models
