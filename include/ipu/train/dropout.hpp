#pragma once
/// \file
/// Dropout in a training step (`nn::dropout`, `input_dropout`), as TensorFlow defines it
/// (`tf.nn.dropout`: each value dropped with probability `rate`, the others multiplied by
/// `1 / (1 - rate)`) and as Graphcore's IPU runs it: the mask is not stored between the forward
/// and the backward pass, but drawn again from the same seed (Graphcore, "Targeting the IPU
/// from TensorFlow 1", §1: "our custom dropout op is designed to use less memory by not storing
/// the dropout mask between forward and backward passes").
///
/// The draw of value `i` of dropout `site` in a trainer's step is a function of the trainer's
/// seed, the step, the site and `i` (`dropout_stream`, `dropout_keeps`), not of the order of the
/// work, so the masks are the same on any number of threads, and again for the same seed.

#include <ipu/train/precision.hpp>

#include <cstdint>

namespace ipu {

/// The random stream of dropout `site` (`input_dropout::site`) in training step `step` of a
/// trainer seeded `seed` (`trainer_config::seed`). Streams of stochastic rounding, drawn from
/// the same seed, are other values: this one starts from the seed's complement.
constexpr std::uint64_t dropout_stream(std::uint64_t seed, std::int64_t step, int site) noexcept {
  return detail::mix64(detail::mix64(~seed ^ detail::mix64(static_cast<std::uint64_t>(step))) ^
                       static_cast<std::uint64_t>(site));
}

/// Whether a dropout at `rate` keeps value `i` of its input, for stream `stream`
/// (`dropout_stream`): when `u`, uniform in `[0, 1)` from the top 53 bits of
/// `detail::mix64(stream ^ detail::mix64(i))`, is at least `rate`.
constexpr bool dropout_keeps(std::uint64_t stream, std::int64_t i, double rate) noexcept {
  const std::uint64_t bits = detail::mix64(stream ^ detail::mix64(static_cast<std::uint64_t>(i)));
  return static_cast<double>(bits >> 11) * 0x1p-53 >= rate;
}

/// The factor of the values a dropout at `rate` keeps: `1 / (1 - rate)`, in f32.
constexpr float dropout_scale(double rate) noexcept { return static_cast<float>(1.0 / (1.0 - rate)); }

}  // namespace ipu
