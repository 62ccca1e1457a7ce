#pragma once
/// \file
/// The planning half of ipu: graphs and their layers, the model zoo, the compile-time queries,
/// the targets and their options, the memory plan of inference and of a training step, the
/// automatic sharding and pipeline timing, and the fit check `ipu::require_fit` (of a graph or
/// of `ipu::training<G, Opts>`) -- without the runtime, the kernels, the reports or the
/// training loop. It is what a translation unit that only proves a model fits needs, for a
/// fraction of `<ipu/ipu.hpp>`'s compile time (see docs/performance.md); `<ipu/ipu.hpp>`
/// includes it. The reports add `<ipu/report/memory_report.hpp>` and
/// `<ipu/report/training_report.hpp>`.
#include <ipu/version.hpp>

#include <ipu/core/dtype.hpp>
#include <ipu/core/fixed_string.hpp>
#include <ipu/core/shape.hpp>

#include <ipu/graph/compose.hpp>
#include <ipu/graph/layers.hpp>
#include <ipu/graph/node.hpp>
#include <ipu/graph/queries.hpp>

#include <ipu/models/efficientnet.hpp>
#include <ipu/models/mobilenet.hpp>
#include <ipu/models/padding.hpp>
#include <ipu/models/resnext.hpp>

#include <ipu/plan/auto_shard.hpp>
#include <ipu/plan/liveness.hpp>
#include <ipu/plan/pipeline_timing.hpp>
#include <ipu/plan/plan.hpp>
#include <ipu/plan/training.hpp>

#include <ipu/target/chip.hpp>
#include <ipu/target/mapping.hpp>
#include <ipu/target/options.hpp>

#include <ipu/train/options.hpp>
