// The examples of docs/feeds.md, compiled and run. Keep the two in step.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include <range/v3/view/iota.hpp>
#include <range/v3/view/transform.hpp>

#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

// A namespace of its own: the guides' examples that run engines are one translation unit
// (tests/CMakeLists.txt).
namespace feeds_doc {

namespace {
namespace nn = ipu::nn;

// [model]
using model_t = decltype(ipu::input<ipu::f32, /*N*/ 2, /*H*/ 8, /*W*/ 8, /*C*/ 3>
                         | nn::conv<16, 3, 2> | nn::batch_norm | nn::relu
                         | nn::global_avg_pool | nn::dense<10> | nn::softmax);
// [model]

using image = ipu::input_tensor_t<model_t>;

float sum_of(const ipu::output_tensor_t<model_t>& y, int n) {
  float s = 0;
  for (int c = 0; c < 10; ++c) s += y(n, c);
  return s;
}
}  // namespace

TEST_CASE("docs/feeds.md: run batches from an infeed into an outfeed") {
  std::vector<image> dataset(20);
  for (std::size_t i = 0; i < dataset.size(); ++i)
    for (float& v : dataset[i]) v = static_cast<float>(i % 7) / 7.0f;

  // [run]
  ipu::engine<model_t, ipu::mk2> engine{ipu::weights<model_t>::random(42)};
  ipu::infeed<model_t, /*prefetch depth*/ 8> in;       // elements: ipu::tensor<float, 2, 8, 8, 3>
  ipu::outfeed<model_t, ipu::outfeed_mode::all> out;   // elements: ipu::tensor<float, 2, 10>

  std::jthread producer([&](std::stop_token stop) {
    for (const image& batch : dataset)
      if (!in.push(batch, stop)) return;               // false: cancelled, or asked to stop
    in.close();                                        // the end of the stream
  });
  ipu::run_stats stats = engine.run(in, out, /*iterations*/ 1000);  // 20 ran: the infeed ended
  for (const auto& y : out.drain()) { /* y(n, class) */ (void)y; }
  // [run]
  CHECK(stats.iterations == 20);
  CHECK(stats.end_of_stream);
  CHECK(out.empty());
}

TEST_CASE("docs/feeds.md: a range-v3 pipeline feeds the infeed, results are consumed as they come") {
  ipu::engine<model_t, ipu::mk2> engine{ipu::weights<model_t>::random(42)};
  ipu::outfeed<model_t, ipu::outfeed_mode::all> out;
  std::vector<float> sums;
  // [pipeline]
  ipu::infeed<model_t, 4> in;
  const auto synthetic = [](int i) {                   // index -> normalised batch
    image x;
    for (float& v : x) v = static_cast<float>(i % 10) / 10.0f - 0.5f;
    return x;
  };
  std::jthread producer([&](std::stop_token stop) {
    ipu::feed(in, ranges::views::iota(0, 100) | ranges::views::transform(synthetic), stop);
  });
  std::jthread consumer([&] {
    for (ipu::output_tensor_t<model_t> y; out.pop(y);) // ends when the outfeed is closed
      sums.push_back(y(0, 0) + y(0, 1));
  });
  engine.run(in, out, 100);                            // exactly the stream: no end seen,
  out.close();                                         // so close the outfeed for the consumer
  // [pipeline]
  consumer.join();
  CHECK(sums.size() == 100);
}

TEST_CASE("docs/feeds.md: zero-copy writes, the last result, and a producer's error") {
  ipu::engine<model_t, ipu::mk2> engine{ipu::weights<model_t>::random(42)};
  std::string error;
  // [emplace]
  ipu::infeed<model_t, 2> in;
  ipu::outfeed<model_t, ipu::outfeed_mode::last> latest;
  std::jthread producer([&] {
    try {
      for (int i = 0; i < 10; ++i) {
        if (i == 6) throw std::runtime_error("camera 3 disconnected");
        in.emplace([&](image& slot) {                  // written in place: no copy, no allocation
          for (float& v : slot) v = 0.1f * static_cast<float>(i);
        });
      }
      in.close();
    } catch (...) {
      in.abort(std::current_exception());              // engine.run rethrows it, after batches 0-5
    }
  });
  try {
    engine.run(in, latest, 10);
  } catch (const std::runtime_error& e) {
    error = e.what();                                  // "camera 3 disconnected"
  }                                                    // latest.drain(): batch 5's result
  // [emplace]
  CHECK(error == "camera 3 disconnected");
  const auto ys = latest.drain();
  REQUIRE(ys.size() == 1);
  CHECK(std::abs(sum_of(ys[0], 0) - 1.0f) < 1e-4f);
  CHECK(latest.pushed() == 6);
}

}  // namespace feeds_doc
