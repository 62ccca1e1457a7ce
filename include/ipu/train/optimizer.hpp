#pragma once
/// \file
/// The update rules of `ipu::optimizer` (`ipu/train/options.hpp`), applied to one weight
/// tensor at a time in f32, as the IPU updates f32 master weights; LAMB's norms are summed in
/// double.

#include <ipu/train/options.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ipu {

/// An optimiser's hyper-parameters as the update reads them, with the learning rate of the
/// step.
struct optimizer_step {
  optimizer_kind kind = optimizer_kind::sgd;  ///< the update rule
  float learning_rate = 0;  ///< this step's rate (after the schedule)
  float momentum = 0;       ///< SGD's momentum
  bool nesterov = false;    ///< SGD's Nesterov momentum
  float beta1 = 0;          ///< first moment's decay
  float beta2 = 0;          ///< second moment's decay
  float epsilon = 0;        ///< added to the second moment's root
  float weight_decay = 0;   ///< L2 penalty or decoupled decay
  std::int64_t t = 1;       ///< the step, from 1 (the moments' bias correction)

  /// The hyper-parameters of `o` at learning rate `rate`, step `t` (from 1).
  static optimizer_step of(const optimizer& o, double rate, std::int64_t t) noexcept {
    return {o.kind,
            static_cast<float>(rate),
            static_cast<float>(o.momentum.value()),
            o.nesterov,
            static_cast<float>(o.beta1.value()),
            static_cast<float>(o.beta2.value()),
            static_cast<float>(o.epsilon.value()),
            static_cast<float>(o.weight_decay.value()),
            t};
  }
};

/// Updates weights `w` by gradient `g` with the optimiser's state `s0` (SGD's velocity, the
/// first moment) and `s1` (the second moment), each as long as `w` (empty where the optimiser
/// keeps none), as `o.kind` says (`ipu/train/options.hpp` states each rule).
inline void apply_update(const optimizer_step& o, std::span<float> w, std::span<const float> g, std::span<float> s0,
                         std::span<float> s1) {
  const std::size_t n = w.size();
  if (o.kind == optimizer_kind::sgd) {
    for (std::size_t i = 0; i < n; ++i) {
      const float grad = g[i] + o.weight_decay * w[i];
      if (s0.empty()) {
        w[i] -= o.learning_rate * grad;
        continue;
      }
      s0[i] = o.momentum * s0[i] + grad;
      w[i] -= o.learning_rate * (o.nesterov ? grad + o.momentum * s0[i] : s0[i]);
    }
    return;
  }
  const double t = static_cast<double>(o.t);
  const float c1 = static_cast<float>(1 - std::pow(static_cast<double>(o.beta1), t));
  const float c2 = static_cast<float>(1 - std::pow(static_cast<double>(o.beta2), t));
  const bool l2 = o.kind == optimizer_kind::adam;
  for (std::size_t i = 0; i < n; ++i) {
    const float grad = l2 ? g[i] + o.weight_decay * w[i] : g[i];
    s0[i] = o.beta1 * s0[i] + (1 - o.beta1) * grad;
    s1[i] = o.beta2 * s1[i] + (1 - o.beta2) * grad * grad;
  }
  const auto step = [&](std::size_t i) {  // Adam's direction, with decoupled decay for AdamW and LAMB
    const float r = s0[i] / c1 / (std::sqrt(s1[i] / c2) + o.epsilon);
    return l2 ? r : r + o.weight_decay * w[i];
  };
  float trust = 1;
  if (o.kind == optimizer_kind::lamb) {
    double ww = 0, rr = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double r = step(i);
      ww += static_cast<double>(w[i]) * w[i];
      rr += r * r;
    }
    if (ww > 0 && rr > 0) trust = static_cast<float>(std::sqrt(ww) / std::sqrt(rr));
  }
  for (std::size_t i = 0; i < n; ++i) w[i] -= o.learning_rate * trust * step(i);
}

}  // namespace ipu
