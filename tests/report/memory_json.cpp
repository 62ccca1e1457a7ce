// The memory report as JSON, read back with nlohmann::json and checked against the plan's own
// `usage` of every tile at every step: each tile's peak, each step's fullest tile and the sums
// over an IPU's tiles, on one IPU and on two; names escaped as JSON strings.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "support/report_graphs.hpp"
#include "support/targets.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {
using ipu_test::report_graphs::split_t;  // the second half on IPU 1

// Two 16-tile Mk2s under a name that JSON must escape.
struct quoted_target {
  static constexpr ipu::chip_spec chip = ipu::with_tiles(ipu::mk2::chip, 16);
  static constexpr int ipus = 2;
  static constexpr const char* name = "mk2 \"small\"\n";
};

std::vector<std::int64_t> by_category(const ipu::memory_bytes& m) {
  return {m.weights, m.code, m.activations, m.temporaries, m.exchange};
}
}  // namespace

TEST_CASE("the memory report as JSON holds every tile's peak and every step's bytes, as the plan's usage gives them") {
  constexpr auto& p = ipu::plan_v<split_t, quoted_target>;
  std::ostringstream text;
  ipu::memory_report<split_t, quoted_target>().write_json(text);
  const nlohmann::json j = nlohmann::json::parse(text.str());

  CHECK(j["target"] == "mk2 \"small\"\n");
  CHECK(j["ipus"] == 2);
  CHECK(j["tiles"] == 16);
  CHECK(j["bytes_per_tile"] == 638'976);
  CHECK(j["fits"] == true);
  CHECK(j["categories"] == nlohmann::json({"weights", "code", "activations", "temporaries", "exchange"}));
  REQUIRE(j["layers"].size() == p.size);
  for (int n = 0; n < static_cast<int>(p.size); ++n) {
    CHECK(j["layers"][static_cast<std::size_t>(n)]["path"] == std::string(p.at(n).path.view()));
    CHECK(j["layers"][static_cast<std::size_t>(n)]["ipu"] == p.at(n).ipu);
  }
  // The first conv, by hand: 3x3 taps over 8 channels into 16, at each of 2 x 16 x 16 outputs.
  const nlohmann::json& conv = j["layers"][1];
  CHECK(conv["op"] == "conv");
  CHECK(conv["layer"] == "conv 3x3/1");
  CHECK(conv["shape"] == "[2, 16, 16, 16]");
  CHECK(conv["type"] == "f16");
  CHECK(conv["params"] == 3 * 3 * 8 * 16);
  CHECK(conv["macs"] == 2 * 16 * 16 * 16 * (3 * 3 * 8));
  CHECK(j["layers"][0]["shape"] == "[2, 16, 16, 8]");

  REQUIRE(j["ipu_reports"].size() == 2);
  for (int i = 0; i < 2; ++i) {
    const nlohmann::json& r = j["ipu_reports"][static_cast<std::size_t>(i)];
    const ipu::ipu_memory& m = p.ipus[static_cast<std::size_t>(i)];
    CHECK(r["ipu"] == i);
    CHECK(r["peak"] == m.peak);
    CHECK(r["peak_tile"] == m.peak_tile);
    CHECK(r["at_peak"].get<std::vector<std::int64_t>>() == by_category(m.at_peak));
    std::vector<int> steps;
    for (int n = 0; n < static_cast<int>(p.size); ++n)
      if (p.at(n).ipu == i) steps.push_back(n);
    // Each tile: its most bytes in use over the IPU's steps, at the earliest step reaching them.
    REQUIRE(r["tiles"].size() == 16);
    for (int t = 0; t < 16; ++t) {
      std::int64_t most = -1;
      int at = -1;
      for (int s : steps)
        if (p.usage(i, t, s).total() > most) most = p.usage(i, t, s).total(), at = s;
      const std::vector<std::int64_t> tile = r["tiles"][static_cast<std::size_t>(t)].get<std::vector<std::int64_t>>();
      REQUIRE(tile.size() == 6);
      CHECK(tile[0] == at);
      CHECK(std::vector<std::int64_t>(tile.begin() + 1, tile.end()) == by_category(p.usage(i, t, at)));
    }
    // Each step: the fullest tile and its bytes, and the bytes of all the IPU's tiles.
    REQUIRE(r["steps"].size() == steps.size());
    for (std::size_t k = 0; k < steps.size(); ++k) {
      const nlohmann::json& s = r["steps"][k];
      CHECK(s["node"] == steps[k]);
      ipu::memory_bytes sum;
      std::int64_t most = -1;
      for (int t = 0; t < 16; ++t) {
        const ipu::memory_bytes u = p.usage(i, t, steps[k]);
        sum += u;
        most = std::max(most, u.total());
      }
      CHECK(s["ipu_bytes"].get<std::vector<std::int64_t>>() == by_category(sum));
      const ipu::memory_bytes fullest = p.usage(i, s["tile"].get<int>(), steps[k]);
      CHECK(fullest.total() == most);
      CHECK(s["bytes"].get<std::vector<std::int64_t>>() == by_category(fullest));
    }
  }
}

TEST_CASE("the memory report's JSON file: written to a path, refused for a path it cannot write") {
  const ipu::memory_report_t report = ipu::memory_report<split_t, quoted_target>();
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("ipu-memory-json-" + std::to_string(std::random_device{}()) + ".json");
  report.write_json(path.string());
  std::ifstream in(path);
  CHECK(nlohmann::json::parse(in)["ipu_reports"][1]["peak"] == report.ipus[1].plan.peak);
  in.close();
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(report.write_json(std::string("/nonexistent-directory/memory.json")),
                    Catch::Contains("ipu::memory_report: cannot write /nonexistent-directory/memory.json"));
}
