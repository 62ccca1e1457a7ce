// The machine's f32 multiply-add peak, the yardstick of docs/performance.md: independent
// chains of fused multiply-adds, enough of them to cover the instruction's latency, on every
// vector width this build can encode:
// - `zmm`: AVX-512, 16 floats (if `__AVX512F__`);
// - `ymm`: AVX2 with FMA, 8 floats (if `__AVX2__` and `__FMA__`);
// - `scalar`: one float, `ipu::kernels::madd` (`std::fma` when the target has FMA, a multiply
//   and an add otherwise), as the portable kernels compute.
// Each on one thread and on `IPU_BENCH_THREADS` (else one per hardware thread) threads, wall
// time. Counter: `GFLOP/s` (a multiply-add counts two), summed over the threads.
//
//   bench_peak --benchmark_min_time=0.2

#include "bench_common.hpp"

#include <ipu/kernels/simd.hpp>

#include <benchmark/benchmark.h>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace {

/// Multiply-add rounds per chain per benchmark iteration.
constexpr std::int64_t rounds = 4096;

/// Hides `x`'s value from the optimiser, so that the chains cannot be folded into constants.
/// (The accumulators themselves get no such barrier: an asm operand on an array element keeps
/// the array in memory with g++.)
template <class V>
inline void opaque(V& x) noexcept {
#if defined(__GNUC__) && defined(__AVX512F__)
  asm volatile("" : "+v"(x));  // any of the 32 vector registers
#elif defined(__GNUC__) && defined(__SSE__)
  asm volatile("" : "+x"(x));
#else
  benchmark::DoNotOptimize(x);
#endif
}

/// `f(std::integral_constant<int, I>{})` for `I` in `[0, N)`, unrolled: the accumulators stay
/// in registers only when every index into them is a constant.
template <int N, class F>
inline void unroll(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) { (f(std::integral_constant<int, I>{}), ...); }(std::make_integer_sequence<int, N>{});
}

/// `Chains` independent chains `acc = acc * m + a` of vectors `V` with `Lanes` floats, `fma`
/// the multiply-add.
template <class V, int Lanes, int Chains, class Splat, class Fma>
void chains(benchmark::State& state, Splat splat, Fma fma) {
  V acc[Chains];
  unroll<Chains>([&](auto c) { acc[c] = splat(1.0f + static_cast<float>(c()) * 1e-3f); });
  V m = splat(0.999999f), a = splat(1e-6f);  // stays near 1: no overflow, no subnormals
  opaque(m);
  opaque(a);
  for (auto _ : state) {
    for (std::int64_t r = 0; r < rounds; ++r) {
      unroll<Chains>([&](auto c) { acc[c] = fma(acc[c], m, a); });
    }
  }
  V sum = acc[0];  // a copy: taking the accumulators' address would keep them in memory
  unroll<Chains - 1>([&](auto c) { sum = fma(sum, m, acc[c + 1]); });
  benchmark::DoNotOptimize(sum);
  // Google Benchmark sums each thread's counter and multiplies it by the iterations of all
  // threads: each thread contributes its share, so that the total counts every FMA once.
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * rounds * Chains * Lanes / 1e9 / state.threads(),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

#if defined(__AVX512F__)
void zmm(benchmark::State& state) {
  // 24 chains of 32 registers: 4-cycle latency times up to 2 per cycle, with room to spare.
  chains<__m512, 16, 24>(state, [](float x) { return _mm512_set1_ps(x); },
                         [](__m512 x, __m512 y, __m512 z) { return _mm512_fmadd_ps(x, y, z); });
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
void ymm(benchmark::State& state) {
#if defined(__AVX512VL__)
  constexpr int n = 24;  // EVEX encodes ymm16-31
#else
  constexpr int n = 12;  // 16 registers: the chains and the two operands
#endif
  chains<__m256, 8, n>(state, [](float x) { return _mm256_set1_ps(x); },
                       [](__m256 x, __m256 y, __m256 z) { return _mm256_fmadd_ps(x, y, z); });
}
#endif

void scalar(benchmark::State& state) {
  chains<float, 1, 12>(state, [](float x) { return x; },
                       [](float x, float y, float z) { return ipu::kernels::madd(x, y, z); });
}

void add(const char* name, void (*f)(benchmark::State&), unsigned threads) {
  auto* b = benchmark::RegisterBenchmark(name, f)->UseRealTime()->Threads(1);
  if (threads > 1) b->Threads(static_cast<int>(threads));
}

}  // namespace

int main(int argc, char** argv) {
  return ipu_bench::run_main(argc, argv, [](unsigned threads) {
#if defined(__AVX512F__)
    add("peak/zmm", zmm, threads);
#endif
#if defined(__AVX2__) && defined(__FMA__)
    add("peak/ymm", ymm, threads);
#endif
    add("peak/scalar", scalar, threads);
  });
}
