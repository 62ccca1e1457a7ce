#pragma once
/// \file
/// Liveness of activations over the node table: when each node's output dies, which outputs
/// are live at each step, and the peak of live activation bytes per IPU. Weights are not here:
/// they are always live on their IPU.
///
/// One pass over the table plus one over the steps: O(nodes), no recursion.

#include <ipu/graph/node.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace ipu {

/// For each node, the last step (node index) that reads its output. The graph's output lives
/// to the last step; an output nobody reads dies at its own step. A residual block's input is
/// read by its `add`, so it stays live across the whole block.
template <std::size_t N>
constexpr std::array<int, N> last_use(const std::array<node, N>& table) noexcept {
  std::array<int, N> last{};
  for (std::size_t i = 0; i < N; ++i) {
    last[i] = static_cast<int>(i);
    for (int src : table[i].sources()) last[static_cast<std::size_t>(src)] = static_cast<int>(i);
  }
  if constexpr (N > 0) last[N - 1] = static_cast<int>(N - 1);
  return last;
}

/// Activation bytes of one IPU at each step.
template <std::size_t N>
struct activation_liveness {
  /// Bytes of outputs live during step `i` on the IPU (those produced at or before `i` and
  /// read at or after it), for the steps of nodes placed on the IPU; 0 for other steps.
  std::array<std::int64_t, N> live_bytes{};
  std::int64_t peak_bytes = 0;  ///< the largest `live_bytes`
  int peak_step = -1;           ///< the first step reaching the peak
};

/// Liveness of the activations that live on IPU `ipu`, as the plan holds them. An output lives
/// on the IPU of the node producing it, from its step to its last reader on that IPU; an output
/// read by a node on another IPU (or made on the host) is sent when it is produced, and its
/// copy there lives from that step to its last reader there; a host step reading an output
/// keeps it alive until the host step.
template <std::size_t N>
constexpr activation_liveness<N> activation_liveness_on(const std::array<node, N>& table, int ipu) noexcept {
  // last step at which output j (or its copy) is held on `ipu` (-1: never); it is held from step j
  std::array<int, N> to{};
  for (std::size_t j = 0; j < N; ++j) to[j] = table[j].ipu == ipu ? static_cast<int>(j) : -1;
  for (std::size_t i = 0; i < N; ++i)
    for (int src : table[i].sources())
      if (table[i].ipu == ipu || (table[i].on_host() && table[static_cast<std::size_t>(src)].ipu == ipu))
        to[static_cast<std::size_t>(src)] = std::max(to[static_cast<std::size_t>(src)], static_cast<int>(i));
  std::array<std::int64_t, N> born{}, dies{};  // bytes added at a step, removed after it
  for (std::size_t j = 0; j < N; ++j) {
    if (to[j] < 0) continue;
    const std::int64_t bytes = table[j].out.elements() * size_of(table[j].type);
    born[j] += bytes;
    dies[static_cast<std::size_t>(to[j])] += bytes;
  }
  activation_liveness<N> result;
  std::int64_t live = 0;
  for (std::size_t i = 0; i < N; ++i) {
    live += born[i];
    if (table[i].ipu == ipu) {
      result.live_bytes[i] = live;
      if (live > result.peak_bytes) result.peak_bytes = live, result.peak_step = static_cast<int>(i);
    }
    live -= dies[i];
  }
  return result;
}

}  // namespace ipu
