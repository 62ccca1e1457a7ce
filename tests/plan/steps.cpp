// The plan's step table, the fusion the plan decides for the fast mode, and the one cycle
// model: the plan's figures are the profile's.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include "support/targets.hpp"

#include <cstdint>

namespace nn = ipu::nn;

namespace {
using tiny = ipu_test::small_target<16>;
using tiny2 = ipu::system<tiny, 2>;

// conv, batch norm, relu fuse; the block's add and relu fuse into its second conv (the
// shortcut, the relu's output, exists before it); the pooling does not fuse.
constexpr auto net = ipu::input<ipu::f32, 2, 8, 8, 8> | nn::conv<8, 3> | nn::batch_norm | nn::relu
    | nn::residual(nn::conv<8, 1> | nn::batch_norm | nn::relu | nn::conv<8, 3> | nn::batch_norm) | nn::relu
    | ipu::on<1>(nn::max_pool<2, 2> | nn::global_avg_pool | nn::dense<4>);
using net_t = decltype(net);
constexpr ipu::options f16_partials{.partials = ipu::dtype::f16};

template <class Plan>
int node(const Plan& p, std::string_view path) {
  return ipu::find_node(*p.table, path);
}
}  // namespace

TEST_CASE("inference plans one forward step per node, in table order, on the node's IPU") {
  constexpr auto& p = ipu::plan_v<net_t, tiny2>;
  STATIC_REQUIRE(p.steps.size() == ipu::node_count_v<net_t>);
  for (int j = 0; j < static_cast<int>(p.steps.size()); ++j) {
    const ipu::plan_step& s = p.steps[static_cast<std::size_t>(j)];
    CHECK(s.node == j);
    CHECK(s.phase == ipu::step_phase::forward);
    CHECK(s.ipu == p.at(j).ipu);
  }
}

TEST_CASE("the plan fuses batch norm, add and relu, relu6 or silu into the convolution before them, with f32 partials") {
  constexpr auto& p = ipu::plan_v<net_t, tiny2>;
  const int conv1 = node(p, "conv1"), block_conv2 = node(p, "block1.conv2");
  CHECK(p.plan_of(node(p, "batch_norm1")).fused_into == conv1);
  CHECK(p.plan_of(node(p, "relu1")).fused_into == conv1);
  CHECK(p.plan_of(conv1).fused_end == node(p, "relu1"));
  CHECK(p.plan_of(node(p, "block1.batch_norm2")).fused_into == block_conv2);
  CHECK(p.plan_of(node(p, "block1.add")).fused_into == block_conv2);
  CHECK(p.plan_of(node(p, "relu2")).fused_into == block_conv2);
  CHECK(p.plan_of(block_conv2).fused_end == node(p, "relu2"));
  CHECK(p.plan_of(node(p, "max_pool1")).fused_into == -1);
  CHECK(p.plan_of(node(p, "dense1")).fused_end == node(p, "dense1"));

  // ReLU6 or SiLU in ReLU's place (MobileNetV2's conv, batch norm, relu6; EfficientNet's with
  // silu); not after a ReLU: one activation per epilogue; not a sigmoid.
  using relu6_net = decltype(ipu::input<ipu::f32, 2, 8, 8, 8> | nn::conv<8, 3> | nn::batch_norm | nn::relu6 |
                             nn::conv<8, 1> | nn::relu | nn::relu6 | nn::conv<8, 1> | nn::batch_norm | nn::silu |
                             nn::conv<8, 1> | nn::sigmoid);
  constexpr auto& r = ipu::plan_v<relu6_net, tiny>;
  CHECK(r.plan_of(node(r, "relu6_1")).fused_into == node(r, "conv1"));
  CHECK(r.plan_of(node(r, "conv1")).fused_end == node(r, "relu6_1"));
  CHECK(r.plan_of(node(r, "conv2")).fused_end == node(r, "relu1"));
  CHECK(r.plan_of(node(r, "relu6_2")).fused_into == -1);
  CHECK(r.plan_of(node(r, "conv3")).fused_end == node(r, "silu1"));
  CHECK(r.plan_of(node(r, "sigmoid1")).fused_into == -1);

  constexpr auto& q = ipu::plan_v<net_t, tiny2, f16_partials>;  // the scalar kernels: no epilogue
  for (int j = 0; j < static_cast<int>(q.size); ++j) {
    CHECK(q.plan_of(j).fused_into == -1);
    CHECK(q.plan_of(j).fused_end == j);
  }
}

TEST_CASE("the profile reports the plan's cycles, and an IPU's total is the sum of its steps'") {
  constexpr auto& p = ipu::plan_v<net_t, tiny2>;
  const ipu::runtime::program prog = ipu::runtime::program::from(p);
  const ipu::profile profile(prog, 2, "tiny2", "fast");
  std::int64_t ipu_cycles[2] = {0, 0};
  std::int64_t link = 0;
  for (const ipu::step_profile& s : profile.steps()) {
    const ipu::step_cycles& c = p.plan_of(s.node).cycles;
    CHECK(s.compute_cycles == c.compute);
    CHECK(s.exchange_cycles == c.exchange);
    CHECK(s.sync_cycles == c.sync);
    CHECK(s.link_cycles == c.link);
    ipu_cycles[s.ipu] += s.cycles();
    link += s.link_cycles;
  }
  CHECK(link > 0);  // relu2's output crosses to IPU 1
  CHECK(p.ipus[0].cycles == ipu_cycles[0]);
  CHECK(p.ipus[1].cycles == ipu_cycles[1]);
  CHECK(profile.ipus()[0].cycles() == ipu_cycles[0]);
}
