// Helpers for the training tests: the loss of a graph computed by the independent reference
// in double (training-mode batch norm), and its gradients by central finite differences.
#pragma once

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace ipu_test {

/// A layer's tensors in double, by name, as the reference reads them.
struct double_layer {
  int node = 0;
  std::vector<std::string> names;
  std::vector<std::vector<double>> values;
  std::vector<bool> trainable;

  std::vector<double> get(const std::string& name) const {
    for (std::size_t k = 0; k < names.size(); ++k)
      if (names[k] == name) return values[k];
    return {};
  }
};

/// `w` in double.
template <class G>
std::vector<double_layer> in_double(const ipu::weights<G>& w) {
  std::vector<double_layer> r;
  for (const ipu::layer_weights& l : w) {
    double_layer d{l.node_index(), {}, {}, {}};
    for (const ipu::weight_tensor& t : l.tensors()) {
      d.names.emplace_back(t.name);
      d.values.emplace_back(t.values.begin(), t.values.end());
      d.trainable.push_back(t.trainable);
    }
    r.push_back(std::move(d));
  }
  return r;
}

/// `count` samples of a synthetic task: `side` x `side` images with a bright 2x2 square in
/// quadrant `label` (0 to 3), noise of standard deviation 0.5 everywhere.
template <class T>
void quadrant_samples(std::mt19937_64& rng, int count, int side, std::vector<T>& images, std::vector<std::int32_t>& labels) {
  std::normal_distribution<double> noise(0.0, 0.5);
  images.assign(static_cast<std::size_t>(count * side * side), T{});
  labels.resize(static_cast<std::size_t>(count));
  for (int b = 0; b < count; ++b) {
    const int label = static_cast<int>(rng() % 4);
    labels[static_cast<std::size_t>(b)] = label;
    const int top = label / 2 * (side / 2) + 1, left = label % 2 * (side / 2);
    for (int y = 0; y < side; ++y)
      for (int x = 0; x < side; ++x) {
        const bool lit = y >= top && y < top + 2 && x >= left && x < left + 2;
        images[static_cast<std::size_t>((b * side + y) * side + x)] = static_cast<T>((lit ? 1.0 : 0.0) + noise(rng));
      }
  }
}

/// The classifier of the quadrant task that the training loops' tests train (model.cpp,
/// estimator.cpp): 6x6 images, batches of 8, 4 classes, with batch norm and dropout.
constexpr int quadrant_side = 6;
using quadrant_net = std::remove_cvref_t<decltype(ipu::input<float, 8, quadrant_side, quadrant_side, 1>
                                                  | ipu::nn::conv<8, 3> | ipu::nn::batch_norm | ipu::nn::relu
                                                  | ipu::nn::max_pool<2, 2> | ipu::nn::flatten | ipu::nn::dropout<0.2>
                                                  | ipu::nn::dense<4> | ipu::nn::softmax)>;

/// `count` samples of the quadrant task drawn from `seed`: `x` the images one after another,
/// `y` their classes.
struct quadrant_set {
  std::vector<float> x;
  std::vector<std::int32_t> y;
  quadrant_set(int count, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    quadrant_samples(rng, count, quadrant_side, x, y);
  }
};

/// A network without batch norm, at any batch: a sample's gradient does not depend on the other
/// samples of its batch, so micro-batches, replicas and one large batch give the same step.
template <std::int64_t Batch>
constexpr auto plain_net = ipu::input<float, Batch, 6, 6, 3> | ipu::nn::conv<8, 3> | ipu::nn::relu
    | ipu::nn::residual(ipu::nn::conv<8, 1> | ipu::nn::relu) | ipu::nn::max_pool<2, 2> | ipu::nn::flatten
    | ipu::nn::dense<4>;

/// `n` values drawn from a standard normal distribution seeded with `seed`.
inline std::vector<float> normal_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

/// `w`'s values as the weights of `H`, a graph of the same layers (at another batch).
template <class H, class G>
ipu::weights<H> weights_as(const ipu::weights<G>& w) {
  ipu::weights<H> r;
  for (std::size_t l = 0; l < w.size(); ++l)
    for (const ipu::weight_tensor& t : w[l].tensors()) std::ranges::copy(w[l][t.name], r[l][t.name].begin());
  return r;
}

/// Deterministic labels in `[0, classes)`.
inline std::vector<std::int32_t> random_labels(std::size_t count, std::int64_t classes, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::int32_t> labels(count);
  for (auto& l : labels) l = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(classes));
  return labels;
}

/// The training loss of `G` in double: the reference forward (batch norm with the batch's
/// statistics) of `input` with weights `w`, then the mean softmax cross-entropy against
/// `labels` (of the logits, or of the probabilities when the graph ends in a softmax), or the
/// mean squared error against `targets`; the dropouts drop what `keeps` says.
template <class G>
double reference_loss(const std::vector<double>& input, const std::vector<double_layer>& w,
                      const std::vector<std::int32_t>& labels, const std::vector<float>& targets = {},
                      const ref::dropout_mask& keeps = {}) {
  const std::vector<double> y = ref::forward(
      ipu::node_table_v<G>, input,
      [&](int j) {
        const auto layer = std::find_if(w.begin(), w.end(), [&](const double_layer& l) { return l.node == j; });
        ref::params p;
        p.kernel = layer->get("kernel");
        p.bias = layer->get("bias");
        p.scale = layer->get("scale");
        p.shift = layer->get("shift");
        p.mean = layer->get("mean");
        p.variance = layer->get("variance");
        return p;
      },
      {}, true, keeps);
  if (!targets.empty()) {
    double sum = 0;
    for (std::size_t e = 0; e < y.size(); ++e) sum += (y[e] - targets[e]) * (y[e] - targets[e]);
    return sum / static_cast<double>(y.size());
  }
  const auto& last = ipu::node_table_v<G>.back();
  const std::size_t classes = static_cast<std::size_t>(last.out.channels()), batch = y.size() / classes;
  const bool probabilities = last.kind == ipu::op_of<ipu::ops::softmax> && !last.dropout[0].active();
  double sum = 0;
  for (std::size_t b = 0; b < batch; ++b) {
    const double* row = y.data() + b * classes;
    const std::size_t label = static_cast<std::size_t>(labels[b]);
    if (probabilities) {
      sum -= std::log(row[label]);
    } else {
      const double m = *std::max_element(row, row + classes);
      double e = 0;
      for (std::size_t k = 0; k < classes; ++k) e += std::exp(row[k] - m);
      sum += std::log(e) + m - row[label];
    }
  }
  return sum / static_cast<double>(batch);
}

/// The worst error of the trainer's weight gradients `grads` against central finite
/// differences of `reference_loss` in double, over up to `samples` elements of each trainable
/// tensor: `|g - fd| / max(|fd|, 1e-2 * the tensor's largest |fd|, 1e-6)`. `where` receives the
/// layer and tensor of the worst; the dropouts drop what `keeps` says.
template <class G>
double gradient_error(const ipu::weights<G>& w, const ipu::weights<G>& grads, const std::vector<double>& input,
                      const std::vector<std::int32_t>& labels, const std::vector<float>& targets, std::string& where,
                      std::size_t samples = 24, const ref::dropout_mask& keeps = {}) {
  std::vector<double_layer> d = in_double(w);
  double worst = 0;
  for (std::size_t l = 0; l < d.size(); ++l)
    for (std::size_t k = 0; k < d[l].names.size(); ++k) {
      if (!d[l].trainable[k]) continue;
      std::vector<double>& v = d[l].values[k];
      const std::span<const float> g = grads[l][d[l].names[k]];
      const std::size_t step = std::max<std::size_t>(1, v.size() / samples);
      std::vector<std::pair<double, double>> pairs;  // (finite difference, trainer)
      double largest = 0;
      for (std::size_t i = 0; i < v.size(); i += step) {
        const double x0 = v[i], h = 1e-6 * std::max(1.0, std::abs(x0));
        v[i] = x0 + h;
        const double up = reference_loss<G>(input, d, labels, targets, keeps);
        v[i] = x0 - h;
        const double down = reference_loss<G>(input, d, labels, targets, keeps);
        v[i] = x0;
        const double fd = (up - down) / (2 * h);
        pairs.emplace_back(fd, static_cast<double>(g[i]));
        largest = std::max(largest, std::abs(fd));
      }
      for (const auto& [fd, got] : pairs) {
        const double err = std::abs(got - fd) / std::max({std::abs(fd), 1e-2 * largest, 1e-6});
        if (err > worst || std::isnan(err)) {
          worst = err;
          where = std::string(grads[l].path()) + "." + d[l].names[k];
        }
      }
    }
  return worst;
}

/// The first tensor of `a` whose bits differ from `b`'s, as `layer.tensor`; empty when every
/// tensor holds the same bits.
template <class G>
std::string first_difference(const ipu::weights<G>& a, const ipu::weights<G>& b) {
  for (std::size_t l = 0; l < a.size(); ++l)
    for (const ipu::weight_tensor& t : a[l].tensors()) {
      const auto other = b[l][t.name];
      if (!std::equal(t.values.begin(), t.values.end(), other.begin(), other.end()))
        return std::string(a[l].path()) + "." + std::string(t.name);
    }
  return {};
}

}  // namespace ipu_test
