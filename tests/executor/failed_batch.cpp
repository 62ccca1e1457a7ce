// A batch that fails part way (an allocation throws) leaves the engine as it was before the
// batch: the next batch gives the same bits, and faithful mode's measured memory still equals
// the plan. Every allocation of a batch is made to fail in turn. A batch in fast mode, after
// the first, allocates nothing.

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

/// Allocations left before the one that throws; negative: none throws. Counts every thread's.
std::atomic<long> allocations_before_failure{-1};
/// Allocations made, while counting.
std::atomic<long> allocations_made{0};

/// Every allocation of this test program: counted, failing on demand, from malloc (or
/// aligned_alloc), so that every form of `new` pairs with every form of `delete` (`free`).
void* allocate(std::size_t bytes, std::size_t alignment = 0) {
  allocations_made.fetch_add(1, std::memory_order_relaxed);
  if (allocations_before_failure.load(std::memory_order_relaxed) >= 0 &&
      allocations_before_failure.fetch_sub(1, std::memory_order_relaxed) == 0)
    throw std::bad_alloc();
  bytes = bytes == 0 ? 1 : bytes;
  void* p = alignment == 0 ? std::malloc(bytes) : std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* allocate_or_null(std::size_t bytes, std::size_t alignment = 0) noexcept {
  try {
    return allocate(bytes, alignment);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

}  // namespace

// The replaceable global allocation functions, all of them (the library's own would pair a
// `new` of one family with a `free` of the other). Not inlined, so that the compiler pairs each
// `new` with a `delete`, not with the `free` inside it.
[[gnu::noinline]] void* operator new(std::size_t n) { return allocate(n); }
[[gnu::noinline]] void* operator new[](std::size_t n) { return allocate(n); }
[[gnu::noinline]] void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate_or_null(n); }
[[gnu::noinline]] void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate_or_null(n); }
[[gnu::noinline]] void* operator new(std::size_t n, std::align_val_t a) { return allocate(n, static_cast<std::size_t>(a)); }
[[gnu::noinline]] void* operator new[](std::size_t n, std::align_val_t a) { return allocate(n, static_cast<std::size_t>(a)); }
[[gnu::noinline]] void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_or_null(n, static_cast<std::size_t>(a));
}
[[gnu::noinline]] void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_or_null(n, static_cast<std::size_t>(a));
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

namespace nn = ipu::nn;

namespace {

constexpr auto net = ipu::input<ipu::f16, 2, 8, 8, 8>
    | nn::conv<16, 3, 1> | nn::batch_norm | nn::relu
    | nn::residual(nn::conv<16, 1> | nn::batch_norm | nn::relu | nn::conv<16, 3, 1, 4> | nn::batch_norm)
    | nn::relu | ipu::on<1>(nn::max_pool<3, 2> | nn::global_avg_pool | nn::dense<10>);
using net_t = decltype(net);
using target = ipu_test::small_target<16, 2>;

}  // namespace

TEST_CASE("after a batch that fails at any allocation, the next batch is as if it had not run") {
  const auto w = ipu::weights<net_t>::random(3);
  const auto x = ipu_test::random_input<net_t>(4);
  for (auto mode : {ipu::execution_mode::fast, ipu::execution_mode::faithful}) {
    // One host thread, so that every batch after the first allocates alike: the kernels'
    // per-thread scratch grows on a thread's first use of a size, which with several threads
    // can fall in any batch, depending on which thread takes which work item.
    ipu::engine<net_t, target> e{w, {mode, 1}};
    const auto expected = e.infer(x);
    ipu::output_tensor_t<net_t> y;
    allocations_made = 0;
    e.infer(x, y);
    const long per_batch = allocations_made.load();
    INFO((mode == ipu::execution_mode::fast ? "fast" : "faithful") << " mode, " << per_batch << " allocations per batch");
    if (mode == ipu::execution_mode::fast) {
      // `infer(x, y)` allocates nothing once the first batch has run (docs/executor.md): the
      // buffers, packed weights and per-thread scratch are kept, and the work items are
      // handed out without a heap allocation. So no allocation can fail.
      CHECK(per_batch == 0);
      continue;
    }
    CHECK(per_batch > 0);
    long failed = 0;
    for (long k = 0; k < per_batch; ++k) {
      INFO("allocation " << k << " fails");
      allocations_before_failure = k;
      try {
        e.infer(x, y);
      } catch (const std::bad_alloc&) {
        ++failed;
      }
      allocations_before_failure = -1;
      const auto again = e.infer(x);
      REQUIRE(ipu_test::same_bits(again, expected));
      if (mode == ipu::execution_mode::faithful) ipu_test::check_memory_matches_plan(e);
    }
    CHECK(failed == per_batch);
  }
}
