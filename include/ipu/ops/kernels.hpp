#pragma once
/// \file
/// Every op's kernel (`ipu/ops/kernels/<op>.hpp`), for the executors: what `Op::kernel` names
/// in each op header, defined. Plan-only code includes the op headers alone and compiles no
/// host kernel.

#include <ipu/ops/kernels/adaptive_avg_pool.hpp>
#include <ipu/ops/kernels/add.hpp>
#include <ipu/ops/kernels/batch_norm.hpp>
#include <ipu/ops/kernels/concat.hpp>
#include <ipu/ops/kernels/conv.hpp>
#include <ipu/ops/kernels/flatten.hpp>
#include <ipu/ops/kernels/global_avg_pool.hpp>
#include <ipu/ops/kernels/input.hpp>
#include <ipu/ops/kernels/lanes_unary.hpp>
#include <ipu/ops/kernels/kernel.hpp>
#include <ipu/ops/kernels/pool.hpp>
#include <ipu/ops/kernels/relu.hpp>
#include <ipu/ops/kernels/softmax.hpp>
