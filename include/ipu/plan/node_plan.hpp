#pragma once
/// \file
/// `ipu::node_plan`: what the plan decides for one node: where its output and weights live,
/// the shape of its step's work, and its cycles. Each op fills it (`ops/<op>.hpp`, `plan`).

#include <ipu/plan/model.hpp>

#include <array>
#include <cstdint>

namespace ipu {

/// The plan of one node: where its tensors live and what its step needs.
struct node_plan {
  tensor_mapping output{};  ///< the output on the node's IPU
  tensor_mapping copy{};    ///< element-wise mapping of copies on other IPUs and of the send buffer
  tensor_mapping work{};    ///< the units the step's transients follow
  step_model step{};        ///< the shape of the step's work, from which its transients follow
  std::array<tensor_mapping, 2> weights{};  ///< weight tensors on the node's IPU
  std::array<std::int64_t, 2> weight_bytes{};  ///< bytes per element of each weight tensor
  int weight_tensors = 0;             ///< entries of `weights` in use: 0, 1 (conv) or 2 (dense, batch norm)
  bool sends = false;                 ///< read on another IPU: a send buffer during its step
  std::int64_t transient_bound = 0;   ///< available_memory_proportion x bytes per tile (conv, dense)
  transient_bytes transient_max{};    ///< transients of the fullest tile
  bool over_bound = false;            ///< no split met the bound: the memory-minimising one is used
  std::int64_t cycles = 0;            ///< estimated tile cycles of the step (compute and exchange)
};

}  // namespace ipu
