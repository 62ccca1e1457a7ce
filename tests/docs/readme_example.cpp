// The example at the top of README.md, compiled and run. Keep the two in step
// (tests/docs/examples_in_step.py checks that they are).
#include <ipu/ipu.hpp>
#include <iostream>
namespace nn = ipu::nn;

#include "support/stdout_capture.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string>

namespace readme {
template <int Width, int Out, int Stride>
constexpr auto body = nn::conv<Width, 1> | nn::batch_norm | nn::relu
                    | nn::conv<Width, 3, Stride, /*groups*/ 32> | nn::batch_norm | nn::relu
                    | nn::conv<Out, 1> | nn::batch_norm;

constexpr auto model = ipu::input<ipu::f16, 4, 224, 224, 4>          // N, H, W, C
    | nn::scope<"stem">(nn::conv<64, 7, 2> | nn::batch_norm | nn::relu | nn::max_pool<3, 2>)
    | nn::scope<"stage1">(nn::residual(body<128, 256, 1>, nn::conv<256, 1> | nn::batch_norm) | nn::relu
                          | nn::repeat<2>(nn::residual(body<128, 256, 1>) | nn::relu))
    | nn::global_avg_pool | nn::dense<1000>;
using model_t = decltype(model);

static_assert(ipu::output_shape_v<model_t> == std::array<std::int64_t, 2>{4, 1000});
static_assert(ipu::param_count_v<model_t> == 475'496);
int main() { std::cout << ipu::summary<model_t>(); return 0; }   // path, op, output shape, params, MACs, IPU

// By hand: stem 7*7*4*64 + 2*64; first block 8192+256+4608+256+32768+512 and projection
// 16384+512; two identity blocks 2*(32768+256+4608+256+32768+512); dense 256*1000+1000.
static_assert(7 * 7 * 4 * 64 + 2 * 64 + (8192 + 256 + 4608 + 256 + 32768 + 512) + (16384 + 512)
                  + 2 * (32768 + 256 + 4608 + 256 + 32768 + 512) + (256 * 1000 + 1000)
              == 475'496);
}  // namespace readme

TEST_CASE("README: the example's program prints the summary", "[docs]") {
  int exit_code = -1;
  const std::string out = ipu_test::stdout_of(readme::main, exit_code);
  CHECK(exit_code == 0);
  CHECK(out.find("stage1.block3.add") != std::string::npos);
  CHECK(out.find("475,496") != std::string::npos);
}
