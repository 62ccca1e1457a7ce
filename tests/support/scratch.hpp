#pragma once
// A fresh directory for a test's files.

#include <filesystem>
#include <string>

namespace ipu_test {

/// An empty directory `ipu_test_<name>` under the system's temporary one, created anew (give
/// each test case its own name: CTest runs tests in parallel).
inline std::filesystem::path scratch_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("ipu_test_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace ipu_test
