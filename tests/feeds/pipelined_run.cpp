// engine_config::pipelined: a graph over three IPUs runs as a pipeline of three stages, each on
// threads of its own, with a shortcut from the first stage into the last. Its results match the
// independent reference and have the bits of the unpipelined engine, batch by batch, in order;
// the stages really overlap; the errors of the stream, of a stage and of the configuration
// come out as engine::run promises.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

namespace pipelined_run {
namespace nn = ipu::nn;

constexpr auto staged = ipu::input<float, 2, 8, 8, 8>
    | ipu::on<0>(nn::conv<8, 3> | nn::batch_norm | nn::relu)
    | ipu::on<2>(nn::residual(ipu::on<1>(nn::conv<8, 3> | nn::relu) | nn::conv<8, 1>) | nn::global_avg_pool | nn::dense<4>);
using staged_t = std::remove_cvref_t<decltype(staged)>;
using three_ipus = ipu_test::small_target<16, 3>;
using engine_t = ipu::engine<staged_t, three_ipus>;
using input_t = ipu::input_tensor_t<staged_t>;
using output_t = ipu::output_tensor_t<staged_t>;

constexpr ipu::engine_config pipelined{.threads = 3, .pipelined = true};

TEST_CASE("pipelined run: three stages give the reference's values and the unpipelined bits, in order") {
  const auto w = ipu::weights<staged_t>::random(7);
  engine_t pipe{w, pipelined};
  engine_t plain{w, {.threads = 1}};
  CHECK(pipe.threads() == 3);  // one per stage
  constexpr int batches = 12;
  ipu::infeed<staged_t, 4> in;
  ipu::outfeed<staged_t> out;
  std::jthread producer([&] {
    for (int i = 0; i < batches; ++i) in.push(ipu_test::random_input<staged_t>(100 + static_cast<std::uint64_t>(i)));
    in.close();
  });
  const ipu::run_stats stats = pipe.run(in, out, 100);
  CHECK(stats.iterations == batches);
  CHECK(stats.end_of_stream);
  CHECK(out.closed());
  CHECK(stats.compute_seconds > 0);
  CHECK(stats.compute_seconds <= stats.seconds);
  const ipu::profile& p = pipe.profile();
  CHECK(p.batches_measured() == batches);
  // The cycle model: the first batch through the three IPUs, then one per busiest IPU's time.
  CHECK(stats.simulated_seconds == Approx(p.simulated_seconds_per_batch() + (batches - 1) * 2 / p.pipelined_images_per_second()));
  CHECK(stats.simulated_seconds < batches * p.simulated_seconds_per_batch());

  const std::vector<output_t> ys = out.drain();
  REQUIRE(ys.size() == batches);
  for (int i = 0; i < batches; ++i) {
    const input_t x = ipu_test::random_input<staged_t>(100 + static_cast<std::uint64_t>(i));
    CHECK(ipu_test::same_bits(ys[static_cast<std::size_t>(i)], plain.infer(x)));
    CHECK(ipu_test::same_bits(ys[static_cast<std::size_t>(i)], pipe.infer(x)));  // infer: a batch through the stages in turn
    if (i == 0) {
      const std::vector<double> expected = ipu_test::reference_output<staged_t>(x, w);
      CHECK(ipu_test::ref::max_relative_error(expected, ys[0].data(), ys[0].size(), -1) < 1e-5);
    }
  }
}

TEST_CASE("pipelined run: iterations bound a run, and the next continues the stream") {
  engine_t pipe{ipu::weights<staged_t>::random(3), pipelined};
  engine_t plain{ipu::weights<staged_t>::random(3), {.threads = 1}};
  ipu::infeed<staged_t, 8> in;
  ipu::outfeed<staged_t> out;
  for (int i = 0; i < 7; ++i) in.push(ipu_test::random_input<staged_t>(static_cast<std::uint64_t>(i)));
  in.close();
  const ipu::run_stats first = pipe.run(in, out, 4);
  CHECK(first.iterations == 4);
  CHECK_FALSE(first.end_of_stream);
  CHECK_FALSE(out.closed());
  const ipu::run_stats second = pipe.run(in, out, 10);
  CHECK(second.iterations == 3);
  CHECK(second.end_of_stream);
  const std::vector<output_t> ys = out.drain();
  REQUIRE(ys.size() == 7);
  for (int i = 0; i < 7; ++i)
    CHECK(ipu_test::same_bits(ys[static_cast<std::size_t>(i)], plain.infer(ipu_test::random_input<staged_t>(static_cast<std::uint64_t>(i)))));
}

TEST_CASE("pipelined run: a producer's exception comes out after the batches before it") {
  engine_t pipe{ipu::weights<staged_t>::random(3), pipelined};
  ipu::infeed<staged_t, 2> in;
  ipu::outfeed<staged_t> out;
  struct corrupt_file : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  std::jthread producer([&] {
    try {
      for (int i = 0; i < 100; ++i) {
        if (i == 5) throw corrupt_file("file 5 is corrupt");
        in.push(ipu_test::random_input<staged_t>(static_cast<std::uint64_t>(i)));
      }
    } catch (...) {
      in.abort(std::current_exception());
    }
  });
  CHECK_THROWS_MATCHES(pipe.run(in, out, 100), corrupt_file, Catch::Message("file 5 is corrupt"));
  CHECK(out.pushed() == 5);
  CHECK_FALSE(in.cancelled());
}

TEST_CASE("pipelined run: a stage's error stops every stage, cancels the infeed and aborts the outfeed") {
  engine_t pipe{ipu::weights<staged_t>::random(3), {.threads = 3, .check_finite = true, .pipelined = true}};
  ipu::infeed<staged_t, 16> in;
  ipu::outfeed<staged_t> out;
  for (int i = 0; i < 10; ++i) {
    input_t x = ipu_test::random_input<staged_t>(static_cast<std::uint64_t>(i));
    if (i == 6) x[0] = std::numeric_limits<float>::infinity();
    in.push(std::move(x));
  }
  try {
    pipe.run(in, out, 100);
    FAIL("no error");
  } catch (const ipu::non_finite_error& e) {
    CHECK(e.step() == 0);  // the input step of stage 0
  }
  CHECK(in.cancelled());
  CHECK(out.pushed() <= 6);  // batches after the failed one never reach the outfeed
  output_t y;
  for (std::uint64_t i = 0; i < out.pushed(); ++i) REQUIRE(out.pop(y));
  CHECK_THROWS_AS(out.pop(y), ipu::non_finite_error);
}

TEST_CASE("pipelined engine: fast mode only, and one IPU runs as without it") {
  const auto w = ipu::weights<staged_t>::random(3);
  CHECK_THROWS_WITH((engine_t{w, {.mode = ipu::execution_mode::faithful, .pipelined = true}}), Catch::Contains("fast mode"));
  using one_ipu = decltype(ipu::input<float, 2, 4, 4, 3> | nn::conv<4, 3> | nn::global_avg_pool);
  ipu::engine<one_ipu, ipu_test::small_target<16>> single{ipu::weights<one_ipu>::random(1), {.threads = 2, .pipelined = true}};
  CHECK(single.threads() == 2);
  // All on IPU 0 of three: one stage, nothing to pipeline.
  ipu::engine<one_ipu, three_ipus> first_only{ipu::weights<one_ipu>::random(1), {.threads = 2, .pipelined = true}};
  CHECK(first_only.threads() == 2);
  ipu::infeed<one_ipu, 2> in;
  ipu::outfeed<one_ipu> out;
  in.push(ipu::input_tensor_t<one_ipu>{});
  in.close();
  CHECK(first_only.run(in, out, 5).iterations == 1);
}

}  // namespace pipelined_run
