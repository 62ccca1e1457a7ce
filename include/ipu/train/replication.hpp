#pragma once
/// \file
/// Data parallelism: replicas of a model, each training on its own samples, whose gradients
/// are summed (or averaged) across the replicas once per step, so that every replica applies
/// the same update (TensorFlow's `CrossReplicaGradientAccumulationOptimizerV2`: "reduces the
/// number of times the gradients are exchanged between replicas by a factor of the number of
/// mini-batches").
///
/// A trainer takes part in a group of replicas through a `gradient_reducer`
/// (`trainer_config::reducer`): in one process a `replica_group` connects trainers on threads
/// of their own (`ipu::replicated_trainer` makes them), and across processes
/// `ipu/distributed/mpi.hpp` connects one trainer per process with `MPI_Allreduce`.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace ipu {

/// What a trainer needs of the other replicas: the same sums, and rank 0's values, on every
/// replica. Each call is collective: every replica of the group makes it, in the same order,
/// with as many values.
class gradient_reducer {
 public:
  virtual ~gradient_reducer() = default;
  /// The replicas of the group, this one included.
  virtual int replicas() const noexcept = 0;
  /// This replica's index in the group, from 0.
  virtual int rank() const noexcept = 0;
  /// Replaces `values` by their sums over the replicas, the same bits on every replica.
  virtual void sum(std::span<float> values) = 0;
  /// Replaces `values` by their sums over the replicas, the same bits on every replica.
  virtual void sum(std::span<double> values) = 0;
  /// Replaces `values` by rank 0's.
  virtual void broadcast(std::span<float> values) = 0;
};

/// What a replica waiting for the others of its `replica_group` throws once the group is
/// aborted (`replica_group::abort`): another replica failed.
struct replica_group_aborted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Replicas in one process, each on a thread of its own: `member(r)` is replica `r`'s
/// reducer. A sum adds the replicas' values in the order of their ranks, once, and every
/// replica copies the result: the same bits for any timing of the threads. The members wait
/// for each other at each call, so every replica must make every call; a replica that fails
/// calls `abort`, and the others' waits throw `replica_group_aborted`.
class replica_group {
 public:
  /// A group of `replicas` replicas (at least 1). Throws `std::invalid_argument` otherwise.
  explicit replica_group(int replicas)
      : floats_(checked(replicas)), doubles_(static_cast<std::size_t>(replicas)) {
    for (int r = 0; r < replicas; ++r) members_.push_back(std::make_unique<member_reducer>(*this, r));
  }
  replica_group(const replica_group&) = delete;
  replica_group& operator=(const replica_group&) = delete;

  /// Replicas in the group.
  int replicas() const noexcept { return static_cast<int>(members_.size()); }
  /// The reducer of replica `r`, for its trainer (`trainer_config::reducer`).
  gradient_reducer& member(int r) { return *members_.at(static_cast<std::size_t>(r)); }
  /// Wakes every replica waiting for the others, and makes every later wait, with
  /// `replica_group_aborted`.
  void abort() {
    const std::lock_guard lock(m_);
    aborted_ = true;
    cv_.notify_all();
  }
  /// Whether `abort` was called.
  bool aborted() const {
    const std::lock_guard lock(m_);
    return aborted_;
  }

 private:
  static std::size_t checked(int replicas) {
    if (replicas < 1) throw std::invalid_argument("ipu::replica_group: " + std::to_string(replicas) + " replicas; at least 1");
    return static_cast<std::size_t>(replicas);
  }

  /// Waits until every replica has arrived (a generation of the barrier).
  void arrive_and_wait() {
    std::unique_lock lock(m_);
    if (aborted_) throw replica_group_aborted("ipu::replica_group: another replica failed");
    const std::uint64_t generation = generation_;
    if (++arrived_ == members_.size()) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != generation || aborted_; });
    if (generation_ == generation) throw replica_group_aborted("ipu::replica_group: another replica failed");
  }

  class member_reducer final : public gradient_reducer {
   public:
    member_reducer(replica_group& g, int rank) : group_(g), rank_(rank) {}
    int replicas() const noexcept override { return group_.replicas(); }
    int rank() const noexcept override { return rank_; }
    void sum(std::span<float> values) override { group_.reduce(rank_, values, group_.floats_, group_.float_result_, false); }
    void sum(std::span<double> values) override { group_.reduce(rank_, values, group_.doubles_, group_.double_result_, false); }
    void broadcast(std::span<float> values) override { group_.reduce(rank_, values, group_.floats_, group_.float_result_, true); }

   private:
    replica_group& group_;
    int rank_;
  };

  /// Every replica posts its values; replica 0 sums them in rank order (or takes its own, for
  /// a broadcast) into `result`; then every replica copies `result`. The third wait keeps the
  /// result until all have copied it.
  template <class V>
  void reduce(int rank, std::span<V> values, std::vector<std::span<V>>& posted, std::vector<V>& result, bool broadcast) {
    posted[static_cast<std::size_t>(rank)] = values;
    arrive_and_wait();
    if (rank == 0) {
      result.assign(values.begin(), values.end());
      if (!broadcast)
        for (std::size_t r = 1; r < posted.size(); ++r)
          for (std::size_t i = 0; i < result.size() && i < posted[r].size(); ++i) result[i] += posted[r][i];
    }
    arrive_and_wait();
    for (std::size_t i = 0; i < values.size() && i < result.size(); ++i) values[i] = result[i];
    arrive_and_wait();
  }

  mutable std::mutex m_;
  std::condition_variable cv_;
  std::size_t arrived_ = 0;
  std::uint64_t generation_ = 0;
  bool aborted_ = false;
  std::vector<std::span<float>> floats_;
  std::vector<std::span<double>> doubles_;
  std::vector<float> float_result_;
  std::vector<double> double_result_;
  std::vector<std::unique_ptr<member_reducer>> members_;
};

}  // namespace ipu
