#pragma once
/// \file
/// Umbrella header: everything a user of ipu needs. `<ipu/planning.hpp>`, which it includes, is
/// the part that plans and checks fit, without the runtime.
#include <ipu/planning.hpp>

#include <ipu/core/tensor.hpp>

#include <ipu/runtime/engine.hpp>
#include <ipu/runtime/channel.hpp>
#include <ipu/runtime/feeds.hpp>
#include <ipu/runtime/io.hpp>
#include <ipu/runtime/profile.hpp>
#include <ipu/runtime/replicated_engine.hpp>
#include <ipu/runtime/weights.hpp>

#include <ipu/train/dropout.hpp>
#include <ipu/train/optimizer.hpp>
#include <ipu/train/precision.hpp>
#include <ipu/train/profile.hpp>
#include <ipu/train/replicated.hpp>
#include <ipu/train/replication.hpp>
#include <ipu/train/trainer.hpp>

#include <ipu/report/html_report.hpp>
#include <ipu/report/memory_report.hpp>
#include <ipu/report/training_report.hpp>
#include <ipu/report/summary.hpp>

/// \namespace ipu
/// Everything of the library: a neural-network graph for Graphcore's IPU written as a type
/// (`ipu::input<...> | ...`), compile-time queries on it (shapes, parameters, MACs), its memory
/// plan and fit check on a target such as `ipu::mk2`, and `ipu::engine`, which computes the
/// network on the host CPU as the plan lays it out. The layers are in `ipu::nn`.

/// \namespace ipu::kernels
/// The compute kernels the engine runs on the host: convolution and dense layers (the scalar
/// `kernels::conv` that faithful mode runs on each tile, and the vectorised
/// `kernels::packed_conv` of fast mode, whose instruction set is chosen at compile time),
/// pooling, softmax and the element-wise ops. For given target flags both modes give the same
/// bits.

/// \namespace ipu::runtime
/// The machinery behind `ipu::engine`: the run-time `program` copied out of a compile-time
/// plan, the BSP `executor` that runs it, and the `team` of host threads that shares each
/// phase of a step.
