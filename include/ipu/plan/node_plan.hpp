#pragma once
/// \file
/// `ipu::node_plan`: what the plan decides for one node: where its output and weights live,
/// the shape of its step's work, and its cycles. Each op fills it (`ops/<op>.hpp`, `plan`).

#include <ipu/plan/model.hpp>

#include <array>
#include <cstdint>
#include <string_view>

namespace ipu {

/// The estimated cycles of one step (`plan/cycles.hpp`), on its IPU.
struct step_cycles {
  std::int64_t compute = 0;   ///< arithmetic of the fullest tile, over all serial slices
  std::int64_t exchange = 0;  ///< receiving the fullest tile's exchange buffers
  std::int64_t sync = 0;      ///< the IPU-wide syncs ending each compute and exchange phase
  std::int64_t link = 0;      ///< sending the output over the IPU-Link to the IPUs that read it
  std::int64_t host = 0;      ///< a host step's transfers over the host link (`ipu::on_host`)
  /// All five.
  constexpr std::int64_t total() const noexcept { return compute + exchange + sync + link + host; }
  /// Equal terms.
  constexpr bool operator==(const step_cycles&) const = default;
};

/// Where a step's transient buffers are on every tile of its IPU, in bytes from the tile's
/// dynamic base (`plan::dynamic_base`); -1 for a buffer the step does not have.
struct step_buffers {
  std::int64_t temporaries = -1;  ///< the partial sums
  std::int64_t exchange = -1;     ///< the received windows, weights and operands
  std::int64_t send = -1;         ///< the send buffer of an output read on another IPU
  /// Equal offsets.
  constexpr bool operator==(const step_buffers&) const = default;
};

/// The plan of one node: where its tensors live and what its step needs.
struct node_plan {
  tensor_mapping output{};  ///< the output on the node's IPU
  tensor_mapping copy{};    ///< element-wise mapping of copies on other IPUs and of the send buffer
  tensor_mapping work{};    ///< the units the step's transients follow
  step_model step{};        ///< the shape of the step's work, from which its transients follow
  std::array<tensor_mapping, 2> weights{};  ///< weight tensors on the node's IPU
  std::array<std::int64_t, 2> weight_bytes{};  ///< bytes per element of each weight tensor
  int weight_tensors = 0;             ///< entries of `weights` in use: 0, 1 (conv) or 2 (dense, batch norm)
  bool sends = false;                 ///< read on another IPU: a send buffer during its step (never for a host step)
  std::int64_t transient_bound = 0;   ///< available_memory_proportion x bytes per tile (conv, dense)
  transient_bytes transient_max{};    ///< transients of the fullest tile
  bool over_bound = false;            ///< no split met the bound, so it was doubled until one did (`ops::plan_matmul`)
  step_cycles cycles{};               ///< the step's estimated cycles
  step_buffers buffers{};             ///< where its transients are on each tile (`plan/allocation.hpp`)
  int fused_into = -1;  ///< fast mode: the convolution whose epilogue computes this node, or -1
  int fused_end = -1;   ///< fast mode, for a node computing its own step: the last node its epilogue computes
};

/// What a step does to its node. Inference has forward steps only; a training step
/// (`plan/training.hpp`) has forward, backward and update steps, and recompute steps when it
/// recomputes.
enum class step_phase : std::uint8_t {
  forward,   ///< computes the node's output from its inputs
  backward,  ///< computes the gradients of its inputs and weights from its output's
  update,    ///< applies the optimiser to its trainable tensors
  recompute, ///< computes the node's output again for the backward pass (`ipu::recompute`)
};

/// `"forward"`, `"backward"`, `"update"` or `"recompute"`.
constexpr std::string_view name_of(step_phase p) noexcept {
  constexpr std::string_view names[] = {"forward", "backward", "update", "recompute"};
  return names[static_cast<int>(p)];
}

/// One step of a plan: a phase of a node, on the node's IPU or on the host. Executors run a
/// plan's steps in order.
struct plan_step {
  int node = 0;                            ///< the node, an index of the node table
  step_phase phase = step_phase::forward;  ///< what the step does
  int ipu = 0;                             ///< the IPU it runs on, or `host_device`
};

}  // namespace ipu
