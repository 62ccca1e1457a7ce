#pragma once
/// \file
/// Reading a whole file into memory, for the readers of file formats (`io/safetensors.hpp`,
/// `data/idx.hpp`).

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace ipu::detail {

/// The bytes of the file at `path`, as `Byte`s; throws `Error` (constructed from a message
/// naming the file) if it cannot be opened or read.
template <class Byte, class Error>
std::vector<Byte> read_file(const std::filesystem::path& path) {
  static_assert(sizeof(Byte) == 1);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error(path.string() + ": cannot open: " + std::strerror(errno));
  std::vector<Byte> bytes;
  Byte chunk[1 << 16];
  std::size_t got = 0;
  while ((got = std::fread(chunk, 1, sizeof chunk, f)) > 0) bytes.insert(bytes.end(), chunk, chunk + got);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) throw Error(path.string() + ": read error");
  return bytes;
}

}  // namespace ipu::detail
