// Data-parallel training over processes with MPI: each process is one replica of a small CNN,
// training on its share of Fashion-MNIST's images (Debian's dataset-fashion-mnist), and the
// replicas' gradients are summed with MPI_Allreduce once per step (ipu/distributed/mpi.hpp), so
// every process holds the same weights. Each then scores its share of the test images, and
// the scores are summed over the processes.
//
//   mpirun -np 2 --oversubscribe <build>/bin/mpi_training [--train-samples N] [--epochs N] ...
//
// (add --allow-run-as-root as root). One process is a run without replicas.
#include <ipu/data/idx.hpp>
#include <ipu/data/pipeline.hpp>
#include <ipu/distributed/mpi.hpp>
#include <ipu/ipu.hpp>
#include <ipu/model.hpp>

#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <span>
#include <string>
#include <vector>

#ifndef IPU_FASHION_MNIST_DIR
#define IPU_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#endif

namespace nn = ipu::nn;

namespace {

constexpr std::int64_t micro_batch = 16;  // per replica and pass

using net_t = std::remove_cvref_t<decltype(ipu::input<float, micro_batch, 28, 28, 1>
    | nn::conv<16, 3> | nn::batch_norm | nn::relu | nn::max_pool<2, 2>    // 14x14
    | nn::conv<32, 3> | nn::batch_norm | nn::relu | nn::max_pool<2, 2>    // 7x7
    | nn::flatten | nn::dense<10> | nn::softmax)>;
constexpr ipu::train_options opts{.optimizer = ipu::adam{.learning_rate = 0.002}};
using trainer_t = ipu::trainer<net_t, ipu::mk2, opts>;
static_assert(ipu::require_fit<ipu::training<net_t, opts>, ipu::mk2>);

struct settings {
  std::filesystem::path data = IPU_FASHION_MNIST_DIR;
  std::int64_t train_samples = 60000, test_samples = 10000;
  int epochs = 1;
  double min_accuracy = 0;
};

/// Reads `name` from `dir`, which must hold at least `count` samples.
ipu::data::idx_array read(const std::filesystem::path& dir, const char* name, std::int64_t count) {
  ipu::data::idx_array a = ipu::data::read_idx(dir / name);
  if (a.shape().empty() || a.shape()[0] < count)
    throw ipu::data::format_error((dir / name).string() + ": fewer than " + std::to_string(count) + " samples");
  return a;
}

bool parse(int argc, char** argv, settings& s) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return false;
    const char* value = argv[++i];
    char* end = nullptr;
    if (arg == "--data") {
      s.data = value;
    } else if (arg == "--train-samples") {
      s.train_samples = std::strtoll(value, &end, 10);
      if (*end != '\0' || s.train_samples < micro_batch || s.train_samples > 60000) return false;
    } else if (arg == "--test-samples") {
      s.test_samples = std::strtoll(value, &end, 10);
      if (*end != '\0' || s.test_samples < 1 || s.test_samples > 10000) return false;
    } else if (arg == "--epochs") {
      s.epochs = static_cast<int>(std::strtol(value, &end, 10));
      if (*end != '\0' || s.epochs < 1 || s.epochs > 20) return false;
    } else if (arg == "--min-accuracy") {
      s.min_accuracy = std::strtod(value, &end);
      if (*end != '\0' || !(s.min_accuracy >= 0 && s.min_accuracy <= 1)) return false;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  ipu::mpi::environment mpi(argc, argv);
  ipu::mpi::reducer replicas;
  const int rank = replicas.rank(), size = replicas.replicas();
  settings s;
  if (!parse(argc, argv, s)) {
    if (rank == 0)
      std::cerr << "usage: mpi_training [--data DIR] [--train-samples N] [--test-samples N] [--epochs N] [--min-accuracy A]\n";
    return 2;
  }
  try {
    const std::vector<float> x = read(s.data, "train-images-idx3-ubyte", s.train_samples).to_floats();
    const ipu::data::idx_array train_labels = read(s.data, "train-labels-idx1-ubyte", s.train_samples);
    const std::span<const std::uint8_t> y = train_labels.bytes();
    // Every rank builds its trainer from its own seed: rank 0's weights are broadcast to all.
    trainer_t trainer(ipu::weights<net_t>::random(1 + static_cast<std::uint64_t>(rank)), {.threads = 1, .reducer = &replicas});
    if (rank == 0)
      std::cout << "mpi_training: " << size << (size == 1 ? " process, " : " processes, ") << trainer.batches().to_string() << '\n';

    // Each step takes the next `per_step` samples of the epoch's order, the same on every rank;
    // rank r trains on the r-th block of them.
    constexpr std::int64_t sample = 28 * 28;
    const std::int64_t per_step = trainer.batches().per_step();
    std::vector<float> xb(static_cast<std::size_t>(micro_batch * sample));
    std::vector<std::int32_t> yb(static_cast<std::size_t>(micro_batch));
    for (int epoch = 0; epoch < s.epochs; ++epoch) {
      const std::vector<std::int64_t> order = ipu::data::shuffled(s.train_samples, /*seed*/ 7, epoch);
      double loss = 0;
      const std::int64_t steps = s.train_samples / per_step;
      for (std::int64_t step = 0; step < steps; ++step) {
        for (std::int64_t i = 0; i < micro_batch; ++i) {
          const std::int64_t k = order[static_cast<std::size_t>(step * per_step + rank * micro_batch + i)];
          for (std::int64_t p = 0; p < sample; ++p)
            xb[static_cast<std::size_t>(i * sample + p)] = x[static_cast<std::size_t>(k * sample + p)] / 255.0f;
          yb[static_cast<std::size_t>(i)] = y[static_cast<std::size_t>(k)];
        }
        loss += trainer.step(xb, yb);
      }
      if (rank == 0)
        std::cout << "epoch " << epoch + 1 << ": " << steps << " steps, mean loss " << loss / static_cast<double>(steps) << '\n';
    }

    // Inference is data-parallel too: each rank scores its share of the test images with the
    // same weights, and the sums of the loss and of the right answers are added over the ranks.
    const std::vector<float> xt = read(s.data, "t10k-images-idx3-ubyte", s.test_samples).to_floats();
    const ipu::data::idx_array test_labels = read(s.data, "t10k-labels-idx1-ubyte", s.test_samples);
    const std::span<const std::uint8_t> yt = test_labels.bytes();
    const std::int64_t first = s.test_samples * rank / size, last = s.test_samples * (rank + 1) / size;
    ipu::model<net_t, ipu::mk2, opts> scorer(trainer.weights(), {.threads = 1});
    std::vector<float> scaled(static_cast<std::size_t>((last - first) * sample));
    for (std::size_t i = 0; i < scaled.size(); ++i) scaled[i] = xt[static_cast<std::size_t>(first * sample) + i] / 255.0f;
    const std::vector<std::int32_t> labels(yt.begin() + first, yt.begin() + last);
    const ipu::metrics m = scorer.evaluate(scaled, labels);
    const auto count = static_cast<double>(last - first);
    std::vector<double> sums{m.loss * count, m.accuracy * count, count};
    replicas.sum(std::span<double>(sums));
    if (rank == 0) {
      const double accuracy = sums[1] / sums[2];
      std::cout << "Test accuracy: " << 100 * accuracy << "% of " << s.test_samples << " images (" << size
                << (size == 1 ? " process" : " processes, each on its share") << "), mean loss " << sums[0] / sums[2] << '\n';
      if (accuracy < s.min_accuracy) {
        std::cerr << "mpi_training: test accuracy " << accuracy << " is below --min-accuracy " << s.min_accuracy << '\n';
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "mpi_training (rank " << rank << "): " << e.what() << '\n';
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return 0;
}
