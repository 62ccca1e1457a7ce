// Importing weights another framework wrote (ipu::import_weights, ipu/checkpoint.hpp): a file
// with the keys and layouts of torchvision's ResNet-18 `state_dict`, built here from
// torchvision's module structure (not from ipu's paths), loads into the zoo's resnet18 with
// every kernel transposed from OIHW to HWIO and the dense kernel from [out, in] to [in, out].

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

/// A value that names its tensor and position, positive (batch norms' variances must be).
float value_of(const std::string& key, std::int64_t i) {
  std::uint64_t h = 1469598103934665603ull;
  for (const char c : key) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return 0.5f + static_cast<float>((h % 997) * 1000 + static_cast<std::uint64_t>(i) % 1000) * 1e-7f;
}

/// torchvision's resnet18 `state_dict`: key -> shape (OIHW kernels, `fc.weight` [out, in]).
std::map<std::string, std::vector<std::int64_t>> torchvision_resnet18() {
  std::map<std::string, std::vector<std::int64_t>> keys;
  const auto bn = [&](const std::string& name, std::int64_t c) {
    for (const char* t : {"weight", "bias", "running_mean", "running_var"}) keys[name + "." + t] = {c};
  };
  keys["conv1.weight"] = {64, 3, 7, 7};
  bn("bn1", 64);
  for (int layer = 1; layer <= 4; ++layer) {
    const std::int64_t c = std::int64_t{64} << (layer - 1);
    for (int block = 0; block < 2; ++block) {
      const std::string p = "layer" + std::to_string(layer) + "." + std::to_string(block) + ".";
      const std::int64_t in = block == 0 && layer > 1 ? c / 2 : c;
      keys[p + "conv1.weight"] = {c, in, 3, 3};
      bn(p + "bn1", c);
      keys[p + "conv2.weight"] = {c, c, 3, 3};
      bn(p + "bn2", c);
      if (block == 0 && layer > 1) {
        keys[p + "downsample.0.weight"] = {c, c / 2, 1, 1};
        bn(p + "downsample.1", c);
      }
    }
  }
  keys["fc.weight"] = {1000, 512};
  keys["fc.bias"] = {1000};
  return keys;
}

/// Writes the state dict to a file called `name` (each test its own: CTest runs them in
/// parallel), without `skip`, with `reshape` flattened, and a tensor of none of ipu's layers.
std::filesystem::path write_state_dict(const std::string& name, const std::string& skip = "", const std::string& reshape = "") {
  ipu::safetensors::writer out;
  for (const auto& [key, shape] : torchvision_resnet18()) {
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
  auto path = write_state_dict("lacking", "layer3.1.conv2.weight");
  REQUIRE_THROWS_MATCHES(ipu::import_weights<resnet18>(path, ipu::torchvision_resnet_name), ipu::checkpoint_error,
                         Catch::Matchers::Message(path.string() +
                                                  ": no tensor 'layer3.1.conv2.weight' (for stage3.block2.conv2.kernel)"));
  std::filesystem::remove(path);
  path = write_state_dict("reshaped", "", "fc.weight");
  REQUIRE_THROWS_MATCHES(ipu::import_weights<resnet18>(path, ipu::torchvision_resnet_name), ipu::checkpoint_error,
                         Catch::Matchers::Message(path.string() +
                                                  ": tensor 'fc.weight' has shape [512000]; dense1.kernel needs [1000, 512]"));
  std::filesystem::remove(path);
}
