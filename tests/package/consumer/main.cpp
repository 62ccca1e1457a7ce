// Uses ipu the way a program outside the source tree does. It is built through
// find_package (consumer/CMakeLists.txt), through pkg-config, and through add_subdirectory
// (subdir_consumer/), so everything here must come from <ipu/ipu.hpp>, <ipu/checkpoint.hpp>
// and the usage requirements of ipu::ipu (nlohmann/json among them).
#include <ipu/checkpoint.hpp>
#include <ipu/ipu.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <type_traits>

static_assert(__cplusplus >= 202002L, "ipu::ipu must bring C++20 to its users");

int main(int, char** argv) {
  int failures = 0;
  auto check = [&failures](bool ok, const char* what) {
    if (!ok) {
      std::printf("FAILED: %s\n", what);
      ++failures;
    }
  };

  std::printf("ipu %s\n", ipu::version);
  check(std::strlen(ipu::version) > 0, "ipu::version is not empty");

  // ---- Graph query -------------------------------------------------------------------------
  // A graph built and checked by the compiler through the installed headers.
  namespace nn = ipu::nn;
  constexpr auto net = ipu::input<ipu::f32, 2, 16, 16, 3> | nn::conv<8, 3, 2> | nn::batch_norm | nn::relu |
                       nn::residual(nn::conv<8, 3, 1, 4> | nn::batch_norm) | nn::global_avg_pool | nn::dense<5>;
  using net_t = decltype(net);
  static_assert(ipu::output_shape_v<net_t> == std::array<std::int64_t, 2>{2, 5});
  // 3*3*3*8 + 2*8 + 3*3*2*8 + 2*8 + 8*5 + 5
  static_assert(ipu::param_count_v<net_t> == 216 + 16 + 144 + 16 + 45);
  check(ipu::summary<net_t>().str().find("block1.add") != std::string::npos, "summary");
  check(ipu::param_count_v<ipu::models::resnet50<ipu::f32, 1>> == 25'557'032, "model zoo");

  // ---- Checkpoints -------------------------------------------------------------------------
  // Written beside the program, which each packaging test builds in a directory of its own.
  using graph_t = std::remove_cvref_t<net_t>;
  const auto path = std::filesystem::path(argv[0]).parent_path() / "consumer_weights.safetensors";
  const auto saved = ipu::weights<graph_t>::random(1);
  ipu::save_weights(path, saved);
  check(ipu::load_weights<graph_t>(path)["dense1"]["bias"][4] == saved["dense1"]["bias"][4], "checkpoint");
  // ------------------------------------------------------------------------------------------

  std::printf("%s\n", failures == 0 ? "consumer ok" : "consumer FAILED");
  return failures == 0 ? 0 : 1;
}
