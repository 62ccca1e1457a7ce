// A stream of batches whose results name their batch, for the tests of engine::run and its
// feeds: the mean over H and W of a constant image is that constant, so result (n, c) of
// batch i is exactly value(i, n, c), an independent reference with no arithmetic to trust.
#pragma once

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace ipu_test::pool {

using graph_t = decltype(ipu::input<ipu::f32, 2, 2, 2, 3> | ipu::nn::global_avg_pool);
using in_t = ipu::input_tensor_t<graph_t>;
using out_t = ipu::output_tensor_t<graph_t>;
using engine_t = ipu::engine<graph_t, small_target<16>>;

/// Element (n, c) of batch `i`, at every H and W.
inline float value(std::int64_t i, int n, int c) { return static_cast<float>(i * 1000 + n * 100 + c); }

/// Batch `i` of the stream.
inline in_t batch(std::int64_t i) {
  in_t x;
  for (int n = 0; n < 2; ++n)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 2; ++w)
        for (int c = 0; c < 3; ++c) x(n, h, w, c) = value(i, n, c);
  return x;
}

/// Whether `y` is the result of batch `i`.
inline bool is_result_of(const out_t& y, std::int64_t i) {
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      if (y(n, c) != value(i, n, c)) return false;
  return true;
}

/// The batch whose result `y` is, or -1 if `y` is no batch's result.
inline std::int64_t batch_of(const out_t& y) {
  const std::int64_t i = static_cast<std::int64_t>(y(0, 0)) / 1000;
  return is_result_of(y, i) ? i : -1;
}

/// Whether `ys` are the results of batches `first`, `first + 1`, ... in order.
inline bool in_order(const std::vector<out_t>& ys, std::int64_t first = 0) {
  for (std::size_t k = 0; k < ys.size(); ++k)
    if (!is_result_of(ys[k], first + static_cast<std::int64_t>(k))) return false;
  return true;
}

/// A producer's failure, as a dataset reader would throw it.
struct stream_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Pushes batches 0, 1, ... into `in` until batch `at`, whose reading fails: aborts `in` with
/// a `stream_failure`, "the dataset's file <at> is corrupt", as `ipu::feed` does.
template <class Infeed>
void push_until_failure(Infeed& in, std::int64_t at) {
  try {
    for (std::int64_t i = 0;; ++i) {
      if (i == at) throw stream_failure("the dataset's file " + std::to_string(at) + " is corrupt");
      in.push(batch(i));
    }
  } catch (...) {
    in.abort(std::current_exception());
  }
}

}  // namespace ipu_test::pool
