// The memory report of a training step against brute force over `training_plan::usage` (every
// tile at every step) and against the plan's own peak.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "support/targets.hpp"

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace nn = ipu::nn;

namespace {
using tiny = ipu_test::small_target<16>;

constexpr auto net = ipu::input<ipu::f16, 2, 16, 16, 8> | nn::conv<16, 3> | nn::batch_norm | nn::relu
    | nn::residual(nn::conv<16, 1> | nn::batch_norm | nn::relu | nn::conv<16, 3> | nn::batch_norm) | nn::relu
    | nn::global_avg_pool | nn::dense<10>;
constexpr ipu::train_options opts{.optimizer = ipu::adam{}, .recompute = ipu::recompute::per_block};
using training_t = ipu::training<decltype(net), opts>;
}  // namespace

TEST_CASE("the training memory report's tile peaks are the most bytes each tile uses at any step") {
  const ipu::training_memory_report_t r = ipu::memory_report<training_t, tiny>();
  constexpr auto& p = ipu::plan_v<training_t, tiny>;
  REQUIRE(r.tiles.size() == 16);
  REQUIRE(r.steps.size() == p.step_count);
  std::int64_t most = 0;
  for (int t = 0; t < 16; ++t) {
    std::int64_t tile_most = 0;
    for (int s = 0; s < static_cast<int>(p.step_count); ++s) tile_most = std::max(tile_most, p.usage(t, s).total());
    CHECK(r.tiles[static_cast<std::size_t>(t)].bytes.total() == tile_most);
    CHECK(r.tiles[static_cast<std::size_t>(t)].bytes == p.usage(t, r.tiles[static_cast<std::size_t>(t)].step));
    most = std::max(most, tile_most);
  }
  CHECK(r.peak.bytes.total() == most);
  CHECK(most <= p.ipus[0].peak);  // the allocation adds alignment and gaps, never takes away
  CHECK(r.plan.peak == p.ipus[0].peak);
  // Each phase's fullest tile, over that phase's steps only.
  for (int ph = 0; ph < 4; ++ph) {
    std::int64_t phase_most = -1;
    for (int t = 0; t < 16; ++t)
      for (int s = 0; s < static_cast<int>(p.step_count); ++s)
        if (static_cast<int>(p.steps[static_cast<std::size_t>(s)].phase) == ph) phase_most = std::max(phase_most, p.usage(t, s).total());
    CHECK(r.phases[static_cast<std::size_t>(ph)].bytes.total() == phase_most);
  }
  int tiles = 0;
  for (int count : r.histogram) tiles += count;
  CHECK(tiles == 16);
  CHECK(r.phase_steps[static_cast<std::size_t>(ipu::step_phase::recompute)] == 5);
}

TEST_CASE("the training memory report prints the peak, the phases, the categories and the options") {
  const std::string text = ipu::memory_report<training_t, tiny>().str();
  for (const char* expected : {"training memory report: mk2-small", "Adam (2 state tensors), master weights f32, recompute per block",
                               "5 recompute", "stashed activations", "recomputed activations", "optimiser state",
                               "fullest tile by phase:", "fullest tiles:", "fits\n", "cycles of a step (cycle model): ",
                               " GHz: ", " samples/s\n"})
    CHECK(text.find(expected) != std::string::npos);
  const ipu::training_memory_report_t r = ipu::memory_report<training_t, tiny>();
  constexpr auto& p = ipu::plan_v<training_t, tiny>;
  CHECK(r.total_cycles == p.total_cycles());
  CHECK(r.phase_cycles == p.phase_cycles());
  CHECK(r.total_cycles > 0);

  constexpr ipu::train_options sixteen{.master_weights = ipu::dtype::f16, .loss_scaling = ipu::dynamic_loss_scaling()};
  CHECK(ipu::memory_report<ipu::training<decltype(net), sixteen>, tiny>().str().find(
            "SGD (0 state tensors), master weights f16 (stochastic rounding), dynamic loss scale from 32768, recompute none") !=
        std::string::npos);
  constexpr ipu::train_options scaled{.loss_scaling = 128};
  CHECK(ipu::memory_report<ipu::training<decltype(net), scaled>, tiny>().str().find("master weights f32, loss scale 128, recompute none") !=
        std::string::npos);
  constexpr ipu::train_options shared{.optimizer = ipu::adam{}, .shard_optimizer_state = true};
  const ipu::training_memory_report_t four = ipu::memory_report<ipu::training<decltype(net), shared>, ipu::replicated<ipu::system<tiny, 4>, 4>>();
  CHECK(four.str().find("Adam (2 state tensors), master weights f32, recompute none, optimiser state shared out over 4 replicas\n") !=
        std::string::npos);
  CHECK(four.state_shards == 4);
}

TEST_CASE("the summary of a training configuration adds the optimiser, the values it trains and keeps, and a step's MACs") {
  // By hand: convolutions 3x3 8->16, 1x1 16->16 and 3x3 16->16 on 2 x 16 x 16 outputs
  // (589,824 + 131,072 + 1,179,648 MACs; 1,152 + 256 + 2,304 parameters), three batch norms of
  // 16 channels (32 parameters and 32 running statistics each), a dense layer 16 -> 10 on a
  // batch of 2 (320 MACs, 170 parameters).
  const std::string text = ipu::summary<training_t>().str();
  for (const char* expected : {"total params: 3,978\n", "training: Adam (2 state tensors), master weights f32, recompute per block\n",
                               "  loss softmax_cross_entropy, learning rate 0.001, constant\n",
                               "  trained values: 3,978 of 4,074; f32 master copies: 3,978; optimiser state: 7,956 values\n",
                               // per block, the residual branch is computed again: its two convolutions
                               "  MACs of a step: 1,900,864 forward, 1,310,720 recomputed, 3,801,728 backward\n"})
    CHECK(text.find(expected) != std::string::npos);
  CHECK(ipu::summary<training_t>().training() == opts);
  CHECK(ipu::summary<decltype(net)>().str().find("training:") == std::string::npos);

  constexpr ipu::train_options scheduled{.optimizer = ipu::sgd{.learning_rate = 0.5},
                                         .master_weights = ipu::dtype::f16,
                                         .schedule = ipu::cosine_decay(1000, 50)};
  const std::string sixteen = ipu::summary<ipu::training<decltype(net), scheduled>>().str();
  CHECK(sixteen.find("learning rate 0.5, cosine decay over 1,000 steps to 0 times it, after 50 steps of linear warm-up\n") !=
        std::string::npos);
  CHECK(sixteen.find("f32 master copies: 0; optimiser state: 0 values\n") != std::string::npos);
}

TEST_CASE("the training memory report as JSON: each step's bytes over the IPU's tiles, each tile's peak, each phase") {
  const ipu::training_memory_report_t r = ipu::memory_report<training_t, tiny>();
  constexpr auto& p = ipu::plan_v<training_t, tiny>;
  std::ostringstream text;
  r.write_json(text);
  const nlohmann::json j = nlohmann::json::parse(text.str());
  const auto by_category = [](const ipu::training_bytes& m) {
    std::vector<std::int64_t> v;
    for (int c = 0; c < ipu::training_category_count; ++c) v.push_back(m[ipu::training_category{static_cast<std::uint8_t>(c)}]);
    return v;
  };
  CHECK(j["target"] == "mk2-small");
  CHECK(j["categories"].size() == 9);
  CHECK(j["categories"][4] == "stashed activations");
  CHECK(j["training"] == "Adam (2 state tensors), master weights f32, recompute per block");
  CHECK(j["state_shards"] == 1);
  CHECK(j["peak"] == p.ipus[0].peak);
  CHECK(j["layers"].size() == p.size);
  // Each step: the bytes of all the tiles while it runs, summed here from the plan's usage.
  REQUIRE(j["steps"].size() == p.step_count);
  for (int s = 0; s < static_cast<int>(p.step_count); ++s) {
    const nlohmann::json& step = j["steps"][static_cast<std::size_t>(s)];
    CHECK(step["node"] == p.steps[static_cast<std::size_t>(s)].node);
    CHECK(step["phase"] == std::string(ipu::name_of(p.steps[static_cast<std::size_t>(s)].phase)));
    ipu::training_bytes sum;
    std::int64_t most = -1;
    int fullest = -1;
    for (int t = 0; t < 16; ++t) {
      sum += p.usage(t, s);
      if (p.usage(t, s).total() > most) most = p.usage(t, s).total(), fullest = t;
    }
    CHECK(step["ipu_bytes"].get<std::vector<std::int64_t>>() == by_category(sum));
    // Its fullest tile (the lowest on a tie) and that tile's bytes.
    CHECK(step["tile"] == fullest);
    CHECK(step["bytes"].get<std::vector<std::int64_t>>() == by_category(p.usage(fullest, s)));
  }
  // Each tile: [step, bytes...] of its peak.
  CHECK(j["tiles"] == 16);  // the tile count, as in the inference report
  REQUIRE(j["tile_peaks"].size() == 16);
  for (int t = 0; t < 16; ++t) {
    const std::vector<std::int64_t> tile = j["tile_peaks"][static_cast<std::size_t>(t)].get<std::vector<std::int64_t>>();
    REQUIRE(tile.size() == 10);
    CHECK(std::vector<std::int64_t>(tile.begin() + 1, tile.end()) == by_category(p.usage(t, static_cast<int>(tile[0]))));
    CHECK(tile[0] == r.tiles[static_cast<std::size_t>(t)].step);
  }
  REQUIRE(j["phases"].size() == 4);
  CHECK(j["phases"][2]["phase"] == "update");
  CHECK(j["phases"][2]["steps"] == r.phase_steps[2]);
  CHECK(j["phases"][1]["compute_cycles"] == p.phase_cycles()[1].compute);
}
