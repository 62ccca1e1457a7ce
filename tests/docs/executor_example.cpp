// The examples of docs/executor.md, compiled and run. Keep the two in step.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <vector>

// A namespace of its own: the guides' examples that run engines are one translation unit
// (tests/CMakeLists.txt).
namespace executor_doc {

namespace {
namespace nn = ipu::nn;

// [model]
using model_t = decltype(ipu::input<ipu::f16, /*N*/ 2, /*H*/ 16, /*W*/ 16, /*C*/ 4>
                         | nn::conv<32, 3, 2> | nn::batch_norm | nn::relu
                         | nn::residual(nn::conv<32, 3, 1, /*groups*/ 8> | nn::batch_norm)
                         | nn::relu | nn::global_avg_pool | nn::dense<10> | nn::softmax);
// [model]
}  // namespace

TEST_CASE("docs/executor.md: run a graph, load weights, read the profile") {
  // [run]
  auto w = ipu::weights<model_t>::random(42);        // the seed's initialisers, deterministic
  w["conv1"]["kernel"][0] = 0.5f;                     // layers by path, tensors by name
  ipu::engine<model_t, ipu::mk2> engine{w};           // fast mode, one thread per core

  ipu::input_tensor_t<model_t> x;                     // ipu::tensor<ipu::f16, 2, 16, 16, 4>
  for (auto& v : x) v = ipu::f16(0.25f);
  ipu::output_tensor_t<model_t> y = engine.infer(x);  // ipu::tensor<ipu::f16, 2, 10>

  std::ostringstream report;
  report << engine.profile();                         // simulated Mk2 time next to host time
  // [run]
  float sum = 0;
  for (int c = 0; c < 10; ++c) sum += static_cast<float>(y(0, c));
  CHECK(std::abs(sum - 1.0f) < 1e-2f);
  CHECK(report.str().find("images/s") != std::string::npos);
  CHECK(engine.profile().simulated_images_per_second() > 0);

  // [faithful]
  ipu::engine<model_t, ipu::mk2> faithful{w, {.mode = ipu::execution_mode::faithful, .threads = 2}};
  CHECK(faithful.infer(x) == y);                      // bit-identical to fast mode
  const auto& plan = faithful.plan();
  const int step = ipu::find_node(ipu::node_table_v<model_t>, "block1.conv1");
  CHECK(faithful.measured_usage(0, /*tile*/ 0, step) == plan.usage(0, 0, step));
  // [faithful]

  // [load]
  std::vector<std::vector<float>> arrays;             // one per tensor, in graph order
  for (const ipu::layer_weights& layer : w)
    for (const ipu::weight_tensor& t : layer.tensors()) arrays.push_back(t.values);
  auto loaded = ipu::weights<model_t>::from_arrays(arrays);
  CHECK_THROWS_AS(loaded["conv1"].assign("kernel", std::vector<float>(7)), ipu::weight_error);
  // [load]
  CHECK(ipu::engine<model_t, ipu::mk2>{loaded}.infer(x) == y);

  // [check_finite]
  ipu::engine<model_t, ipu::mk2> checked{w, {.check_finite = true}};
  x(0, 3, 5, 1) = ipu::f16(1e6f);                     // past 65504: inf in f16
  try {
    checked.infer(x);
  } catch (const ipu::non_finite_error& e) {
    std::ostringstream log;
    log << e.what();  // ipu::engine: step 0 (input, input) produced a non-finite value: element ...
  }
  // [check_finite]
  CHECK_THROWS_AS(checked.infer(x), ipu::non_finite_error);
}

}  // namespace executor_doc
