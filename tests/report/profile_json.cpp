// The profile's JSON: a target name and layer paths with quotes, backslashes and control
// characters come out as a valid document whose strings parse back to the names.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include "support/json_parser.hpp"

#include <optional>
#include <sstream>
#include <string>

namespace nn = ipu::nn;

namespace {
/// A Mk2 with 16 tiles, whose name needs every kind of escape.
struct oddly_named {
  static constexpr ipu::chip_spec chip = ipu::with_tiles(ipu::mk2::chip, 16);
  static constexpr int ipus = 1;
  static constexpr const char* name = "lab \"B\" \\ rack\n7\t\x01";
};

constexpr auto net = ipu::input<ipu::f32, 2, 4, 4, 3> | nn::scope<"say \"hi\"\\ \n">(nn::relu) | nn::global_avg_pool;
using net_t = decltype(net);
}  // namespace

TEST_CASE("profile JSON: names with quotes, backslashes and control characters parse back") {
  const ipu::profile p(ipu::runtime::program::from(ipu::plan_v<net_t, oddly_named>), 2, oddly_named::name, "fast");
  std::ostringstream os;
  p.write_json(os);
  const std::string json = os.str();
  CHECK(json.find(R"("target": "lab \"B\" \\ rack\n7\t\u0001",)") != std::string::npos);
  const std::optional<ipu_test::json_value> doc = ipu_test::parse_json(json);
  REQUIRE(doc.has_value());
  CHECK((*doc)["target"].string == oddly_named::name);
  CHECK((*doc)["mode"].string == "fast");
  const auto& steps = (*doc)["steps"].items;
  REQUIRE(steps.size() == p.steps().size());
  for (std::size_t j = 0; j < steps.size(); ++j) {
    CHECK(steps[j]["path"].string == p.steps()[j].path.view());
    CHECK(steps[j]["op"].string == ipu::name_of(p.steps()[j].kind));
  }
  CHECK(steps[1]["path"].string.starts_with("say \"hi\"\\ \n"));
}
