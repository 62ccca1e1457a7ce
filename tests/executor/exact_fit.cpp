// The plan is the allocation: on a target whose tiles hold exactly the planned peak, faithful
// mode places every buffer where the plan says and runs to the right answer, on several
// networks; a target 4 bytes smaller does not fit.

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

#include <algorithm>
#include <cstdint>

namespace nn = ipu::nn;
using ipu_test::grouped_net;
using ipu_test::small_target;

namespace {

/// The largest peak of `G`'s plan over the IPUs of `Target`.
template <class G, class Target, ipu::options Opts>
constexpr std::int64_t largest_peak() {
  std::int64_t peak = 0;
  for (const ipu::ipu_memory& m : ipu::plan_v<G, Target, Opts>.ipus) peak = std::max(peak, m.peak);
  return peak;
}

/// `Base` with `Bytes` bytes per tile.
template <class Base, std::int64_t Bytes>
struct resized {
  static constexpr ipu::chip_spec chip = [] {
    ipu::chip_spec c = Base::chip;
    c.bytes_per_tile = Bytes;
    return c;
  }();
  static constexpr int ipus = Base::ipus;
  static constexpr const char* name = "exact";
};

/// `Base` whose tiles hold exactly the peak `G`'s plan on `Base` needs.
template <class G, class Base, ipu::options Opts>
using exact_target = resized<Base, largest_peak<G, Base, Opts>()>;

/// Runs `G` in both modes on a target of exactly its planned peak and checks the outputs
/// against the reference, the measured memory against the plan, and every tile's highest
/// measured byte against the plan's extent there.
template <class G, class Base, ipu::options Opts = ipu::options{}>
void check_exact_fit(double tolerance) {
  using target = exact_target<G, Base, Opts>;
  constexpr std::int64_t bytes = target::chip.bytes_per_tile;
  // Shrinking the tiles leaves the plan's peak as it was: the target is exact for it.
  static_assert(largest_peak<G, target, Opts>() == bytes);
  static_assert(ipu::fits_v<G, target, Opts>);
  static_assert(!ipu::fits_v<G, resized<Base, bytes - ipu::buffer_alignment>, Opts>);

  ipu_test::check_engine<G, target, Opts>(tolerance);
  ipu::engine<G, target, Opts> faithful{ipu::weights<G>::random(5), {ipu::execution_mode::faithful, 2}};
  (void)faithful.infer(ipu_test::random_input<G>(9));
  const auto& plan = faithful.plan();
  bool reached = false;
  for (int i = 0; i < target::ipus; ++i)
    for (int t = 0; t < target::chip.tiles; ++t) {
      const std::int64_t measured = faithful.measured_extent(i, t), planned = plan.extent_on(i, t);
      INFO("IPU " << i << " tile " << t);
      REQUIRE(measured <= planned);
      REQUIRE(measured > planned - ipu::buffer_alignment);  // only the last buffer's alignment
      reached = reached || planned == bytes;
    }
  CHECK(reached);
}

constexpr auto two_ipu_net = ipu::input<ipu::f32, 2, 12, 12, 8>
    | nn::conv<16, 3, 1> | nn::batch_norm | nn::relu
    | ipu::on<1>(nn::residual(nn::conv<16, 1> | nn::batch_norm | nn::relu | nn::conv<16, 3, 1, 4> | nn::batch_norm)
                 | nn::relu | nn::max_pool<3, 2> | nn::conv<32, 3, 2, 8> | nn::batch_norm | nn::relu)
    | nn::global_avg_pool | nn::dense<10> | nn::softmax;

// Branches that join by concat and multiply, with odd channel counts (f16 buffers that end
// off the alignment).
constexpr auto branchy_net = ipu::input<ipu::f16, 2, 10, 10, 6>
    | nn::conv<12, 3, 1> | nn::relu
    | nn::concat(nn::conv<5, 1>, nn::conv<7, 3, 1> | nn::relu, nn::max_pool<3, 1>)
    | nn::multiply(nn::identity, nn::conv<24, 1> | nn::batch_norm)
    | nn::avg_pool<2, 2> | nn::global_avg_pool | nn::dense<5>;

constexpr auto dense_net = ipu::input<ipu::f32, 8, 3, 5, 2> | nn::global_avg_pool | nn::dense<17> | nn::relu | nn::dense<9> | nn::softmax;

}  // namespace

TEST_CASE("exact fit: a grouped residual net in f32") {
  check_exact_fit<decltype(grouped_net<ipu::f32>), small_target<16>>(1e-5);
}

TEST_CASE("exact fit: the same net in f16, with f32 and with f16 partials") {
  check_exact_fit<decltype(grouped_net<ipu::f16>), small_target<16>>(1e-2);
  check_exact_fit<decltype(grouped_net<ipu::f16>), small_target<16>, ipu::options{.partials = ipu::dtype::f16}>(2e-2);
}

TEST_CASE("exact fit: over two IPUs, with copies and send buffers") {
  check_exact_fit<decltype(two_ipu_net), small_target<16, 2>>(1e-5);
}

TEST_CASE("exact fit: joins by concat and multiply in f16") {
  check_exact_fit<decltype(branchy_net), small_target<16>>(3e-2);  // a product of two f16 branches
}

TEST_CASE("exact fit: dense layers, and a target of many tiles") {
  check_exact_fit<decltype(dense_net), small_target<16>>(1e-5);
  check_exact_fit<decltype(grouped_net<ipu::f32>), small_target<64>>(1e-5);
}

TEST_CASE("exact fit: I/O tiles hold the runtime's code and nothing of the model") {
  constexpr ipu::options io{.io_tiles = 4};
  using G = decltype(grouped_net<ipu::f32>);
  check_exact_fit<G, small_target<16>, io>(1e-5);
  constexpr auto& p = ipu::plan_v<G, small_target<16>, io>;
  STATIC_REQUIRE(p.ipus[0].peak_tile < 12);
  for (int j = 0; j < static_cast<int>(p.size); ++j) {
    INFO("node " << j);
    CHECK(p.plan_of(j).output.tiles() <= 12);
    CHECK(p.plan_of(j).work.tiles() <= 12);
  }
  for (int t = 12; t < 16; ++t) {
    INFO("tile " << t);
    CHECK(p.always_live_on(0, t).weights == 0);
    CHECK(p.dynamic_base(0, t) == ipu::aligned(p.shared_code_on(0)));
    CHECK(p.extent_on(0, t) == p.dynamic_base(0, t));
  }
}
