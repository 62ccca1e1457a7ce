#pragma once
/// \file
/// `ipu::detail::fnv1a64`: the 64-bit FNV-1a hash of a text, in constant evaluation and at run
/// time (the graph's duplicate-path check; checkpoints' network fingerprint).

#include <cstdint>
#include <string_view>

namespace ipu::detail {

/// FNV-1a, 64 bits (Fowler, Noll and Vo; http://www.isthe.com/chongo/tech/comp/fnv/): from the
/// offset basis 0xcbf29ce484222325, each byte XORed in, then a multiplication by the prime
/// 0x100000001b3.
constexpr std::uint64_t fnv1a64(std::string_view text) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

}  // namespace ipu::detail
