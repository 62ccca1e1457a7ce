// ResNeXt-101 32x4d inference, as the TensorFlow program of the seed's porting guide runs it on
// one Mk2 IPU: f16, batch 4, 224x224 images with 4 channels (NHWC), cardinality 32,
// availableMemoryProportion 0.3, synthetic input through an infeed, `batches_per_step`
// iterations per host call (`loops.repeat`), results through an outfeed, a warm-up run, then
// timed runs with throughput and latency statistics that exclude the first run.
//
// The network is computed for real on the host CPU by ipu's BSP executor; next to the measured
// host figures it prints what the cycle model predicts for a Mk2. The fit on one IPU is a
// static_assert: if the model did not fit, this file would not compile, and the error would
// name the tile, the layer and the bytes.
//
//   resnext101_inference                          # defaults: a short run
//   resnext101_inference --batches-per-step 1000 --iterations 5 --report out   # the seed's values
#include <ipu/ipu.hpp>

#include <range/v3/view/repeat_n.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

// The seed's model and configuration, as types. ResNeXt-101 32x4d from the model zoo: each
// bottleneck is conv 1x1 -> grouped conv 3x3 (32 groups, 4 channels each per 128) -> conv 1x1,
// each followed by batch norm, plus the shortcut. As in the seed's group_conv_block, a stage
// downsamples in its first 1x1 conv (stride_at::first_conv). torchvision, and the zoo's
// resnext101_32x4d alias, downsample in the 3x3 instead: same parameters, 6% more MACs.
constexpr int batch_size = 4;
using model_t = ipu::models::resnext<ipu::f16, batch_size, /*layers*/ 101, /*cardinality*/ 32, /*width per group*/ 4,
                                     /*input channels*/ 4, /*classes*/ 1000, /*image size*/ 224,
                                     ipu::models::stride_at::first_conv>;
using target_t = ipu::mk2;  // cfg.auto_select_ipus = 1 on a Mk2 system
// cfg.convolutions.poplar_options["availableMemoryProportion"] = "0.3"
constexpr ipu::options opts{.available_memory_proportion = {3, 10}};

static_assert(ipu::input_shape_v<model_t> == std::array<std::int64_t, 4>{batch_size, 224, 224, 4});
static_assert(ipu::fits_v<model_t, target_t, opts>, "the seed's ResNeXt-101 must fit one Mk2 at proportion 0.3");

using engine_t = ipu::engine<model_t, target_t, opts>;
using batch_t = ipu::input_tensor_t<model_t>;  // ipu::tensor<ipu::f16, 4, 224, 224, 4>
constexpr int prefetch_depth = 8;             // the infeed's slots (TensorFlow's prefetch_depth)

struct settings {
  std::int64_t batches_per_step = 1;  // seed: BATCHES_PER_STEP = 1000
  std::int64_t iterations = 3;        // seed: NUM_ITERATIONS = 5
  ipu::execution_mode mode = ipu::execution_mode::fast;
  unsigned threads = 0;  // 0: one per hardware thread
  std::optional<std::filesystem::path> report;
};

constexpr std::string_view usage =
    "usage: resnext101_inference [--batches-per-step N] [--iterations N] [--mode fast|faithful]\n"
    "                            [--threads N] [--report DIR] [--help]\n"
    "\n"
    "Runs ResNeXt-101 32x4d inference as the seed's TensorFlow program does on one Mk2 IPU (f16,\n"
    "224x224x4 NHWC input, availableMemoryProportion 0.3), computed on the host by ipu's BSP\n"
    "executor, and prints throughput and latency over the timed iterations (the first excluded)\n"
    "beside the Mk2 figures of the cycle model.\n"
    "\n"
    "  --batches-per-step N   batches per engine.run call, as loops.repeat (default 1; seed: 1000)\n"
    "  --iterations N         timed engine.run calls after the warm-up (default 3; seed: 5)\n"
    "  --mode fast|faithful   fast: host tensors; faithful: every tile's 624 KiB memory image,\n"
    "                         exchange copied between tiles (several times slower) (default fast)\n"
    "  --threads N            host threads (default 0: one per hardware thread)\n"
    "  --report DIR           write DIR/report.html (memory, cycles and host times, to open in a\n"
    "                         browser), DIR/profile.json (the cycle model and host times per\n"
    "                         layer), DIR/memory.txt and DIR/memory.json (the memory plan), as\n"
    "                         autoReport.all does\n"
    "  --help                 this text\n"
    "\n"
    "The batch size (4) is part of the model's type (ipu::models::resnext<ipu::f16, 4, 101, ...>):\n"
    "there is no --batch-size flag; change the type and recompile, and the compiler checks the fit.\n";

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The integer `text`, at least `least` (1: "a positive integer", 0: "an integer >= 0").
std::int64_t at_least(std::int64_t least, std::string_view flag, std::string_view text) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || v < least)
    throw usage_error(std::string(flag) + " takes " + (least == 1 ? "a positive integer" : "an integer of 0 or more") +
                      ", not '" + std::string(text) + "'");
  return v;
}

std::int64_t positive(std::string_view flag, std::string_view text) { return at_least(1, flag, text);
}

/// Parses `--flag value` and `--flag=value`; returns nothing when `--help` was asked for.
std::optional<settings> parse(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i], value;
    bool inline_value = false;
    if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      inline_value = true;
    }
    if (arg == "--help" || arg == "-h") return std::nullopt;
    const auto next = [&]() -> std::string_view {
      if (inline_value) return value;
      if (i + 1 >= argc) throw usage_error(std::string(arg) + " needs a value");
      return argv[++i];
    };
    if (arg == "--batches-per-step") {
      s.batches_per_step = positive(arg, next());
    } else if (arg == "--iterations") {
      s.iterations = positive(arg, next());
    } else if (arg == "--threads") {
      s.threads = static_cast<unsigned>(std::min<std::int64_t>(at_least(0, arg, next()), 4096));
    } else if (arg == "--mode") {
      const std::string_view m = next();
      if (m == "fast") {
        s.mode = ipu::execution_mode::fast;
      } else if (m == "faithful") {
        s.mode = ipu::execution_mode::faithful;
      } else {
        throw usage_error("--mode is fast or faithful, not '" + std::string(m) + "'");
      }
    } else if (arg == "--report") {
      const std::string_view dir = next();
      if (dir.empty()) throw usage_error("--report needs a directory");
      s.report = std::filesystem::path(dir);
    } else if (arg == "--batch-size") {
      throw usage_error("the batch size (4) is part of the model's type; change model_t and recompile");
    } else {
      throw usage_error("unknown argument '" + std::string(argv[i]) + "'");
    }
  }
  return s;
}

/// min, max, mean and (population, as numpy's) standard deviation.
struct summary_stats {
  double min = 0, max = 0, mean = 0, std = 0;
};
summary_stats summarise(const std::vector<double>& v) {
  summary_stats s;
  if (v.empty()) return s;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.std += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(s.std / static_cast<double>(v.size()));
  return s;
}

void print_stats(const char* what, const char* unit, const summary_stats& s) {
  std::cout << std::fixed << std::setprecision(2) << what << " at bs=" << batch_size
            << " of ResNeXt-101 32x4d: min=" << s.min << ", max=" << s.max << ", mean=" << s.mean
            << ", std=" << s.std << " " << unit << "\n";
}

/// The seed's synthetic data: one batch of uniform [0, 1) values, repeated.
batch_t synthetic_batch() {
  batch_t x;
  std::mt19937 rng(2021);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (auto& v : x) v = ipu::f16(uniform(rng));
  return x;
}

void write_report(const std::filesystem::path& dir, const engine_t& engine) {
  std::filesystem::create_directories(dir);
  const std::string html = (dir / "report.html").string(), profile = (dir / "profile.json").string(),
                    text = (dir / "memory.txt").string(), json = (dir / "memory.json").string();
  const ipu::html_report report = ipu::make_html_report<model_t, target_t, opts>(
      "ResNeXt-101 32x4d, f16, batch " + std::to_string(batch_size), engine.profile());
  report.write(html);
  report.profile.write_json(profile);
  std::ofstream memory(text);
  memory << report.memory;
  if (!memory) throw std::runtime_error("cannot write " + text);
  report.memory.write_json(json);
  std::cout << "Report written to " << html << " (open it in a browser), with " << profile << ", " << text << " and "
            << json << "\n";
}

int run(const settings& s) {
  const auto& peak = engine_t::plan().ipus[0];
  std::cout << "ResNeXt-101 32x4d, f16, batch " << batch_size << ", 224x224x4 (NHWC), on one " << target_t::name
            << " (" << target_t::chip.tiles << " tiles x " << target_t::chip.bytes_per_tile
            << " bytes), availableMemoryProportion 0.3\n"
            << "Memory plan: peak " << peak.peak << " of " << peak.capacity << " bytes, on tile " << peak.peak_tile
            << " during " << ipu::node_table_v<model_t>[static_cast<std::size_t>(peak.peak_step)].path.view()
            << " (checked at compile time)\n"
            << "Executor: " << (s.mode == ipu::execution_mode::fast ? "fast" : "faithful") << " mode, "
            << (s.threads != 0 ? s.threads : std::max(1u, std::thread::hardware_concurrency()))
            << " host threads; batches per step: " << s.batches_per_step << ", timed iterations: " << s.iterations
            << "\n\n";

  // Compilation happened in the C++ compiler; what is left is building the engine (weights
  // folded, rounded to f16 and laid out) and the first run.
  std::cout << "Compiling and Warmup...\n";
  const auto warmup_start = std::chrono::steady_clock::now();
  engine_t engine{ipu::weights<model_t>::random(42), {.mode = s.mode, .threads = s.threads}};

  // The dataset: the synthetic batch, repeated for every step (Dataset.range(1).map(...).repeat()).
  ipu::infeed<model_t, prefetch_depth> in;
  ipu::outfeed<model_t, ipu::outfeed_mode::all> out;
  const batch_t batch = synthetic_batch();
  const std::int64_t total = s.batches_per_step * (s.iterations + 1);
  std::jthread producer([&](std::stop_token stop) { ipu::feed(in, ranges::views::repeat_n(batch, total), stop); });

  const auto step = [&] {
    const ipu::run_stats stats = engine.run(in, out, s.batches_per_step);  // sess.run(res)
    const auto results = out.drain();                                      // sess.run(outfeed)
    if (stats.iterations != s.batches_per_step || static_cast<std::int64_t>(results.size()) != s.batches_per_step)
      throw std::runtime_error("a step ran " + std::to_string(stats.iterations) + " batches and returned " +
                               std::to_string(results.size()) + " results, not " +
                               std::to_string(s.batches_per_step));
  };
  step();
  std::cout << std::fixed << std::setprecision(3) << "Duration: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - warmup_start).count()
            << " seconds\n\n";

  std::vector<double> fps, latency;
  for (std::int64_t i = 0; i < s.iterations; ++i) {
    std::cout << "Running iteration: " << i << "\n";
    const auto start = std::chrono::steady_clock::now();
    step();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fps.push_back(static_cast<double>(s.batches_per_step * batch_size) / seconds);
    latency.push_back(1000 * seconds / static_cast<double>(s.batches_per_step));
    std::cout << std::fixed << std::setprecision(1) << "  Throughput " << fps.back() << " images/s, latency "
              << std::setprecision(2) << latency.back() << " ms per batch\n";
  }

  if (s.iterations < 2) {
    std::cout << "\nNo average statistics: they exclude the 1st timed iteration, and there is only one "
                 "(use --iterations 2 or more).\n";
  } else {
    std::cout << "\nAverage statistics over " << s.iterations << " iterations, excluding the 1st iteration.\n-----\n";
    fps.erase(fps.begin());
    latency.erase(latency.begin());
    print_stats("Throughput", "images/s (host)", summarise(fps));
    print_stats("Latency", "ms per batch (host)", summarise(latency));
  }
  const ipu::profile& p = engine.profile();
  std::cout << std::fixed << std::setprecision(1) << "Simulated " << target_t::name << ": "
            << p.simulated_images_per_second() << " images/s, " << std::setprecision(3)
            << 1000 * p.simulated_seconds_per_batch() << " ms per batch (cycle model: " << p.cycles_per_batch()
            << " cycles at " << static_cast<double>(p.clock_hz()) / 1e9 << " GHz)\n";

  if (s.report) write_report(*s.report, engine);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::optional<settings> s = parse(argc, argv);
    if (!s) {
      std::cout << usage;
      return 0;
    }
    return run(*s);
  } catch (const usage_error& e) {
    std::cerr << "resnext101_inference: " << e.what() << " (try --help)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "resnext101_inference: " << e.what() << "\n";
    return 1;
  }
}
