// Trains a small residual CNN on Fashion-MNIST (H. Xiao, K. Rasul and R. Vollgraf, 2017: 60,000
// training and 10,000 test images of clothing, 28x28 grey levels, 10 classes), the real data
// of Debian's dataset-fashion-mnist package, with ipu::model's fit: a progress bar, a
// validation pass on the test images after each epoch, and checkpoints in a model directory.
// Interrupted and started again, it resumes from its latest checkpoint, at the next batch, and
// ends with the weights an uninterrupted run would have.
//
// The data set's published baselines (its benchmark, github.com/zalandoresearch/fashion-mnist):
// 2 convolutions with pooling 87.6-91.6% test accuracy, with batch norm 93.4%. This network
// reaches about 92.7% in 4 epochs, at about 40 s an epoch on two cores.
//
//   IPU_EXAMPLE_TARGET=fashion_mnist scripts/run-example [--epochs N] [--fresh] ...
#include <ipu/data/idx.hpp>
#include <ipu/ipu.hpp>
#include <ipu/model.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
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

constexpr std::int64_t batch = 32;

// Two convolutions with batch norm and pooling, a residual block of two more, a dense layer.
using net_t = std::remove_cvref_t<decltype(ipu::input<float, batch, 28, 28, 1>
    | nn::conv<32, 3> | nn::batch_norm | nn::relu | nn::max_pool<2, 2>                            // 14x14
    | nn::conv<64, 3> | nn::batch_norm | nn::relu | nn::max_pool<2, 2>                            // 7x7
    | nn::residual(nn::conv<64, 3> | nn::batch_norm | nn::relu | nn::conv<64, 3> | nn::batch_norm) | nn::relu
    | nn::flatten | nn::dropout<0.3> | nn::dense<128> | nn::relu | nn::dense<10> | nn::softmax)>;

// Adam; the rate warms up over 100 steps, then falls along a cosine over the full run's 4
// epochs of 60,000 images.
constexpr int full_epochs = 4;
constexpr ipu::train_options opts{.optimizer = ipu::adam{.learning_rate = 0.002},
                                  .schedule = ipu::cosine_decay(60000 / batch * full_epochs, 100)};
using model_t = ipu::model<net_t, ipu::mk2, opts>;

// The training on one Mk2, proved to fit at compile time: weights, Adam's moments, the stash
// of activations and the gradients.
static_assert(ipu::require_fit<ipu::training<net_t, opts>, ipu::mk2>);

struct settings {
  std::filesystem::path data = IPU_FASHION_MNIST_DIR;
  std::filesystem::path model_dir = "fashion_mnist_model";
  int epochs = full_epochs;
  std::int64_t train_samples = 60000, test_samples = 10000;
  unsigned threads = 0;
  bool fresh = false;
  double min_accuracy = 0;
};

/// Images scaled to [0, 1] then standardised with the training images' mean and deviation.
std::vector<float> standardised(const ipu::data::idx_array& images, std::int64_t count, double mean, double deviation) {
  const std::vector<float> pixels = images.to_floats();
  std::vector<float> out(static_cast<std::size_t>(count * 28 * 28));
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<float>((pixels[i] / 255.0 - mean) / deviation);
  return out;
}

/// The first `count` labels.
std::vector<std::int32_t> labels_of(const ipu::data::idx_array& labels, std::int64_t count) {
  const std::span<const std::uint8_t> bytes = labels.bytes();
  return {bytes.begin(), bytes.begin() + count};
}

/// Reads `name` from `dir`, or explains where the data comes from.
ipu::data::idx_array read(const std::filesystem::path& dir, const char* name, std::int64_t at_least) {
  const std::filesystem::path path = dir / name;
  if (!std::filesystem::exists(path))
    throw ipu::data::format_error(path.string() + " is missing: install Debian's dataset-fashion-mnist and decompress its files "
                                  "(scripts/run-example does both), or pass --data DIR");
  ipu::data::idx_array a = ipu::data::read_idx(path);
  if (a.shape().empty() || a.shape()[0] < at_least)
    throw ipu::data::format_error(path.string() + ": " + a.shape_string() + ", fewer than the " + std::to_string(at_least) +
                                  " samples asked for");
  return a;
}

/// Says where training starts, after the checkpoints' callback has restored the latest.
struct announce_start : ipu::callback {
  std::filesystem::path dir;
  explicit announce_start(std::filesystem::path d) : dir(std::move(d)) {}
  void on_train_begin(ipu::training_session& s) override {
    if (s.step() > 0)
      std::cout << "Resuming from the checkpoint of step " << s.step() << " in " << dir.string() << " (epoch "
                << s.step() / s.steps_per_epoch() + 1 << ", batch " << s.step() % s.steps_per_epoch() + 1 << ")\n";
  }
};

int usage_error(const std::string& message) {
  std::cerr << "fashion_mnist: " << message << " (try --help)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    const auto count = [&](std::int64_t lo, std::int64_t hi, std::int64_t& out) {
      char* end = nullptr;
      const long long v = std::strtoll(argv[++i], &end, 10);
      if (*end != '\0' || v < lo || v > hi) return false;
      out = v;
      return true;
    };
    std::int64_t v = 0;
    if (arg == "--help" || arg == "-h") {
      std::cout << "usage: fashion_mnist [--data DIR] [--model-dir DIR] [--fresh] [--epochs N] [--train-samples N]\n"
                   "                     [--test-samples N] [--threads N] [--min-accuracy A]\n"
                   "Trains a small residual CNN on Fashion-MNIST with a progress bar and checkpoints in --model-dir\n"
                   "(default fashion_mnist_model), resuming from the latest one there unless --fresh; then evaluates on\n"
                   "the test images. --data: the decompressed IDX files (default " IPU_FASHION_MNIST_DIR ").\n"
                   "--epochs: 1 to 4 (default 4); --train-samples and --test-samples: the first N of each set.\n"
                   "--min-accuracy: exit with status 1 if the test accuracy is below A (0 to 1).\n";
      return 0;
    } else if (arg == "--data" && has_value) {
      s.data = argv[++i];
    } else if (arg == "--model-dir" && has_value) {
      s.model_dir = argv[++i];
    } else if (arg == "--fresh") {
      s.fresh = true;
    } else if (arg == "--epochs" && has_value) {
      if (!count(1, full_epochs, v)) return usage_error("--epochs takes 1 to 4");
      s.epochs = static_cast<int>(v);
    } else if (arg == "--train-samples" && has_value) {
      if (!count(batch, 60000, s.train_samples)) return usage_error("--train-samples takes 32 to 60000");
    } else if (arg == "--test-samples" && has_value) {
      if (!count(1, 10000, s.test_samples)) return usage_error("--test-samples takes 1 to 10000");
    } else if (arg == "--threads" && has_value) {
      if (!count(0, 1024, v)) return usage_error("--threads takes 0 (one per hardware thread) to 1024");
      s.threads = static_cast<unsigned>(v);
    } else if (arg == "--min-accuracy" && has_value) {
      char* end = nullptr;
      s.min_accuracy = std::strtod(argv[++i], &end);
      if (*end != '\0' || !(s.min_accuracy >= 0 && s.min_accuracy <= 1)) return usage_error("--min-accuracy takes 0 to 1");
    } else {
      return usage_error("unknown argument '" + arg + "'");
    }
  }

  try {
    const ipu::data::idx_array train_images = read(s.data, "train-images-idx3-ubyte", s.train_samples);
    const ipu::data::idx_array train_labels = read(s.data, "train-labels-idx1-ubyte", s.train_samples);
    const ipu::data::idx_array test_images = read(s.data, "t10k-images-idx3-ubyte", s.test_samples);
    const ipu::data::idx_array test_labels = read(s.data, "t10k-labels-idx1-ubyte", s.test_samples);

    // The training images' mean and standard deviation, in double.
    const std::span<const std::uint8_t> pixels = train_images.bytes().first(static_cast<std::size_t>(s.train_samples * 28 * 28));
    double sum = 0, squares = 0;
    for (const std::uint8_t p : pixels) sum += p / 255.0, squares += (p / 255.0) * (p / 255.0);
    const double mean = sum / static_cast<double>(pixels.size());
    const double deviation = std::sqrt(squares / static_cast<double>(pixels.size()) - mean * mean);
    const std::vector<float> x = standardised(train_images, s.train_samples, mean, deviation);
    const std::vector<float> x_test = standardised(test_images, s.test_samples, mean, deviation);
    const std::vector<std::int32_t> y = labels_of(train_labels, s.train_samples);
    const std::vector<std::int32_t> y_test = labels_of(test_labels, s.test_samples);
    std::cout << "Fashion-MNIST: " << s.train_samples << " training images (mean " << mean << ", deviation " << deviation
              << "), " << s.test_samples << " test images\n";

    if (s.fresh) std::filesystem::remove_all(s.model_dir);
    model_t model{ipu::weights<net_t>::random(1), {s.threads, /*seed*/ 1}};
    ipu::checkpoints backup{s.model_dir, /*every_steps*/ 500, /*keep*/ 3};
    announce_start announce{s.model_dir};
    const ipu::history h = model.fit(x, y, {.epochs = s.epochs, .seed = 1, .validation = {x_test, y_test}}, {&backup, &announce});
    double seconds = 0;
    for (const ipu::epoch_logs& e : h.epochs) seconds += e.seconds;

    const ipu::metrics m = model.evaluate(x_test, y_test);
    std::cout << "Test accuracy: " << 100 * m.accuracy << "% of " << s.test_samples << " images (top-5 "
              << 100 * m.top5_accuracy << "%, loss " << m.loss << "); " << model.trainer().steps() << " steps, "
              << h.epochs.size() << " epochs in this run, " << seconds << " s of training\n";
    if (m.accuracy < s.min_accuracy) {
      std::cerr << "fashion_mnist: test accuracy " << m.accuracy << " is below --min-accuracy " << s.min_accuracy << "\n";
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "fashion_mnist: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
