#pragma once
/// \file
/// Umbrella header: everything a user of ipu needs.
#include <ipu/version.hpp>

#include <ipu/core/dtype.hpp>
#include <ipu/core/fixed_string.hpp>
#include <ipu/core/shape.hpp>
#include <ipu/core/tensor.hpp>

#include <ipu/graph/compose.hpp>
#include <ipu/graph/layers.hpp>
#include <ipu/graph/node.hpp>
#include <ipu/graph/queries.hpp>

#include <ipu/models/resnext.hpp>

#include <ipu/plan/auto_shard.hpp>
#include <ipu/plan/liveness.hpp>
#include <ipu/plan/plan.hpp>

#include <ipu/target/chip.hpp>
#include <ipu/target/mapping.hpp>
#include <ipu/target/options.hpp>

#include <ipu/runtime/engine.hpp>
#include <ipu/runtime/channel.hpp>
#include <ipu/runtime/feeds.hpp>
#include <ipu/runtime/io.hpp>
#include <ipu/runtime/profile.hpp>
#include <ipu/runtime/weights.hpp>

#include <ipu/report/memory_report.hpp>
#include <ipu/report/summary.hpp>
