// The HTML report's page: its data read back from the page with nlohmann::json, every tile's
// bytes at every step decoded from its base64 cells and checked against the plan's own
// `usage`; names that would close the page's script or heading written harmlessly; a
// comparison embedding both reports. (tests/browser/ opens the page in Chromium.)
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "support/report_graphs.hpp"
#include "support/targets.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {
using ipu_test::report_graphs::split_t;  // the second half on IPU 1
using ipu_test::report_graphs::whole_t;
using one_ipu = ipu_test::small_target<16>;
constexpr ipu::train_options adam{.optimizer = ipu::adam{}, .recompute = ipu::recompute::per_block};
using training_t = ipu::training<whole_t, adam>;

// Two 16-tile Mk2s under a name that would end the page's script, unescaped.
struct script_target {
  static constexpr ipu::chip_spec chip = ipu::with_tiles(ipu::mk2::chip, 16);
  static constexpr int ipus = 2;
  static constexpr const char* name = "mk2 </script><b>";
};

// RFC 4648's base64, decoded without the writer's code: each character's 6 bits from its
// place in the alphabet.
std::string from_base64(std::string_view text) {
  constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::uint32_t bits = 0;
  int held = 0;
  for (const char c : text) {
    if (c == '=') break;
    const std::size_t v = alphabet.find(c);
    REQUIRE(v != std::string_view::npos);
    bits = bits << 6 | static_cast<std::uint32_t>(v);
    held += 6;
    if (held >= 8) {
      held -= 8;
      out += static_cast<char>(bits >> held & 0xff);
    }
  }
  return out;
}

// An IPU's cells from the page's data: its distinct rows, each of `tiles` 16-bit counts, and
// each step's row, laid out as `counts[step * tiles + tile]`.
std::vector<std::int64_t> cells_of(const nlohmann::json& ipu, int tiles) {
  const std::string rows = from_base64(ipu["rows"].get<std::string>());
  const std::size_t width = 2 * static_cast<std::size_t>(tiles);
  REQUIRE(rows.size() % width == 0);
  std::set<std::string> distinct;  // each row once
  for (std::size_t at = 0; at < rows.size(); at += width) distinct.insert(rows.substr(at, width));
  CHECK(distinct.size() == rows.size() / width);
  std::vector<std::int64_t> counts;
  for (const int row : ipu["steps"].get<std::vector<int>>()) {
    REQUIRE((static_cast<std::size_t>(row) + 1) * 2 * static_cast<std::size_t>(tiles) <= rows.size());
    for (int t = 0; t < tiles; ++t) {
      const std::size_t c = 2 * (static_cast<std::size_t>(row) * static_cast<std::size_t>(tiles) + static_cast<std::size_t>(t));
      counts.push_back(static_cast<unsigned char>(rows[c]) | static_cast<unsigned char>(rows[c + 1]) << 8);
    }
  }
  return counts;
}

// The text between the data element's tags.
std::string data_of(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"ipu-data\">";
  const std::size_t begin = page.find(open);
  REQUIRE(begin != std::string::npos);
  const std::size_t end = page.find("</script>", begin);
  REQUIRE(end != std::string::npos);
  return page.substr(begin + open.size(), end - begin - open.size());
}

std::size_t count(const std::string& text, std::string_view what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("the HTML report embeds the memory report, the profile and every tile's bytes at every step") {
  constexpr auto& p = ipu::plan_v<split_t, script_target>;
  const ipu::html_report report = ipu::make_html_report<split_t, script_target>("split </script> & <net>");
  std::ostringstream os;
  report.write(os);
  const std::string page = os.str();

  // Three scripts (the error collector, the data, the drawing), whatever the names hold.
  CHECK(count(page, "<script") == 3);
  CHECK(count(page, "</script>") == 3);
  CHECK(page.find("<title>split &lt;/script&gt; &amp; &lt;net&gt; - ipu report</title>") != std::string::npos);
  const std::string text = data_of(page);
  CHECK(text.find('<') == std::string::npos);
  const nlohmann::json data = nlohmann::json::parse(text);

  REQUIRE(data["runs"].size() == 1);
  const nlohmann::json& run = data["runs"][0];
  CHECK(run["name"] == "split </script> & <net>");
  CHECK(run["memory"]["target"] == "mk2 </script><b>");
  CHECK(run["memory"]["layers"].size() == p.size);
  CHECK(run["profile"]["steps"].size() == p.size);
  CHECK(run["profile"]["batches_measured"] == 0);
  CHECK(run["profile"]["mode"] == "plan");

  // The cells: 16-bit counts of `unit` bytes, rounded up; `unit` the least power of two that
  // keeps every count within 16 bits.
  const std::int64_t unit = run["tile_steps"]["unit"].get<std::int64_t>();
  REQUIRE(unit >= 1);
  CHECK((unit & (unit - 1)) == 0);
  std::int64_t most = 0;
  REQUIRE(run["tile_steps"]["ipus"].size() == 2);
  for (int i = 0; i < 2; ++i) {
    std::vector<int> steps;
    for (int n = 0; n < static_cast<int>(p.size); ++n)
      if (p.at(n).ipu == i) steps.push_back(n);
    const std::vector<std::int64_t> counts = cells_of(run["tile_steps"]["ipus"][static_cast<std::size_t>(i)], 16);
    REQUIRE(counts.size() == 16 * steps.size());
    for (std::size_t k = 0; k < steps.size(); ++k)
      for (int t = 0; t < 16; ++t) {
        const std::int64_t counted = counts[k * 16 + static_cast<std::size_t>(t)];
        const std::int64_t bytes = p.usage(i, t, steps[k]).total();
        CHECK(report.memory.ipus[static_cast<std::size_t>(i)].bytes_at(static_cast<int>(k), t) == bytes);
        most = std::max(most, bytes);
        CHECK(counted * unit >= bytes);
        CHECK(counted * unit < bytes + unit);
      }
  }
  CHECK((most + unit - 1) / unit <= 0xffff);
  if (unit > 1) CHECK((most + unit / 2 - 1) / (unit / 2) > 0xffff);
}

TEST_CASE("the HTML report compares two reports: both embedded, this one first") {
  const ipu::html_report two = ipu::make_html_report<split_t, script_target>("two IPUs");
  const ipu::html_report one = ipu::make_html_report<whole_t, one_ipu>("one IPU");
  std::ostringstream os;
  two.write(os, &one);
  const nlohmann::json data = nlohmann::json::parse(data_of(os.str()));
  REQUIRE(data["runs"].size() == 2);
  CHECK(data["runs"][0]["name"] == "two IPUs");
  CHECK(data["runs"][1]["name"] == "one IPU");
  CHECK(data["runs"][0]["memory"]["ipus"] == 2);
  CHECK(data["runs"][1]["memory"]["ipus"] == 1);
  CHECK(data["runs"][1]["memory"]["ipu_reports"][0]["peak"] == ipu::plan_v<whole_t, one_ipu>.ipus[0].peak);
}

TEST_CASE("the HTML report carries an engine's measured host times, and refuses a path it cannot write") {
  ipu::profile measured = ipu::plan_profile<whole_t, one_ipu>();
  std::vector<double> seconds(ipu::plan_v<whole_t, one_ipu>.size, 1e-3);
  measured.record_batch(seconds);
  const ipu::html_report report = ipu::make_html_report<whole_t, one_ipu>("measured", measured);
  std::ostringstream os;
  report.write(os);
  const nlohmann::json profile = nlohmann::json::parse(data_of(os.str()))["runs"][0]["profile"];
  CHECK(profile["batches_measured"] == 1);
  CHECK(profile["steps"][3]["host_seconds"].get<double>() == Approx(1e-3));
  CHECK_THROWS_WITH(report.write(std::string("/nonexistent-directory/report.html")),
                    Catch::Contains("ipu::html_report: cannot write /nonexistent-directory/report.html"));
}

TEST_CASE("the HTML report of a training step embeds its memory report, its profile and every tile's bytes at every step") {
  constexpr auto& p = ipu::plan_v<training_t, one_ipu>;
  const ipu::training_html_report report = ipu::make_html_report<training_t, one_ipu>("training");
  std::ostringstream os;
  report.write(os, &report);
  const nlohmann::json data = nlohmann::json::parse(data_of(os.str()));
  REQUIRE(data["runs"].size() == 2);
  const nlohmann::json& run = data["runs"][0];
  CHECK(run["kind"] == "training");
  CHECK(run["memory"]["peak"] == p.ipus[0].peak);
  CHECK(run["memory"]["training"] == "Adam (2 state tensors), master weights f32, recompute per block");
  const nlohmann::json& profile = run["profile"];
  CHECK(profile["steps_measured"] == 0);
  REQUIRE(profile["steps"].size() == p.step_count);
  std::int64_t cycles = 0;
  for (int s = 0; s < static_cast<int>(p.step_count); ++s) {
    const nlohmann::json& step = profile["steps"][static_cast<std::size_t>(s)];
    CHECK(step["node"] == p.steps[static_cast<std::size_t>(s)].node);
    CHECK(step["phase"] == std::string(ipu::name_of(p.steps[static_cast<std::size_t>(s)].phase)));
    const ipu::step_cycles c = p.cycles(s);
    CHECK(step["compute_cycles"] == c.compute);
    CHECK(step["exchange_cycles"] == c.exchange);
    CHECK(step["sync_cycles"] == c.sync);
    cycles += c.total();
  }
  CHECK(profile["cycles_per_step"] == cycles);
  CHECK(profile["window"]["stages"] == 1);
  CHECK(profile["window"]["micro_batches"] == 1);

  // The cells of IPU 0, step by step.
  const std::int64_t unit = run["tile_steps"]["unit"].get<std::int64_t>();
  REQUIRE(run["tile_steps"]["ipus"].size() == 1);
  const std::vector<std::int64_t> counts = cells_of(run["tile_steps"]["ipus"][0], 16);
  REQUIRE(counts.size() == 16 * p.step_count);
  for (std::size_t s = 0; s < p.step_count; ++s)
    for (int t = 0; t < 16; ++t) {
      const std::int64_t counted = counts[s * 16 + static_cast<std::size_t>(t)];
      const std::int64_t bytes = p.usage(t, static_cast<int>(s)).total();
      CHECK(report.memory.bytes_at(static_cast<int>(s), t) == bytes);
      CHECK(counted * unit >= bytes);
      CHECK(counted * unit < bytes + unit);
    }
}
