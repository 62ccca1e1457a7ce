// The examples of docs/memory-planning.md, compiled and run. Keep the two in step
// (tests/docs/examples_in_step.py checks that they are).
#include <ipu/ipu.hpp>
#include <iostream>

#include "support/stdout_capture.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>

namespace memory_planning {
using model_t = ipu::models::resnext101_32x4d<ipu::f16, /*batch*/ 4, /*channels*/ 4>;
constexpr ipu::options opts{.available_memory_proportion = {3, 10}};   // 0.3, as the seed sets it

static_assert(ipu::require_fit<model_t, ipu::mk2, opts>);        // a compile error if not
static_assert(!ipu::fits_v<model_t, ipu::mk1, opts>);            // a plain bool: 256 KiB tiles are too small

using mk1x4 = ipu::system<ipu::mk1, 4>;
using placed_t = ipu::auto_shard<model_t, mk1x4>;                // on<0> and on<1>: two suffice
static_assert(ipu::require_fit<placed_t, mk1x4, opts>);

int main() { std::cout << ipu::memory_report<model_t, ipu::mk2, opts>(); return 0; }   // totals, histogram, fullest tiles
}  // namespace memory_planning

namespace {
struct tiny {
  static constexpr ipu::chip_spec chip = ipu::with_tiles(ipu::mk2::chip, 16);
  static constexpr int ipus = 1;
  static constexpr const char* name = "tiny";
};

constexpr ipu::options calibrated{.fixed = {.runtime_bytes = 12'000, .codelet_bytes = 3'000}};

namespace nn = ipu::nn;
constexpr ipu::input_stream grey = ipu::eight_bit_io({0.5}, {0.5});  // [0, 255] to [-1, 1]
constexpr auto net = ipu::input<ipu::f16, 32, 28, 28, 1, grey> | nn::conv<32, 3> | nn::relu | nn::global_avg_pool | nn::dense<10>;
using resnet = ipu::with_stream_t<ipu::models::resnet50<ipu::f16, 80>, ipu::imagenet_eight_bit>;
static_assert(std::is_same_v<ipu::input_tensor_t<decltype(net)>::value_type, std::uint8_t>);
static_assert(std::is_same_v<ipu::stream_type_t<resnet>, std::uint8_t> && ipu::fits_v<decltype(net), tiny>);
}  // namespace

TEST_CASE("docs/memory-planning.md: the examples compile and the report prints") {
  int exit_code = -1;
  const std::string out = ipu_test::stdout_of(memory_planning::main, exit_code);
  CHECK(exit_code == 0);
  CHECK(out.find("stage") != std::string::npos);
  using small_t = decltype(ipu::input<ipu::f32, 1, 8, 8, 8> | ipu::nn::conv<8, 3>);
  CHECK(ipu::plan_v<small_t, tiny, calibrated>.ipus[0].max_always_live >
        ipu::plan_v<small_t, tiny>.ipus[0].max_always_live);
}
