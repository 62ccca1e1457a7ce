// Two processes, each a replica of micro-batch 2 (ipu/distributed/mpi.hpp), against one process
// training on both replicas' samples as a batch of 4: the weights agree within 1e-4 relative
// (the sums of the gradients are ordered differently), and the two processes' weights agree bit
// for bit. Run by CTest as `mpirun -np 2 ...` (tests/distributed/CMakeLists.txt); prints what it
// measured, and exits with 1 on any failure, on every rank.

#include "support/targets.hpp"

#include <ipu/distributed/mpi.hpp>
#include <ipu/ipu.hpp>

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <span>
#include <type_traits>
#include <vector>

namespace nn = ipu::nn;

namespace {

using target = ipu_test::small_target<16>;

// No batch norm: a replica's gradient does not depend on the other replica's samples.
template <std::int64_t Batch>
constexpr auto plain_net = ipu::input<float, Batch, 6, 6, 3> | nn::conv<8, 3> | nn::relu
    | nn::residual(nn::conv<8, 1> | nn::relu) | nn::max_pool<2, 2> | nn::flatten | nn::dense<4>;
using replica_net = std::remove_cvref_t<decltype(plain_net<2>)>;
using whole_net = std::remove_cvref_t<decltype(plain_net<4>)>;

constexpr ipu::train_options opts{.optimizer = ipu::sgd{.learning_rate = 0.05, .momentum = 0.9}};
constexpr std::size_t sample = 6 * 6 * 3;

std::vector<float> flat(const auto& w) {
  std::vector<float> v;
  for (const ipu::layer_weights& l : w)
    for (const ipu::weight_tensor& t : l.tensors()) v.insert(v.end(), t.values.begin(), t.values.end());
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  ipu::mpi::environment mpi(argc, argv);   // MPI_Init, and MPI_Finalize at the end
  ipu::mpi::reducer replicas;              // the processes of MPI_COMM_WORLD
  const int rank = replicas.rank();
  int failures = 0;
  if (replicas.replicas() != 2) {
    if (rank == 0) std::printf("distributed.mpi: run with 2 processes, not %d\n", replicas.replicas());
    return 1;
  }
  // Every rank draws the same data; rank r trains on samples 2r and 2r + 1 of each step. Rank 1
  // starts from other weights, which the broadcast replaces with rank 0's.
  const auto initial = ipu::weights<replica_net>::random(rank == 0 ? 5 : 6);
  ipu::trainer<replica_net, target, opts> replica(initial, {.threads = 1, .reducer = &replicas});
  ipu::weights<whole_net> whole_initial;
  {
    const auto w0 = ipu::weights<replica_net>::random(5);
    for (std::size_t l = 0; l < w0.size(); ++l)
      for (const ipu::weight_tensor& t : w0[l].tensors()) std::ranges::copy(w0[l][t.name], whole_initial[l][t.name].begin());
  }
  ipu::trainer<whole_net, target, opts> whole(whole_initial, {.threads = 1});
  std::mt19937_64 rng(42);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  for (int step = 0; step < 4; ++step) {
    std::vector<float> x(4 * sample);
    for (float& v : x) v = noise(rng);
    std::vector<std::int32_t> y(4);
    for (auto& l : y) l = static_cast<std::int32_t>(rng() % 4);
    const float lr = replica.step(std::span(x).subspan(static_cast<std::size_t>(rank) * 2 * sample, 2 * sample),
                                  std::span(y).subspan(static_cast<std::size_t>(rank) * 2, 2));
    const float lw = whole.step(x, y);
    if (std::abs(lr - lw) > 1e-5f * std::abs(lw)) {
      std::printf("distributed.mpi: rank %d step %d: loss %.8g, one process %.8g\n", rank, step, static_cast<double>(lr),
                  static_cast<double>(lw));
      ++failures;
    }
  }
  const std::vector<float> mine = flat(replica.weights()), reference = flat(whole.weights());
  double largest = 0;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    const double d = std::abs(static_cast<double>(mine[i]) - reference[i]);
    largest = std::max(largest, d);
    if (d > 1e-6 + 1e-4 * std::abs(static_cast<double>(reference[i]))) ++failures;
  }
  // Rank 1's weights to rank 0, bit for bit.
  std::vector<float> other(mine.size());
  if (rank == 1) MPI_Send(mine.data(), static_cast<int>(mine.size()), MPI_FLOAT, 0, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    MPI_Recv(other.data(), static_cast<int>(other.size()), MPI_FLOAT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    const bool equal = std::ranges::equal(mine, other);
    if (!equal) ++failures;
    std::printf("distributed.mpi: 2 processes x micro-batch 2 against 1 process x batch 4, 4 SGD steps: "
                "largest weight difference %.3g over %zu weights; the two processes' weights %s\n",
                largest, mine.size(), equal ? "equal bit for bit" : "DIFFER");
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return total == 0 ? 0 : 1;
}
