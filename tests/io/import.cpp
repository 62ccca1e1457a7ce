// Importing weights another framework wrote (ipu::import_weights, ipu/checkpoint.hpp): files
// with the keys and layouts of torchvision's ResNet-18 and ResNet-50 `state_dict`s, built here
// from torchvision's module structure (not from ipu's paths), load into the zoo's resnet18 and
// resnet50 with every kernel transposed from OIHW to HWIO and the dense kernel from [out, in]
// to [in, out].

#include <catch2/catch.hpp>

#include <ipu/checkpoint.hpp>
#include <ipu/ipu.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace {

using resnet18 = ipu::models::resnet18<ipu::f32, 1, 3, ipu::models::padding_convention::pytorch>;
using resnet50 = ipu::models::resnet50<ipu::f32, 1, 3, ipu::models::padding_convention::pytorch>;

/// A value that names its tensor and position, positive (batch norms' variances must be).
float value_of(const std::string& key, std::int64_t i) {
  std::uint64_t h = 1469598103934665603ull;
  for (const char c : key) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return 0.5f + static_cast<float>((h % 997) * 1000 + static_cast<std::uint64_t>(i) % 1000) * 1e-7f;
}

using state_dict_keys = std::map<std::string, std::vector<std::int64_t>>;

/// The keys of a batch norm `name` of `c` channels.
void add_batch_norm(state_dict_keys& keys, const std::string& name, std::int64_t c) {
  for (const char* t : {"weight", "bias", "running_mean", "running_var"}) keys[name + "." + t] = {c};
}

/// torchvision's `resnet18` or `resnet50` `state_dict` (torchvision/models/resnet.py: `BasicBlock`
/// [2, 2, 2, 2], `Bottleneck` [3, 4, 6, 3] of expansion 4): key -> shape (OIHW kernels,
/// `fc.weight` [out, in]).
state_dict_keys torchvision_resnet(int depth) {
  const bool bottleneck = depth == 50;
  const int blocks[4] = {bottleneck ? 3 : 2, bottleneck ? 4 : 2, bottleneck ? 6 : 2, bottleneck ? 3 : 2};
  const std::int64_t expansion = bottleneck ? 4 : 1;
  state_dict_keys keys;
  keys["conv1.weight"] = {64, 3, 7, 7};
  add_batch_norm(keys, "bn1", 64);
  std::int64_t in = 64;
  for (int layer = 1; layer <= 4; ++layer) {
    const std::int64_t width = std::int64_t{64} << (layer - 1), out = width * expansion;
    for (int block = 0; block < blocks[layer - 1]; ++block) {
      const std::string p = "layer" + std::to_string(layer) + "." + std::to_string(block) + ".";
      if (bottleneck) {
        keys[p + "conv1.weight"] = {width, in, 1, 1};
        keys[p + "conv2.weight"] = {width, width, 3, 3};
        keys[p + "conv3.weight"] = {out, width, 1, 1};
        add_batch_norm(keys, p + "bn3", out);
      } else {
        keys[p + "conv1.weight"] = {width, in, 3, 3};
        keys[p + "conv2.weight"] = {width, width, 3, 3};
      }
      add_batch_norm(keys, p + "bn1", width);
      add_batch_norm(keys, p + "bn2", width);
      if (block == 0 && in != out) {
        keys[p + "downsample.0.weight"] = {out, in, 1, 1};
        add_batch_norm(keys, p + "downsample.1", out);
      }
      in = out;
    }
  }
  keys["fc.weight"] = {1000, in};
  keys["fc.bias"] = {1000};
  return keys;
}

/// Writes ResNet-`depth`'s state dict to a file called `name` (each test its own: CTest runs
/// them in parallel), without `skip`, with `reshape` flattened, and a tensor of none of ipu's
/// layers.
std::filesystem::path write_state_dict(const std::string& name, int depth = 18, const std::string& skip = "",
                                       const std::string& reshape = "") {
  ipu::safetensors::writer out;
  for (const auto& [key, shape] : torchvision_resnet(depth)) {
    if (key == skip) continue;
    std::int64_t n = 1;
    for (const std::int64_t d : shape) n *= d;
    std::vector<float> values(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) values[static_cast<std::size_t>(i)] = value_of(key, i);
    out.add(key, key == reshape ? std::vector<std::int64_t>{n} : shape, values);
  }
  out.add("bn1.num_batches_tracked", std::vector<std::int64_t>{}, std::vector<float>{1});
  const auto path = std::filesystem::temp_directory_path() / ("ipu_import_test_" + name + ".safetensors");
  out.write(path);
  return path;
}

}  // namespace

TEST_CASE("torchvision's ResNet names for the zoo's layers") {
  CHECK(ipu::torchvision_resnet_name("stem.conv1", "kernel") == "conv1.weight");
  CHECK(ipu::torchvision_resnet_name("stem.batch_norm1", "variance") == "bn1.running_var");
  CHECK(ipu::torchvision_resnet_name("stage1.block1.conv2", "kernel") == "layer1.0.conv2.weight");
  CHECK(ipu::torchvision_resnet_name("stage3.block12.batch_norm3", "shift") == "layer3.11.bn3.bias");
  CHECK(ipu::torchvision_resnet_name("stage2.block1.shortcut.conv1", "kernel") == "layer2.0.downsample.0.weight");
  CHECK(ipu::torchvision_resnet_name("stage2.block1.shortcut.batch_norm1", "mean") == "layer2.0.downsample.1.running_mean");
  CHECK(ipu::torchvision_resnet_name("dense1", "bias") == "fc.bias");
  REQUIRE_THROWS_MATCHES(ipu::torchvision_resnet_name("stage1.conv1", "kernel"), ipu::checkpoint_error,
                         Catch::Matchers::Message("ipu::torchvision_resnet_name: no torchvision name for stage1.conv1.kernel"));
  REQUIRE_THROWS_AS(ipu::torchvision_resnet_name("stage1.block0.conv1", "kernel"), ipu::checkpoint_error);
  REQUIRE_THROWS_AS(ipu::torchvision_resnet_name("stem.conv1", "gamma"), ipu::checkpoint_error);
}

TEST_CASE("a torchvision ResNet-18 state dict imports with its kernels transposed to ipu's layouts") {
  const auto path = write_state_dict("whole");
  const auto w = ipu::import_weights<resnet18>(path, ipu::torchvision_resnet_name);
  // OIHW [o, i, y, x] at ((o * I + i) * KH + y) * KW + x; HWIO [y, x, i, o] at ((y * KW + x) * I + i) * O + o.
  const auto stem = w["stem.conv1"]["kernel"];  // [7, 7, 3, 64]
  for (std::int64_t o : {0, 10, 63})
    for (std::int64_t i : {0, 2})
      for (std::int64_t y : {0, 3, 6})
        for (std::int64_t x : {1, 6})
          CHECK(stem[static_cast<std::size_t>(((y * 7 + x) * 3 + i) * 64 + o)] == value_of("conv1.weight", ((o * 3 + i) * 7 + y) * 7 + x));
  const auto shortcut = w["stage2.block1.shortcut.conv1"]["kernel"];  // [1, 1, 64, 128]
  CHECK(shortcut[5 * 128 + 7] == value_of("layer2.0.downsample.0.weight", 7 * 64 + 5));
  const auto fc = w["dense1"]["kernel"];  // [512, 1000]
  CHECK(fc[3 * 1000 + 17] == value_of("fc.weight", 17 * 512 + 3));
  CHECK(w["dense1"]["bias"][999] == value_of("fc.bias", 999));
  CHECK(w["stage4.block2.batch_norm2"]["variance"][9] == value_of("layer4.1.bn2.running_var", 9));
  CHECK(w["stage3.block1.shortcut.batch_norm1"]["scale"][200] == value_of("layer3.0.downsample.1.weight", 200));
  std::filesystem::remove(path);
}

TEST_CASE("an import lacking a tensor or with a wrong shape names the file's tensor and ipu's") {
  auto path = write_state_dict("lacking", 18, "layer3.1.conv2.weight");
  REQUIRE_THROWS_MATCHES(ipu::import_weights<resnet18>(path, ipu::torchvision_resnet_name), ipu::checkpoint_error,
                         Catch::Matchers::Message(path.string() +
                                                  ": no tensor 'layer3.1.conv2.weight' (for stage3.block2.conv2.kernel)"));
  std::filesystem::remove(path);
  path = write_state_dict("reshaped", 18, "", "fc.weight");
  REQUIRE_THROWS_MATCHES(ipu::import_weights<resnet18>(path, ipu::torchvision_resnet_name), ipu::checkpoint_error,
                         Catch::Matchers::Message(path.string() +
                                                  ": tensor 'fc.weight' has shape [512000]; dense1.kernel needs [1000, 512]"));
  std::filesystem::remove(path);
}

TEST_CASE("a torchvision ResNet-50 state dict imports: bottlenecks, and a downsample in every stage") {
  const auto path = write_state_dict("resnet50", 50);
  const auto w = ipu::import_weights<resnet50>(path, ipu::torchvision_resnet_name);
  // The file's structure against torchvision's published count: 25,557,032 parameters, the
  // running statistics aside. ipu holds those too.
  std::int64_t parameters = 0, statistics = 0;
  for (const auto& [key, shape] : torchvision_resnet(50)) {
    std::int64_t n = 1;
    for (const std::int64_t d : shape) n *= d;
    (key.ends_with("running_mean") || key.ends_with("running_var") ? statistics : parameters) += n;
  }
  CHECK(parameters == 25'557'032);
  std::int64_t values = 0;
  for (const auto& layer : w)
    for (const auto& t : layer.tensors()) values += static_cast<std::int64_t>(t.values.size());
  CHECK(values == parameters + statistics);
  // layer1.0.conv3 [256, 64, 1, 1] -> HWIO [1, 1, 64, 256]; layer4.2.conv2 [512, 512, 3, 3] -> [3, 3, 512, 512].
  CHECK(w["stage1.block1.conv3"]["kernel"][5 * 256 + 200] == value_of("layer1.0.conv3.weight", 200 * 64 + 5));
  CHECK(w["stage4.block3.conv2"]["kernel"][static_cast<std::size_t>(((2 * 3 + 1) * 512 + 7) * 512 + 300)] ==
        value_of("layer4.2.conv2.weight", ((300 * 512 + 7) * 3 + 2) * 3 + 1));
  CHECK(w["stage1.block1.shortcut.conv1"]["kernel"][63 * 256 + 255] == value_of("layer1.0.downsample.0.weight", 255 * 64 + 63));
  CHECK(w["stage3.block6.batch_norm3"]["mean"][1023] == value_of("layer3.5.bn3.running_mean", 1023));
  CHECK(w["dense1"]["kernel"][2047 * 1000 + 999] == value_of("fc.weight", 999 * 2048 + 2047));
  std::filesystem::remove(path);
}
