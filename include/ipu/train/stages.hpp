#pragma once
/// \file
/// The pipeline stages of a graph trained with `train_options`: one per IPU its layers are
/// placed on (`ipu::on<k>`), and the compile-time checks of a pipelined configuration, whose
/// errors name the layer or the numbers at fault.

#include <ipu/graph/diagnostics.hpp>
#include <ipu/plan/diagnostics.hpp>
#include <ipu/graph/queries.hpp>
#include <ipu/train/options.hpp>
#include <ipu/train/pipeline.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

namespace ipu {

/// The pipeline stages of node table `table`: the IPUs up to the last one a node is placed on
/// (1 for a graph on one IPU).
constexpr int pipeline_stages(std::span<const node> table) noexcept {
  int stages = 1;
  for (const node& n : table) stages = n.ipu + 1 > stages ? n.ipu + 1 : stages;
  return stages;
}

/// The first node of `table` a pipeline cannot run where it is: on the host, or on an IPU
/// before the previous node's (a pipeline's stages follow the IPUs in order); -1 if none.
constexpr int pipeline_out_of_order(std::span<const node> table) noexcept {
  for (std::size_t j = 0; j < table.size(); ++j)
    if (table[j].on_host() || (j > 0 && table[j].ipu < table[j - 1].ipu)) return static_cast<int>(j);
  return -1;
}

/// The first IPU below `table`'s last one that holds no node (a stage without layers); -1 if none.
constexpr int pipeline_empty_stage(std::span<const node> table) noexcept {
  for (int s = 0; s < pipeline_stages(table); ++s) {
    bool used = false;
    for (const node& n : table) used = used || n.ipu == s;
    if (!used) return s;
  }
  return -1;
}

/// The pipeline stages of graph `G`: the IPUs its layers are placed on (1 for a graph on one IPU).
template <Graph G>
inline constexpr int pipeline_stages_v = pipeline_stages(node_table_v<G>);

namespace diag {
struct grouped_schedule {};
struct interleaved_schedule {};
struct pipeline_stages { int value; };
struct gradient_accumulation { std::int64_t value; };
struct must_be_a_positive_multiple_of { std::int64_t value; };
struct previous_ipu { int value; };

/// Error: a pipelined training's gradient accumulation count is not a positive multiple of
/// its schedule's overlap (`ipu::pipeline_overlap`).
template <class Schedule, pipeline_stages Stages, gradient_accumulation Count, must_be_a_positive_multiple_of Multiple>
struct gradient_accumulation_does_not_fit_the_schedule {
  static_assert(Count.value < 0,
                "ipu: a pipelined training step's gradient_accumulation must be a positive multiple of 2 x stages for the "
                "grouped schedule, of the stages for the interleaved one (TensorFlow's rule)");
};
/// Error: a layer of a pipelined graph is on an IPU before the previous layer's, or on the host.
template <auto Layer, on_ipu Ipu, previous_ipu Previous>
struct pipeline_stages_out_of_order {
  static_assert(Ipu.value < 0,
                "ipu: the layers of a pipelined graph must follow the IPUs in order (ipu::on<0>, then ipu::on<1>, ...), "
                "none on the host");
};
/// Error: no layer of a pipelined graph is on IPU `Ipu`, below its last.
template <on_ipu Ipu, pipeline_stages Stages>
struct pipeline_stage_without_layers {
  static_assert(Ipu.value < 0, "ipu: every IPU of a pipeline, from 0 to its last, must hold layers: one stage each");
};
/// Error: more pipeline stages than the host executor runs.
template <pipeline_stages Stages, pipeline_stages Most>
struct too_many_pipeline_stages {
  static_assert(Stages.value < 0, "ipu: a pipeline has more stages than ipu::max_pipeline_stages");
};
}  // namespace diag

namespace detail {

/// Checks a pipelined training of `G` with `Opts`: `decltype` of it is a compile error naming
/// what is wrong, if anything is (`bool` when `G` is on one IPU or the schedule is sequential).
template <Graph G, train_options Opts>
consteval auto check_pipeline() {
  constexpr int stages = pipeline_stages_v<G>;
  if constexpr (stages == 1 || Opts.pipeline == pipeline_schedule::sequential) {
    return true;
  } else if constexpr (constexpr int j = pipeline_out_of_order(node_table_v<G>); j >= 0) {
    constexpr const node& n = node_table_v<G>[static_cast<std::size_t>(j)];
    return diag::pipeline_stages_out_of_order<diag::in_layer<n.path.length + 1>{n.path}, diag::on_ipu{n.ipu},
                                              diag::previous_ipu{(j > 0 ? node_table_v<G>[static_cast<std::size_t>(j - 1)].ipu : 0)}>{};
  } else if constexpr (constexpr int s = pipeline_empty_stage(node_table_v<G>); s >= 0) {
    return diag::pipeline_stage_without_layers<diag::on_ipu{s}, diag::pipeline_stages{stages}>{};
  } else if constexpr (stages > max_pipeline_stages) {
    return diag::too_many_pipeline_stages<diag::pipeline_stages{stages}, diag::pipeline_stages{max_pipeline_stages}>{};
  } else if constexpr (!pipeline_accepts(Opts.pipeline, stages, Opts.gradient_accumulation)) {
    using schedule = std::conditional_t<Opts.pipeline == pipeline_schedule::grouped, diag::grouped_schedule, diag::interleaved_schedule>;
    return diag::gradient_accumulation_does_not_fit_the_schedule<
        schedule, diag::pipeline_stages{stages}, diag::gradient_accumulation{Opts.gradient_accumulation},
        diag::must_be_a_positive_multiple_of{pipeline_overlap(Opts.pipeline, stages)}>{};
  } else {
    return true;
  }
}

}  // namespace detail

}  // namespace ipu
