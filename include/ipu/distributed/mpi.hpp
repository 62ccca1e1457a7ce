#pragma once
/// \file
/// Replicas across processes and hosts over MPI (optional: needs an MPI library, e.g. Debian's
/// `libopenmpi-dev`, and linking `MPI::MPI_CXX`; `ipu/ipu.hpp` does not include this header).
/// Each process runs one `ipu::trainer`, a replica, whose reducer is an `ipu::mpi::reducer`:
/// its steps' gradients are summed over the processes with `MPI_Allreduce`, and it starts
/// from rank 0's weights (`MPI_Bcast`), as Graphcore's `PopDistStrategy` broadcasts initial
/// values and reduces gradients once per step.
///
/// ```
/// int main(int argc, char** argv) {
///   ipu::mpi::environment mpi(argc, argv);          // MPI_Init ... MPI_Finalize
///   ipu::mpi::reducer replicas;                      // MPI_COMM_WORLD
///   ipu::trainer<net_t, ipu::mk2, opts> trainer{ipu::weights<net_t>::random(1), {.reducer = &replicas}};
///   // each process steps on its own shard of the data: replicas.rank() of replicas.replicas()
/// }
/// ```
///
/// Run with `mpirun -np 2 ./program`. A sum is `MPI_SUM` of `MPI_FLOAT` or `MPI_DOUBLE`: Open
/// MPI's algorithms add the same pairs of values on every rank, and addition is commutative,
/// so every rank receives the same bits (the test `distributed.mpi` checks the weights of both
/// processes bit for bit).

#include <ipu/train/replication.hpp>

#ifndef OMPI_SKIP_MPICXX
/// Leaves Open MPI's C++ bindings out of `<mpi.h>`: they are deprecated since MPI 2.2, removed
/// in MPI 3.0, and not used here (MPI's C interface is).
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
/// Leaves MPICH's C++ bindings out of `<mpi.h>` (see `OMPI_SKIP_MPICXX`).
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>

namespace ipu::mpi {

/// An MPI call that failed: the call and MPI's message.
struct mpi_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace detail {
/// Throws `mpi_error` naming `call` and MPI's message unless `code` is `MPI_SUCCESS`.
inline void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char message[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, message, &length);
  throw mpi_error(std::string("ipu::mpi: ") + call + " failed: " + std::string(message, static_cast<std::size_t>(length)));
}

/// Calls `f(pointer, count)` over `values` in pieces an MPI count (`int`) holds.
template <class V, class F>
void in_pieces(std::span<V> values, F&& f) {
  constexpr std::size_t most = INT_MAX;
  for (std::size_t at = 0; at < values.size(); at += most)
    f(values.data() + at, static_cast<int>(std::min(most, values.size() - at)));
}
}  // namespace detail

/// MPI for the lifetime of the object: `MPI_Init` unless MPI is initialised already, and
/// `MPI_Finalize` at the end if it called `MPI_Init`.
class environment {
 public:
  /// Initialises MPI with the program's arguments. Throws `mpi_error` if it cannot.
  environment(int& argc, char**& argv) {
    int initialised = 0;
    detail::check(MPI_Initialized(&initialised), "MPI_Initialized");
    if (!initialised) {
      detail::check(MPI_Init(&argc, &argv), "MPI_Init");
      owner_ = true;
    }
  }
  environment(const environment&) = delete;
  environment& operator=(const environment&) = delete;
  ~environment() {
    if (owner_) MPI_Finalize();
  }

 private:
  bool owner_ = false;
};

/// The processes of communicator `comm` as a trainer's group of replicas
/// (`trainer_config::reducer`): one replica per process, ranked as MPI ranks them.
class reducer final : public gradient_reducer {
 public:
  /// The processes of `comm` (by default all of them). Throws `mpi_error` if MPI cannot say.
  explicit reducer(MPI_Comm comm = MPI_COMM_WORLD) : comm_(comm) {
    detail::check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    detail::check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  }
  int replicas() const noexcept override { return size_; }
  int rank() const noexcept override { return rank_; }
  void sum(std::span<float> values) override {
    detail::in_pieces(values, [&](float* p, int n) {
      detail::check(MPI_Allreduce(MPI_IN_PLACE, p, n, MPI_FLOAT, MPI_SUM, comm_), "MPI_Allreduce");
    });
  }
  void sum(std::span<double> values) override {
    detail::in_pieces(values, [&](double* p, int n) {
      detail::check(MPI_Allreduce(MPI_IN_PLACE, p, n, MPI_DOUBLE, MPI_SUM, comm_), "MPI_Allreduce");
    });
  }
  void broadcast(std::span<float> values) override {
    detail::in_pieces(values, [&](float* p, int n) { detail::check(MPI_Bcast(p, n, MPI_FLOAT, 0, comm_), "MPI_Bcast"); });
  }

 private:
  MPI_Comm comm_;
  int size_ = 1;
  int rank_ = 0;
};

}  // namespace ipu::mpi
