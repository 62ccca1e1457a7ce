// The cycle model and the profile: totals add up, the compute estimate sits between the
// chip's ideal and one tile doing everything, host time is recorded, the JSON is complete.

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

#include <iomanip>
#include <sstream>

namespace nn = ipu::nn;

namespace {
using net_t = decltype(ipu::input<ipu::f16, 2, 16, 16, 8> | nn::conv<32, 3, 2> | nn::batch_norm | nn::relu
                       | nn::conv<64, 3, 1, 8> | nn::batch_norm | nn::relu | nn::global_avg_pool | nn::dense<10>);
using target_t = ipu_test::small_target<16>;
}  // namespace

TEST_CASE("the profile's totals are the sums of its steps, and images/s follows from the clock") {
  ipu::engine<net_t, target_t> engine{ipu::weights<net_t>::random(1)};
  const ipu::profile& p = engine.profile();
  std::int64_t steps = 0, compute = 0;
  for (const ipu::step_profile& s : p.steps()) {
    steps += s.cycles();
    compute += s.compute_cycles;
    CHECK(s.cycles() >= 0);
  }
  REQUIRE(p.ipus().size() == 1);
  CHECK(p.ipus()[0].cycles() == steps);
  CHECK(p.cycles_per_batch() == steps);
  CHECK(p.simulated_images_per_second() == Approx(2.0 * target_t::chip.clock_hz / static_cast<double>(steps)));

  // MACs at the chip's f16 rate: no faster than every tile busy, no slower than one tile alone.
  const double macs = static_cast<double>(ipu::mac_count_v<net_t>), rate = target_t::chip.f16_macs_per_cycle;
  std::int64_t conv_cycles = 0;
  for (const ipu::step_profile& s : p.steps())
    if (s.kind == ipu::op_of<ipu::ops::conv> || s.kind == ipu::op_of<ipu::ops::dense>) conv_cycles += s.compute_cycles;
  CHECK(static_cast<double>(conv_cycles) >= macs / (rate * target_t::chip.tiles));
  CHECK(static_cast<double>(conv_cycles) <= macs / rate + static_cast<double>(p.steps().size()));
  CHECK(compute > conv_cycles);  // the other ops cost cycles too
}

TEST_CASE("an empty profile reports no throughput rather than an infinite one") {
  const ipu::profile empty;
  CHECK(empty.cycles_per_batch() == 0);
  CHECK(empty.simulated_images_per_second() == 0);
  CHECK(empty.host_images_per_second() == 0);
}

TEST_CASE("host time is recorded per batch, and the JSON has every step") {
  ipu::engine<net_t, target_t> engine{ipu::weights<net_t>::random(1)};
  CHECK(engine.profile().batches_measured() == 0);
  CHECK(engine.profile().host_seconds_per_batch() == 0);
  const auto x = ipu_test::random_input<net_t>(1);
  engine.infer(x);
  engine.infer(x);
  const ipu::profile& p = engine.profile();
  CHECK(p.batches_measured() == 2);
  CHECK(p.host_seconds_per_batch() > 0);
  CHECK(p.host_images_per_second() == Approx(2.0 / p.host_seconds_per_batch()));

  std::ostringstream json;
  json << std::scientific << std::setprecision(2);
  p.write_json(json);
  CHECK(json.flags() == (std::ios::dec | std::ios::skipws | std::ios::scientific));  // the caller's format stays
  CHECK(json.precision() == 2);
  const std::string text = json.str();
  for (const ipu::node& n : ipu::node_table_v<net_t>)
    CHECK(text.find("\"path\": \"" + std::string(n.path.view()) + "\"") != std::string::npos);
  CHECK(text.find("\"simulated_images_per_second\"") != std::string::npos);
  CHECK(text.find("\"host_seconds_per_batch\"") != std::string::npos);
  CHECK_THROWS_AS(p.write_json(std::string("/nonexistent-dir/profile.json")), std::runtime_error);

  std::ostringstream summary;
  summary << p;
  CHECK(summary.str().find("simulated") != std::string::npos);
  CHECK(summary.flags() == std::ostringstream().flags());
  CHECK(summary.precision() == 6);
}

TEST_CASE("the sync cost is an option, and an IPU-Link transfer costs link cycles") {
  constexpr ipu::options no_sync{.cycles = {.sync_cycles = 0}};
  ipu::engine<net_t, target_t> with{ipu::weights<net_t>::random(1)};
  ipu::engine<net_t, target_t, no_sync> without{ipu::weights<net_t>::random(1)};
  CHECK(with.profile().ipus()[0].sync_cycles > 0);
  CHECK(without.profile().ipus()[0].sync_cycles == 0);
  CHECK(with.profile().cycles_per_batch() - without.profile().cycles_per_batch() == with.profile().ipus()[0].sync_cycles);

  using split_t = decltype(ipu::input<ipu::f16, 2, 16, 16, 8> | nn::conv<32, 3, 2>
                           | ipu::on<1>(nn::batch_norm | nn::relu) | nn::global_avg_pool | nn::dense<10>);
  ipu::engine<split_t, ipu_test::small_target<16, 2>> split{ipu::weights<split_t>::random(1)};
  const ipu::profile& p = split.profile();
  REQUIRE(p.ipus().size() == 2);
  CHECK(p.ipus()[0].link_cycles > 0);
  CHECK(p.ipus()[1].link_cycles > 0);
  CHECK(p.pipelined_images_per_second() > p.simulated_images_per_second());
}
