// Logging (`IPU_LOG_LEVEL`): the levels' names, a line's form, nothing below the level, and
// what engines and trainers log: the plan when built, each batch's steps, each run and an
// infeed that ran dry, each training step and a gradient that overflowed f16.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include "support/pool_stream.hpp"
#include "support/targets.hpp"

#include <chrono>
#include <cstdint>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

// A namespace of its own: the feeds' engine tests are one translation unit (tests/CMakeLists.txt).
namespace logging_test {
namespace {
namespace nn = ipu::nn;
using pool_t = ipu_test::pool::graph_t;
using pool_engine = ipu_test::pool::engine_t;
using ipu_test::pool::batch;

// Captures the log at `level` for its lifetime, then turns logging off again.
class captured_log {
 public:
  explicit captured_log(ipu::log_level level) {
    ipu::logging::set_sink(&lines_);
    ipu::logging::set_level(level);
  }
  ~captured_log() {
    ipu::logging::set_level(ipu::log_level::off);
    ipu::logging::set_sink(nullptr);
  }
  captured_log(const captured_log&) = delete;
  captured_log& operator=(const captured_log&) = delete;
  std::string text() const { return lines_.str(); }
  bool has(const std::string& part) const { return text().find(part) != std::string::npos; }

 private:
  std::ostringstream lines_;
};

int count_of(const std::string& text, const std::string& part) {
  int n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("log levels: Poplar's names in any case, each including the levels before it") {
  CHECK(ipu::parse_log_level("err") == ipu::log_level::err);
  CHECK(ipu::parse_log_level("WARN") == ipu::log_level::warn);
  CHECK(ipu::parse_log_level("Info") == ipu::log_level::info);
  CHECK(ipu::parse_log_level("debug") == ipu::log_level::debug);
  CHECK(ipu::parse_log_level("TRACE") == ipu::log_level::trace);
  CHECK(ipu::parse_log_level("off") == ipu::log_level::off);
  CHECK_FALSE(ipu::parse_log_level("warning").has_value());
  CHECK_FALSE(ipu::parse_log_level("").has_value());
  for (auto l : {ipu::log_level::off, ipu::log_level::err, ipu::log_level::warn, ipu::log_level::info, ipu::log_level::debug,
                 ipu::log_level::trace})
    CHECK(ipu::parse_log_level(ipu::name_of(l)) == l);

  const captured_log log(ipu::log_level::warn);
  CHECK(ipu::logging::enabled(ipu::log_level::err));
  CHECK(ipu::logging::enabled(ipu::log_level::warn));
  CHECK_FALSE(ipu::logging::enabled(ipu::log_level::info));
  CHECK_FALSE(ipu::logging::enabled(ipu::log_level::off));
  ipu::logging::warn("test", "tile ", 37, " at ", 95.5, '%');
  ipu::logging::info("test", "not logged");
  ipu::logging::err("test", "logged");
  const std::regex line(R"(\d\d:\d\d:\d\d\.\d\d\d ipu:test \[W\] tile 37 at 95\.5%\n\d\d:\d\d:\d\d\.\d\d\d ipu:test \[E\] logged\n)");
  CHECK(std::regex_match(log.text(), line));
}

TEST_CASE("off, the library logs nothing") {
  const captured_log log(ipu::log_level::off);
  pool_engine engine{ipu::weights<pool_t>{}};
  engine.infer(batch(0));
  CHECK(log.text().empty());
}

TEST_CASE("warn flags the tiles above 90% of their memory: how many and the fullest") {
  const captured_log log(ipu::log_level::warn);
  const std::vector<std::int64_t> ipu0{950, 100, 901, 900}, ipu1{900, 10, 0, 0};
  ipu::runtime::warn_full_tiles("test", 2, 4, 1000, [&](int ipu, int tile) {
    return (ipu == 0 ? ipu0 : ipu1)[static_cast<std::size_t>(tile)];
  });
  // 950 and 901 are above 90% of 1,000 bytes; 900 is not, so IPU 1 has none.
  CHECK(log.has("[W] IPU 0: 2 of 4 tiles above 90% of their 1,000 bytes; the fullest, tile 0, holds 950 (95.0%)\n"));
  CHECK(count_of(log.text(), "\n") == 1);
}

TEST_CASE("info: an engine logs its plan when built, and each run over its feeds") {
  const captured_log log(ipu::log_level::info);
  pool_engine engine{ipu::weights<pool_t>{}};
  const ipu::ipu_memory& m = pool_engine::plan().ipus[0];
  CHECK(log.has("ipu:engine [I] mk2-small, 1 IPU: 2 layers, batch 2, fast mode"));
  std::smatch peak;  // the plan's peak, with thousands separators
  const std::string text = log.text();
  REQUIRE(std::regex_search(text, peak, std::regex("IPU 0 peak ([0-9,]+) of 638,976 bytes \\([0-9.]+%\\) on tile ([0-9]+)")));
  std::string digits = peak[1].str();
  std::erase(digits, ',');
  CHECK(std::stoll(digits) == m.peak);
  CHECK(std::stoi(peak[2].str()) == m.peak_tile);
  CHECK(log.has("images/s simulated\n"));
  CHECK_FALSE(log.has("[W]"));  // no tile of this small plan is nearly full

  ipu::infeed<pool_t, 4> in;
  ipu::outfeed<pool_t, ipu::outfeed_mode::all> out;
  for (int i = 0; i < 3; ++i) in.push(batch(i));
  in.close();
  const ipu::run_stats stats = engine.run(in, out, 10);
  CHECK(stats.infeed_ran_dry == 0);  // every batch was there before the run
  CHECK(log.has("ipu:engine [I] run: 3 of 10 iterations (2 images each), the infeed ended in "));
  CHECK_FALSE(log.has("ran dry"));
  CHECK_FALSE(log.has("[D]"));
}

TEST_CASE("warn: a run whose infeed ran dry says so, and so do its statistics") {
  pool_engine engine{ipu::weights<pool_t>{}};
  const captured_log log(ipu::log_level::warn);
  ipu::infeed<pool_t, 4> in;
  ipu::outfeed<pool_t, ipu::outfeed_mode::all> out;
  std::jthread producer([&] {
    for (int i = 0; i < 3; ++i) {
      in.push(batch(i));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // slower than the engine's batch
    }
    in.close();
  });
  const ipu::run_stats stats = engine.run(in, out, 10);
  CHECK(stats.iterations == 3);
  CHECK(stats.infeed_ran_dry >= 1);
  CHECK(log.has("ipu:engine [W] the infeed ran dry at " + std::to_string(stats.infeed_ran_dry) + " of 3 iterations"));
  std::ostringstream printed;
  printed << stats;
  CHECK(printed.str().find("; the infeed ran dry ") != std::string::npos);
}

TEST_CASE("debug: a line per step of each batch an engine runs") {
  pool_engine engine{ipu::weights<pool_t>{}};
  const captured_log log(ipu::log_level::debug);
  engine.infer(batch(0));
  engine.infer(batch(1));
  CHECK(log.has("ipu:engine [D] batch 1, step 0 input (input): "));
  CHECK(log.has("ipu:engine [D] batch 2, step 1 global_avg_pool1 (global_avg_pool): "));
  CHECK(count_of(log.text(), "[D]") == 4);  // 2 steps x 2 batches
}

namespace {
// An f16 dense layer trained towards targets far from its outputs: the loss's gradient times
// the loss scale is above f16's largest value, 65,504.
using f16_net_t = decltype(ipu::input<ipu::f16, 2, 1, 1, 4> | nn::flatten | nn::dense<2>);
constexpr ipu::train_options overflowing{.optimizer = ipu::sgd{.learning_rate = 0.01},
                                         .loss = ipu::loss::mean_squared_error,
                                         .loss_scaling = ipu::dynamic_loss_scaling(32768, 2)};
}  // namespace

TEST_CASE("a trainer logs its configuration, each step at debug, and a gradient that overflowed f16 at warn") {
  const captured_log log(ipu::log_level::debug);
  ipu::trainer<f16_net_t, ipu_test::small_target<16>, overflowing> t{ipu::weights<f16_net_t>::random(1)};
  CHECK(log.has("ipu:trainer [I] mk2-small, 1 IPU: 3 layers; SGD (0 state tensors), master weights f32, dynamic loss scale "
                "from 32768, recompute none; micro-batch 2 x gradient accumulation 1 x replicas 1 = 2 samples per step; "
                "fast mode, "));
  const std::vector<ipu::f16> x(8, ipu::f16(0.5f));
  const std::vector<float> far(4, 1000.0f);  // d loss / d y = 2 (y - 1000) / 4, times 32768
  t.step(x, far);
  REQUIRE(t.overflowed());
  CHECK(log.has("ipu:trainer [W] step 1: a gradient is not finite (an f16 overflow, or a NaN); the step is skipped and "
                "the loss scale halved\n"));
  CHECK(log.has("ipu:trainer [D] step 1: loss "));
  CHECK(log.has(", loss scale 16384 (skipped)\n"));
  const std::vector<float> near(4, 0.0f);
  t.step(x, near);
  CHECK_FALSE(t.overflowed());
  CHECK(log.has("ipu:trainer [D] step 2: loss "));
  CHECK(count_of(log.text(), "[W]") == 1);
}

}  // namespace logging_test
