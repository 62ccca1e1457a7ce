// Blocks run on the host (`ipu::on_host`) between IPU steps: both modes against the
// independent reference and bit-identical, the IPUs' memory as planned; the plan holds what
// the host reads until it runs and the host's outputs on the IPUs that read them, keeps the
// host layers' weights off the tiles, and charges the transfers at the host link's bandwidth.

#include <catch2/catch.hpp>

#include "support/executor_support.hpp"

#include <ipu/ipu.hpp>

#include <sstream>
#include <string>

namespace nn = ipu::nn;
using ipu_test::small_target;

namespace {

// A block in the middle on the host, a join of a host branch and an IPU branch, and the
// classifier's head on the host, so the graph's output is made there.
template <class T>
constexpr auto host_net = ipu::input<T, 2, 8, 8, 8>
    | nn::conv<8, 3> | nn::relu
    | ipu::on_host(nn::conv<8, 1> | nn::batch_norm | nn::relu)
    | nn::residual(nn::conv<8, 3, 1, 2> | nn::batch_norm)
    | nn::add(nn::identity, ipu::on_host(nn::conv<8, 1>))
    | nn::global_avg_pool
    | ipu::on_host(nn::dense<10> | nn::softmax);
using host_f32 = decltype(host_net<ipu::f32>);
using host_f16 = decltype(host_net<ipu::f16>);

// The same layers, all on the IPU.
constexpr auto ipu_net = ipu::input<ipu::f32, 2, 8, 8, 8>
    | nn::conv<8, 3> | nn::relu
    | (nn::conv<8, 1> | nn::batch_norm | nn::relu)
    | nn::residual(nn::conv<8, 3, 1, 2> | nn::batch_norm)
    | nn::add(nn::identity, nn::conv<8, 1>)
    | nn::global_avg_pool
    | (nn::dense<10> | nn::softmax);
using ipu_f32 = decltype(ipu_net);

// Over two IPUs: a host block between them, reading IPU 0 and read by IPU 1.
constexpr auto host_split_net = ipu::input<ipu::f32, 2, 8, 8, 8>
    | nn::conv<8, 3> | nn::relu
    | ipu::on_host(nn::max_pool<3, 1> | nn::conv<16, 1>)
    | ipu::on<1>(nn::conv<16, 3> | nn::batch_norm | nn::relu | nn::global_avg_pool | nn::dense<4> | nn::softmax);
using split_f32 = decltype(host_split_net);

using tiny = small_target<16>;
using tiny2 = small_target<16, 2>;

// The node of `G` at `path`.
template <class G>
constexpr int node_at(std::string_view path) {
  const auto& nodes = ipu::node_table_v<G>;
  for (int j = 0; j < static_cast<int>(nodes.size()); ++j)
    if (nodes[static_cast<std::size_t>(j)].path.view() == path) return j;
  return -1;
}

}  // namespace

TEST_CASE("on_host blocks in f32 match the reference, both modes bit-identical, memory as planned") {
  ipu_test::check_engine<host_f32, tiny>(1e-5);
}

TEST_CASE("on_host blocks in f16 match the reference within the f16 tolerance") {
  ipu_test::check_engine<host_f16, tiny>(1e-2);
}

TEST_CASE("an on_host block between two IPUs") {
  ipu_test::check_engine<split_f32, tiny2>(1e-5);
}

TEST_CASE("host nodes are host steps, on<> inside on_host places on an IPU") {
  constexpr auto& nodes = ipu::node_table_v<host_f32>;
  STATIC_REQUIRE(nodes[static_cast<std::size_t>(node_at<host_f32>("conv2"))].on_host());
  STATIC_REQUIRE(nodes[static_cast<std::size_t>(node_at<host_f32>("softmax1"))].ipu == ipu::host_device);
  STATIC_REQUIRE(!nodes[static_cast<std::size_t>(node_at<host_f32>("conv1"))].on_host());
  constexpr auto& plan = ipu::plan_v<host_f32, tiny>;
  for (int j = 0; j < static_cast<int>(plan.size); ++j) CHECK(plan.steps[static_cast<std::size_t>(j)].ipu == plan.at(j).ipu);

  using nested = decltype(ipu::input<ipu::f32, 1, 4, 4, 4> | ipu::on_host(nn::relu | ipu::on<0>(nn::conv<4, 1>)));
  STATIC_REQUIRE(ipu::node_table_v<nested>[1].on_host());
  STATIC_REQUIRE(!ipu::node_table_v<nested>[2].on_host());
}

TEST_CASE("the plan holds what a host step reads until it runs, and its output from then on") {
  constexpr auto& plan = ipu::plan_v<host_f32, tiny>;
  constexpr int relu = node_at<host_f32>("relu1"), host_conv = node_at<host_f32>("conv2"),
                host_relu = node_at<host_f32>("relu2"), block_add = node_at<host_f32>("block1.add");
  STATIC_REQUIRE(relu >= 0 && host_conv == relu + 1 && host_relu == relu + 3 && block_add > host_relu);
  // relu1 is read by the host's conv2 and by nothing on the IPU after it.
  CHECK(plan.held_to(0, relu) == host_conv);
  // The host block's output is copied to IPU 0 when it is made and read by the residual block.
  CHECK(plan.held_to(0, host_relu) == block_add);
  CHECK(plan.activation_offset[0][static_cast<std::size_t>(host_relu)] >= 0);
  // Host nodes' own outputs never live on the IPU, and host steps have no transients there.
  CHECK(plan.held_to(0, host_conv) == -1);
  CHECK(plan.activation_offset[0][static_cast<std::size_t>(host_conv)] == -1);
  CHECK(plan.usage(0, 0, host_conv).temporaries == 0);
  CHECK(plan.usage(0, 0, host_conv).exchange == 0);
  CHECK_FALSE(plan.plan_of(relu).sends);
}

TEST_CASE("the host layers' weights are not on the tiles") {
  constexpr auto& on_host = ipu::plan_v<host_f32, tiny>;
  constexpr auto& all_ipu = ipu::plan_v<ipu_f32, tiny>;
  static_assert(on_host.size == all_ipu.size);
  // The host layers' weights, from the all-IPU plan: element counts times bytes per element.
  std::int64_t host_weights = 0, host_nodes = 0;
  for (int j = 0; j < static_cast<int>(on_host.size); ++j) {
    if (!on_host.at(j).on_host()) continue;
    ++host_nodes;
    const ipu::node_plan& p = all_ipu.plan_of(j);
    for (int w = 0; w < p.weight_tensors; ++w)
      host_weights += p.weights[static_cast<std::size_t>(w)].elements() * p.weight_bytes[static_cast<std::size_t>(w)];
  }
  CHECK(host_nodes == 6);  // conv2, batch_norm1, relu2, add1.branch2.conv1, dense1, softmax1
  // conv2 8x1x1x8 f32, batch_norm1 scale and shift of 8, the add's conv 8x1x1x8, dense1 8x10 and bias 10
  CHECK(host_weights == (64 + 16 + 64 + 80 + 10) * 4);
  CHECK(on_host.ipus[0].totals.weights == all_ipu.ipus[0].totals.weights - host_weights);
  CHECK(on_host.ipus[0].nodes == all_ipu.ipus[0].nodes - host_nodes);
}

TEST_CASE("a host step's transfers are charged at the host link's bandwidth") {
  constexpr auto& plan = ipu::plan_v<host_f32, tiny>;
  constexpr int host_conv = node_at<host_f32>("conv2"), host_bn = node_at<host_f32>("batch_norm1"),
                host_relu = node_at<host_f32>("relu2"), branch = node_at<host_f32>("add1.branch2.conv1"),
                dense = node_at<host_f32>("dense1"), softmax = node_at<host_f32>("softmax1");
  // conv2 reads relu1 from IPU 0: 2x8x8x8 f32, 4096 bytes; its output stays on the host.
  CHECK(plan.host_bytes(host_conv) == 4096);
  CHECK(plan.host_bytes(host_bn) == 0);
  // relu2's output goes to IPU 0: 4096 bytes.
  CHECK(plan.host_bytes(host_relu) == 4096);
  // The join's host branch reads block1.add and sends its output back: 8192 bytes.
  CHECK(plan.host_bytes(branch) == 8192);
  // dense1 reads the pooled 2x8 f32 (64 bytes); the graph's output stays on the host.
  CHECK(plan.host_bytes(dense) == 64);
  CHECK(plan.host_bytes(softmax) == 0);
  // Mk2: 1.33 GHz, 32 GB/s each way: 4096 bytes take 4096 x 1.33e9 / 32e9 = 170.24 cycles.
  const ipu::step_cycles c = plan.plan_of(host_conv).cycles;
  CHECK(c.host == 171);
  CHECK(c.compute == 0);
  CHECK(c.exchange == 0);
  CHECK(c.link == 0);
  CHECK(c.sync == 2 * ipu::options{}.cycles.sync_cycles);
  CHECK(plan.plan_of(branch).cycles.host == 341);  // 8192 x 1.33e9 / 32e9 = 340.48
  CHECK(plan.plan_of(dense).cycles.host == 3);     // 64 x 1.33e9 / 32e9 = 2.66
}

TEST_CASE("the profile counts host steps apart from the IPUs'") {
  const auto w = ipu::weights<host_f32>::random(3);
  ipu::engine<host_f32, tiny> e{w, {ipu::execution_mode::fast, 1}};
  (void)e.infer(ipu_test::random_input<host_f32>(5));
  const ipu::profile& p = e.profile();
  CHECK(p.host().steps == 6);
  CHECK(p.ipus()[0].steps == static_cast<int>(ipu::plan_v<host_f32, tiny>.size) - 6);
  CHECK(p.ipus()[0].host_cycles == 0);
  std::int64_t host_link = 0;
  for (const ipu::step_profile& s : p.steps())
    if (s.ipu == ipu::host_device) host_link += s.host_cycles;
  CHECK(p.host().host_cycles == host_link);
  CHECK(host_link == 171 + 171 + 341 + 3);  // conv2 in, relu2 out, the join's branch in and out, dense1 in
  CHECK(p.cycles_per_batch() == p.ipus()[0].cycles() + p.host().cycles());
  std::ostringstream json;
  p.write_json(json);
  CHECK(json.str().find("\"host\": {\"steps\": 6") != std::string::npos);
  CHECK(json.str().find("\"ipu\": -1") != std::string::npos);

  std::ostringstream table;
  table << ipu::summary<host_f32>();
  CHECK(table.str().find("host") != std::string::npos);
}

// Two IPUs whose tiles are one buffer alignment short of what `host_f32` needs on one.
struct tight2 {
  static constexpr ipu::chip_spec chip = [] {
    ipu::chip_spec c = tiny::chip;
    c.bytes_per_tile = (ipu::plan_v<host_f32, tiny>.ipus[0].peak - 1) / ipu::buffer_alignment * ipu::buffer_alignment;
    return c;
  }();
  static constexpr int ipus = 2;
  static constexpr const char* name = "mk2-small-tight";
};

TEST_CASE("auto_shard keeps on_host blocks on the host") {
  STATIC_REQUIRE(!ipu::fits_v<host_f32, ipu::detail::one_ipu<tight2>>);
  using sharded = ipu::auto_shard<host_f32, tight2>;
  constexpr auto& placed = ipu::node_table_v<sharded>;
  constexpr auto& written = ipu::node_table_v<host_f32>;
  STATIC_REQUIRE(placed.size() == written.size());
  bool on_ipu1 = false;
  for (std::size_t j = 0; j < placed.size(); ++j) {
    INFO(placed[j].path.view());
    CHECK(placed[j].on_host() == written[j].on_host());
    on_ipu1 = on_ipu1 || placed[j].ipu == 1;
  }
  CHECK(on_ipu1);  // the net is split over both IPUs
  ipu_test::check_engine<sharded, tight2>(1e-5);
}
