// A training step on the host: forward in training mode, softmax cross-entropy, backward and
// an SGD update with momentum, for ResNet-50 and ResNeXt-50 32x4d at micro-batch 8, 224x224x3,
// f32. Counter: images per second measured here.
//
// With PyTorch's C++ library (Debian's libtorch-dev; configure with -DIPU_BENCH_TORCH=ON, as
// scripts/run-benchmarks does), the same step of the same network races it: the same weights,
// batch, labels, loss, optimiser and threads, the graph's node table run with ATen's functions
// (NCHW; TensorFlow's SAME padding as explicit padding) and its autograd. Its benchmarks carry
// the relative difference of the two implementations' first losses (`loss_agreement`), which
// shows that they compute the same step.
//
// Both implementations allocate a step's buffers and free them every step. glibc returns large
// freed blocks to the system (mmap, then trimming), and each step then faults all their pages
// in again: on a 2-CPU EPYC with AVX-512, libtorch's ResNet-50 step took 4.5 to 5.9 s so, and
// 1.05 s without the faults (ipu's 2.45 s and 2.3 s), and its times depended on what ran before.
// The program keeps freed memory in the process for both, as a caching allocator would
// (PyTorch's performance tuning guide recommends jemalloc or TCMalloc on CPUs).
//
//   bench_training --benchmark_filter=resnet50     # one network
//   bench_training --benchmark_min_time=1          # steadier figures

#include "bench_common.hpp"

#include <ipu/ipu.hpp>

#include <benchmark/benchmark.h>

#if IPU_BENCH_HAVE_TORCH
#include <torch/torch.h>
#endif

#include <cmath>
#include <cstdint>
#include <random>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <stdexcept>
#include <string>
#include <vector>

namespace {

#if defined(__GLIBC__)
/// Freed memory stays in the process (see the file comment): no block is mmap'ed, and the heap
/// is never trimmed.
const bool keeps_freed_memory = mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, -1) == 1;
#endif

constexpr double learning_rate = 0.01, momentum = 0.9;
constexpr ipu::train_options sgd_momentum{.optimizer = ipu::sgd{.learning_rate = learning_rate, .momentum = momentum}};

/// The batch every implementation trains on: uniform images in [-1, 1) and labels of 1,000
/// classes, from a fixed seed.
template <class G>
struct batch {
  std::vector<float> images;
  std::vector<std::int32_t> labels;

  batch() : images(static_cast<std::size_t>(ipu::node_table_v<G>[0].out.elements())), labels(static_cast<std::size_t>(ipu::batch_size_v<G>)) {
    std::mt19937 rng(1);
    for (float& v : images) v = std::uniform_real_distribution<float>(-1, 1)(rng);
    for (auto& l : labels) l = static_cast<std::int32_t>(rng() % 1000);
  }
};

/// The weights both implementations start from.
template <class G>
const ipu::weights<G>& initial_weights() {
  static const ipu::weights<G> w = ipu::weights<G>::random(42);
  return w;
}

template <class G>
ipu::trainer<G, ipu::mk2, sgd_momentum> make_trainer() {
  return ipu::trainer<G, ipu::mk2, sgd_momentum>{initial_weights<G>(), {ipu_bench::threads(), 0}};
}

/// ipu's trainer of `G` and its batch, made at the benchmark's first repetition and kept, as
/// bench_network keeps its engines and libtorch keeps its thread pool: its first step, which
/// touches every buffer, is not timed, as PyTorch's. The weights go on training from one
/// repetition to the next; each step's work does not depend on them.
template <class G>
struct ipu_training {
  batch<G> b;
  ipu::trainer<G, ipu::mk2, sgd_momentum> trainer = make_trainer<G>();

  ipu_training() { trainer.step(b.images, b.labels); }
  static ipu_training& kept() {
    static ipu_training t;
    return t;
  }
};

template <class G>
void training_step(benchmark::State& state) {
  auto& [b, trainer] = ipu_training<G>::kept();
  for (auto _ : state) benchmark::DoNotOptimize(trainer.step(b.images, b.labels));
  const double images = static_cast<double>(ipu::batch_size_v<G>);
  state.counters["images_per_second"] = benchmark::Counter(images, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["host_threads"] = trainer.threads();
}

#if IPU_BENCH_HAVE_TORCH
/// Graph `G` as ATen runs it (see the file comment), from the weights `w`: HWIO convolution
/// kernels become OIHW, dense kernels `[in, out]` become `[out, in]`. Handles the ops of the
/// ResNet and ResNeXt models; another op is an `std::invalid_argument`.
template <class G>
class torch_net {
 public:
  explicit torch_net(const ipu::weights<G>& w) : layers_(table().size()) {
    for (const ipu::layer_weights& l : w) {
      const ipu::node& n = table()[static_cast<std::size_t>(l.node_index())];
      layer& t = layers_[static_cast<std::size_t>(l.node_index())];
      if (n.kind == ipu::op_of<ipu::ops::conv>) {
        const auto kernel = from(l["kernel"], {n.layer.kernel.h, n.layer.kernel.w, n.in.channels() / n.layer.groups, n.layer.filters});
        t.weight = trainable(kernel.permute({3, 2, 0, 1}));
        if (n.layer.bias) t.bias = trainable(from(l["bias"], {n.layer.filters}));
      } else if (n.kind == ipu::op_of<ipu::ops::dense>) {
        t.weight = trainable(from(l["kernel"], {n.in.channels(), n.layer.filters}).t());
        t.bias = trainable(from(l["bias"], {n.layer.filters}));
      } else if (n.kind == ipu::op_of<ipu::ops::batch_norm>) {
        t.weight = trainable(from(l["scale"], {n.in.channels()}));
        t.bias = trainable(from(l["shift"], {n.in.channels()}));
        t.mean = from(l["mean"], {n.in.channels()});
        t.variance = from(l["variance"], {n.in.channels()});
      }
    }
  }

  /// The trainable tensors.
  std::vector<torch::Tensor> parameters() const {
    std::vector<torch::Tensor> p;
    for (const layer& l : layers_)
      for (const torch::Tensor& t : {l.weight, l.bias})
        if (t.defined()) p.push_back(t);
    return p;
  }

  /// The logits of `images` (NHWC, as the graph's input).
  torch::Tensor forward(const torch::Tensor& images) {
    std::vector<torch::Tensor> out(table().size());
    out[0] = images.permute({0, 3, 1, 2}).contiguous();
    for (std::size_t j = 1; j < table().size(); ++j) {
      const ipu::node& n = table()[j];
      const torch::Tensor& x = out[static_cast<std::size_t>(n.input())];
      layer& t = layers_[j];
      if (n.kind == ipu::op_of<ipu::ops::conv>) {
        const auto [padded, pad] = pad_window(x, n, 0.0);
        out[j] = torch::conv2d(padded, t.weight, t.bias, {n.layer.stride.h, n.layer.stride.w}, pad,
                               {n.layer.dilation.h, n.layer.dilation.w}, n.layer.groups);
      } else if (n.kind == ipu::op_of<ipu::ops::batch_norm>) {
        // PyTorch's momentum weighs the batch: TensorFlow's 0.997 is its 0.003.
        out[j] = torch::batch_norm(x, t.weight, t.bias, t.mean, t.variance, true, 1 - 0.997, 1e-5, false);
      } else if (n.kind == ipu::op_of<ipu::ops::relu>) {
        out[j] = torch::relu(x);
      } else if (n.kind == ipu::op_of<ipu::ops::max_pool>) {
        const auto [padded, pad] = pad_window(x, n, -INFINITY);
        out[j] = torch::max_pool2d(padded, {n.layer.kernel.h, n.layer.kernel.w}, {n.layer.stride.h, n.layer.stride.w}, pad);
      } else if (n.kind == ipu::op_of<ipu::ops::add>) {
        out[j] = x + out[static_cast<std::size_t>(n.inputs[1])];
      } else if (n.kind == ipu::op_of<ipu::ops::global_avg_pool>) {
        out[j] = x.mean({2, 3});
      } else if (n.kind == ipu::op_of<ipu::ops::dense>) {
        out[j] = torch::linear(x, t.weight, t.bias);
      } else {
        throw std::invalid_argument("bench_training: no ATen translation of " + std::string(ipu::name_of(n.kind)));
      }
    }
    return out.back();
  }

 private:
  struct layer {
    torch::Tensor weight, bias, mean, variance;
  };

  static constexpr const auto& table() noexcept { return ipu::node_table_v<G>; }

  static torch::Tensor from(std::span<const float> values, std::vector<std::int64_t> shape) {
    return torch::from_blob(const_cast<float*>(values.data()), shape, torch::kFloat).clone();
  }
  static torch::Tensor trainable(const torch::Tensor& t) { return t.contiguous().set_requires_grad(true); }

  /// `x` padded for node `n`'s window as the graph pads it, and the padding left to the
  /// operation: the same amount on both sides of an axis is passed on, other amounts are
  /// added to `x` with `value`.
  static std::pair<torch::Tensor, std::vector<std::int64_t>> pad_window(const torch::Tensor& x, const ipu::node& n, double value) {
    const auto g = ipu::kernels::window_geometry::of(n.in.dim[1], n.in.dim[2], n.out.dim[1], n.out.dim[2], n.layer.kernel,
                                                     n.layer.stride, n.layer.dilation, n.layer.pad);
    if (g.pad_top == g.pad_bottom && g.pad_left == g.pad_right) return {x, {g.pad_top, g.pad_left}};
    return {torch::constant_pad_nd(x, {g.pad_left, g.pad_right, g.pad_top, g.pad_bottom}, value), {0, 0}};
  }

  std::vector<layer> layers_;
};

/// The step of `G` in PyTorch, on the threads ipu uses: the network, its optimiser and the
/// batch, made at the benchmark's first repetition and kept, as `ipu_training`.
template <class G>
class torch_training {
 public:
  float step() {
    optimiser_.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(net_.forward(images_), labels_);
    loss.backward();
    optimiser_.step();
    return loss.item<float>();
  }
  /// The relative difference of the first step's loss from ipu's, from the same weights and batch.
  double loss_agreement() const noexcept { return agreement_; }
  /// The threads ATen runs on.
  int threads() const noexcept { return threads_; }

  static torch_training& kept() {
    static torch_training t;
    return t;
  }

 private:
  static constexpr ipu::shape in = ipu::node_table_v<G>[0].out;

  // The first step against ipu's (ipu's trainer gone before the timed steps); then one more
  // step untimed, with ipu's memory free again.
  torch_training() {
    const float first = step();
    const float ipu_first = make_trainer<G>().backward(b_.images, b_.labels);
    agreement_ = std::abs(first - ipu_first) / std::abs(ipu_first);
    step();
  }

  int threads_ = (torch::set_num_threads(static_cast<int>(ipu_bench::threads())), torch::get_num_threads());
  torch_net<G> net_{initial_weights<G>()};
  torch::optim::SGD optimiser_{net_.parameters(), torch::optim::SGDOptions(learning_rate).momentum(momentum)};
  batch<G> b_;
  torch::Tensor images_ = torch::from_blob(b_.images.data(), {in.dim[0], in.dim[1], in.dim[2], in.dim[3]}, torch::kFloat);
  torch::Tensor labels_ =
      torch::from_blob(b_.labels.data(), {static_cast<std::int64_t>(b_.labels.size())}, torch::kInt).to(torch::kLong);
  double agreement_ = 0;
};

template <class G>
void torch_training_step(benchmark::State& state) {
  torch_training<G>& t = torch_training<G>::kept();
  for (auto _ : state) benchmark::DoNotOptimize(t.step());
  const double images_count = static_cast<double>(ipu::batch_size_v<G>);
  state.counters["images_per_second"] = benchmark::Counter(images_count, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["host_threads"] = t.threads();
  state.counters["loss_agreement"] = t.loss_agreement();
}
#endif

}  // namespace

BENCHMARK(training_step<ipu::models::resnet50<ipu::f32, 8>>)
    ->Name("resnet50/f32/batch8")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(training_step<ipu::models::resnext50_32x4d<ipu::f32, 8>>)
    ->Name("resnext50_32x4d/f32/batch8")->Unit(benchmark::kMillisecond)->UseRealTime();
#if IPU_BENCH_HAVE_TORCH
BENCHMARK(torch_training_step<ipu::models::resnet50<ipu::f32, 8>>)
    ->Name("resnet50/f32/batch8/libtorch")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(torch_training_step<ipu::models::resnext50_32x4d<ipu::f32, 8>>)
    ->Name("resnext50_32x4d/f32/batch8/libtorch")->Unit(benchmark::kMillisecond)->UseRealTime();
#endif
