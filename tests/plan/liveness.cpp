// Liveness against a brute-force reference: for every step and every earlier output, scan all
// nodes for a reader on the same IPU at or after the step.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <vector>

namespace nn = ipu::nn;
using std::int64_t;

namespace {
template <std::size_t N>
std::vector<int64_t> brute_force_live_bytes(const std::array<ipu::node, N>& t, int ipu) {
  std::vector<int64_t> live(N, 0);
  for (std::size_t i = 0; i < N; ++i) {
    if (t[i].ipu != ipu) continue;
    for (std::size_t j = 0; j <= i; ++j) {
      // held: produced here at this step, the graph output, or read here at or after step i (an
      // output from another IPU is held here from its production to its last reader here)
      bool held = t[j].ipu == ipu && (j == i || j + 1 == N);
      for (std::size_t k = i; k < N && !held; ++k)
        held = t[k].ipu == ipu && t[k].reads(static_cast<int>(j));
      if (held) live[i] += t[j].out.elements() * ipu::size_of(t[j].type);
    }
  }
  return live;
}

template <class G>
void check(int ipus) {
  constexpr auto& t = ipu::node_table_v<G>;
  for (int ipu = 0; ipu < ipus; ++ipu) {
    CAPTURE(ipu);
    const auto ref = brute_force_live_bytes(t, ipu);
    const auto got = ipu::activation_liveness_on(t, ipu);
    int64_t peak = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
      CAPTURE(i, t[i].path.view());
      REQUIRE(got.live_bytes[i] == ref[i]);
      peak = std::max(peak, ref[i]);
    }
    REQUIRE(got.peak_bytes == peak);
  }
}

constexpr auto body = nn::conv<8, 1> | nn::batch_norm | nn::relu | nn::conv<8, 3, 1, 2> | nn::batch_norm;
constexpr auto net = ipu::input<ipu::f16, 2, 8, 8, 8> | nn::conv<8, 3> |
                     nn::residual(body, nn::conv<8, 1> | nn::batch_norm) | nn::relu |
                     ipu::on<1>(nn::residual(body) | nn::relu | nn::global_avg_pool | nn::dense<3>);
using net_t = decltype(net);

// An output of IPU 0 read on IPU 1 and then again on IPU 0 (the residual's shortcut): IPU 0
// holds it until its own last reader, not until IPU 1's.
using back_and_forth_t = decltype(ipu::input<ipu::f16, 2, 8, 8, 8> | nn::conv<8, 3>
                                  | ipu::on<1>(nn::residual(ipu::on<0>(nn::conv<8, 1> | nn::conv<8, 1>)
                                                            | nn::conv<8, 1>))
                                  | nn::relu);
}  // namespace

TEST_CASE("a residual block's input stays live until its add", "[plan][liveness]") {
  constexpr auto& t = ipu::node_table_v<net_t>;
  constexpr auto last = ipu::last_use(t);
  constexpr int block_input = ipu::find_node(t, "conv1");
  // with a projection, the input's last reader is the shortcut, which runs after the whole body
  STATIC_REQUIRE(last[block_input] == ipu::find_node(t, "block1.shortcut.conv1"));
  STATIC_REQUIRE(last[block_input] > ipu::find_node(t, "block1.batch_norm2"));
  // with an identity shortcut, the add itself reads it
  STATIC_REQUIRE(last[ipu::find_node(t, "relu1")] == ipu::find_node(t, "block2.add"));
  STATIC_REQUIRE(last[t.size() - 1] == static_cast<int>(t.size()) - 1);
  // while the body runs, its input and the current activation are both live
  constexpr auto live = ipu::activation_liveness_on(t, 0);
  constexpr int64_t act = 2 * 8 * 8 * 8 * 2;  // every activation here is [2, 8, 8, 8] f16
  STATIC_REQUIRE(live.live_bytes[ipu::find_node(t, "block1.conv2")] == 3 * act);  // block input, relu1, conv2
}

TEST_CASE("liveness matches the brute-force reference, on one IPU and across two", "[plan][liveness]") {
  check<net_t>(2);
  check<back_and_forth_t>(2);
  check<ipu::models::resnext<ipu::f32, 2, 50, 32, 4, 3, 10, 32>>(1);
}
