// The program of docs/getting-started.md, compiled and run. Keep the two in step
// (tests/docs/examples_in_step.py checks that they are).
#include <ipu/ipu.hpp>

#include <iostream>

#include "support/stdout_capture.hpp"

#include <catch2/catch.hpp>

#include <numeric>
#include <sstream>
#include <string>
#include <vector>

namespace getting_started {
namespace nn = ipu::nn;

// A small classifier: batches of 2 RGB images of 32x32 pixels (NHWC), 10 classes.
constexpr auto model = ipu::input<ipu::f32, 2, 32, 32, 3>
    | nn::conv<16, 3> | nn::batch_norm | nn::relu
    | nn::residual(nn::conv<16, 3> | nn::batch_norm | nn::relu | nn::conv<16, 3> | nn::batch_norm)
    | nn::relu | nn::global_avg_pool | nn::dense<10> | nn::softmax;
using model_t = decltype(model);

static_assert(ipu::output_shape_v<model_t> == std::array<std::int64_t, 2>{2, 10});
static_assert(ipu::require_fit<model_t, ipu::mk2>);   // every tile of one Mk2 has room

int main() {
  std::cout << ipu::summary<model_t>();               // layers, shapes, parameters, MACs

  ipu::engine<model_t, ipu::mk2> engine{ipu::weights<model_t>::random(42)};
  ipu::input_tensor_t<model_t> images;                // ipu::tensor<float, 2, 32, 32, 3>
  for (auto& v : images) v = 0.5f;
  const ipu::output_tensor_t<model_t> classes = engine.infer(images);   // tensor<float, 2, 10>

  std::cout << "\nclass probabilities of image 0:";
  for (int c = 0; c < 10; ++c) std::cout << ' ' << classes(0, c);
  std::cout << "\n\n" << engine.profile();           // the cycles a Mk2 would take
  return 0;
}
}  // namespace getting_started

TEST_CASE("docs/getting-started.md: the first program runs and prints what the guide says") {
  int exit_code = -1;
  const std::string out = ipu_test::stdout_of(getting_started::main, exit_code);
  CHECK(exit_code == 0);

  // Parameters by hand: conv1 3*3*3*16, three batch norms of 2*16, two convs 3*3*16*16, and
  // the dense layer 16*10 + 10.
  CHECK(out.find("total params: 5,306") != std::string::npos);
  static_assert(3 * 3 * 3 * 16 + 3 * 2 * 16 + 2 * 3 * 3 * 16 * 16 + 16 * 10 + 10 == 5'306);

  // The softmax's ten probabilities, as printed (six significant digits), sum to one.
  const std::string label = "class probabilities of image 0:";
  const auto at = out.find(label);
  REQUIRE(at != std::string::npos);
  std::istringstream line(out.substr(at + label.size(), out.find('\n', at) - at - label.size()));
  std::vector<double> p;
  for (double v = 0; line >> v;) p.push_back(v);
  REQUIRE(p.size() == 10);
  CHECK(std::accumulate(p.begin(), p.end(), 0.0) == Approx(1.0).margin(1e-4));
  for (const double v : p) CHECK((v > 0 && v < 1));

  CHECK(out.find("profile on mk2") != std::string::npos);
}
