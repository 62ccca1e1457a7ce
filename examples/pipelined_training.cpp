// Pipelined training of the seed's ResNeXt-101 32x4d over two Mk2s, with TensorFlow's grouped
// schedule: ipu::models::resnext101_32x4d_stages puts the stem, stage1, stage2 and the first 9
// of stage3's 23 blocks on IPU 0 and the rest on IPU 1, and a step runs 16 micro-batches
// through both before one update.
//
// The full configuration, 224x224 images in f16 at micro-batch 2, trained in "16.16" with SGD
// and momentum and recomputation per block, is planned at compile time: the static_assert below
// is the proof that each IPU fits, its stage's stash of the micro-batches in flight, the copies
// received over the IPU-Links and the accumulated gradients included. The program prints each
// IPU's plan and the cycle model of a step's window (ramp-up, steady state, ramp-down, images
// per second on the IPUs).
//
// Then it trains the same network, at 32x32 and 4 micro-batches per update so that the host
// takes seconds, not hours, on a fixed window of synthetic images and labels, and prints each
// step's loss (falling as it learns the window) and the trainer's profile.
//
// --report DIR writes DIR/report.html, the page of the full configuration's plan (IPU 0's tiles
// over a training step, the phases, the window over both stages), and DIR/host.html, the host
// run's, with the host times the trainer measured.
//
//   pipelined_training [--steps N] [--threads N] [--plans-only] [--report DIR]
#include <ipu/ipu.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

template <int MicroBatch, int ImageSize>
using resnext101_over_two = ipu::models::resnext101_32x4d_stages<ipu::f16, MicroBatch, /*stages*/ 2, /*channels*/ 3, ImageSize>;

template <std::int64_t Accumulation>
constexpr ipu::train_options pipelined{.optimizer = ipu::sgd{.learning_rate = 0.05, .momentum = 0.9},
                                       .recompute = ipu::recompute::per_block,
                                       .master_weights = ipu::dtype::f16,  // "16.16"
                                       .gradient_accumulation = Accumulation,
                                       .pipeline = ipu::pipeline_schedule::grouped};
using two_mk2 = ipu::system<ipu::mk2, 2>;

// The full configuration: proved to fit both IPUs here, at compile time.
using full_t = ipu::training<resnext101_over_two<2, 224>, pipelined<16>>;
static_assert(ipu::require_fit<full_t, two_mk2>);

// What the host trains: the same layers on smaller images, a shorter window.
using host_net_t = resnext101_over_two<2, 32>;
using host_trainer_t = ipu::trainer<host_net_t, two_mk2, pipelined<4>>;

/// Prints each IPU's fit and the window's cycle model of training plan `p`.
template <class Plan>
void print_plan(const char* what, const Plan& p) {
  std::cout << what << '\n';
  for (int i = 0; i < Plan::ipu_count; ++i) {
    const ipu::training_memory& m = p.ipus[static_cast<std::size_t>(i)];
    std::cout << "  IPU " << i << ": " << (m.fits ? "fits" : "does not fit") << ", fullest tile " << m.peak_tile << " at "
              << m.peak << " of " << m.capacity << " bytes; holds " << p.stash_depth[static_cast<std::size_t>(i)]
              << " micro-batches' stashes\n";
  }
  const auto t = p.timing();
  std::cout << "  window: " << t.micro_batches << " micro-batches over " << t.stages << " stages, " << t.slots
            << " slots (ramp-up " << t.ramp_up_slots << ", steady " << t.steady_slots << ", ramp-down " << t.ramp_down_slots
            << "), " << t.total() << " cycles: " << static_cast<std::int64_t>(t.samples_per_second())
            << " images/s simulated\n";
}

struct settings {
  int steps = 3;
  unsigned threads = 0;  // 0: one per hardware thread
  bool plans_only = false;
  std::optional<std::filesystem::path> report;
};

bool parse(int argc, char** argv, settings& s) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--plans-only") {
      s.plans_only = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    if (arg == "--report") {
      if (argv[++i][0] == '\0') return false;
      s.report = std::filesystem::path(argv[i]);
      continue;
    }
    char* end = nullptr;
    const long value = std::strtol(argv[++i], &end, 10);
    if (*end != '\0') return false;
    if (arg == "--steps" && value >= 1 && value <= 1000) s.steps = static_cast<int>(value);
    else if (arg == "--threads" && value >= 0 && value <= 256) s.threads = static_cast<unsigned>(value);
    else return false;
  }
  return true;
}

int run_program(int argc, char** argv) {
  settings s;
  if (!parse(argc, argv, s)) {
    std::cerr << "usage: pipelined_training [--steps N (1-1000)] [--threads N] [--plans-only] [--report DIR]\n";
    return 2;
  }
  print_plan("ResNeXt-101 32x4d, 224x224 f16, micro-batch 2, 16 per update, grouped over two Mk2s:",
             ipu::plan_v<full_t, two_mk2>);
  if (s.report) {
    std::filesystem::create_directories(*s.report);
    const std::string path = (*s.report / "report.html").string();
    ipu::make_html_report<full_t, two_mk2>("ResNeXt-101 32x4d training, 224x224 f16, micro-batch 2 x 16, grouped over two Mk2s")
        .write(path);
    std::cout << "Report written to " << path << '\n';
  }
  if (s.plans_only) return 0;

  host_trainer_t trainer(ipu::weights<host_net_t>::random(1), {.threads = s.threads});
  std::cout << "Training at 32x32 on the host: " << trainer.batches().to_string() << '\n';
  // One window of synthetic images and labels, trained on again and again.
  constexpr std::int64_t sample = 32 * 32 * 3;
  std::mt19937 gen(7);
  std::normal_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<std::int32_t> label(0, 999);
  std::vector<ipu::half> images(static_cast<std::size_t>(host_trainer_t::batch * sample));
  for (ipu::half& v : images) v = ipu::half(pixel(gen));
  std::vector<std::int32_t> labels(static_cast<std::size_t>(host_trainer_t::batch));
  for (std::int32_t& l : labels) l = label(gen);
  float first = 0, last = 0;
  for (int step = 1; step <= s.steps; ++step) {
    last = trainer.step(images, labels);
    if (step == 1) first = last;
    std::cout << "step " << step << ": loss " << last << '\n';
  }
  std::cout << trainer.profile();
  if (s.report) {
    const std::string path = (*s.report / "host.html").string();
    ipu::make_html_report<ipu::training<host_net_t, pipelined<4>>, two_mk2>(
        "ResNeXt-101 32x4d training on the host, 32x32 f16, micro-batch 2 x 4", trainer.profile())
        .write(path);
    std::cout << "Report written to " << path << '\n';
  }
  if (!std::isfinite(last) || (s.steps >= 3 && !(last < first))) {
    std::cerr << "pipelined_training: the loss did not fall (" << first << " to " << last << ")\n";
    return 1;
  }
  return 0;
}

}  // namespace

// A report that cannot be written (or any other failure) ends the program with its message.
int main(int argc, char** argv) {
  try {
    return run_program(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "pipelined_training: " << e.what() << '\n';
    return 1;
  }
}
