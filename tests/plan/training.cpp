// The training memory plan (`ipu::training<G, Opts>`): its step table, the lifetimes of the
// stashed activations and the gradients, the bytes of each category against arithmetic on the
// layers' parameter counts, and its allocation: buffers live at a common step never share a
// byte, and no tile at any step uses more than the peak.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include "support/targets.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nn = ipu::nn;

namespace {
using tiny = ipu_test::small_target<16>;

// Trainable parameters: conv1 3*3*3*8 = 216, batch norms 3 x (8 + 8) = 48, block1.conv1 8*8 =
// 64, block1.conv2 3*3*8*8 = 576, dense1 8*4 + 4 = 36: 940. Running statistics: 3 x (8 + 8) = 48.
template <class T>
constexpr auto net = ipu::input<T, 2, 8, 8, 3> | nn::conv<8, 3> | nn::batch_norm | nn::relu
    | nn::residual(nn::conv<8, 1> | nn::batch_norm | nn::relu | nn::conv<8, 3> | nn::batch_norm) | nn::relu
    | nn::global_avg_pool | nn::dense<4>;
template <class T>
using net_t = decltype(net<T>);
constexpr std::int64_t trainable = 940, running = 48;

constexpr ipu::train_options momentum{.optimizer = ipu::sgd{.learning_rate = 0.1, .momentum = 0.9}};
constexpr ipu::train_options plain{.optimizer = ipu::sgd{.learning_rate = 0.1}};
constexpr ipu::train_options adam{.optimizer = ipu::adam{}};
constexpr ipu::train_options adam_16_16{.optimizer = ipu::adam{}, .master_weights = ipu::dtype::f16};
constexpr ipu::train_options per_block{.optimizer = ipu::adam{}, .recompute = ipu::recompute::per_block};
constexpr ipu::train_options at_checkpoints{.optimizer = ipu::adam{}, .recompute = ipu::recompute::checkpoints};

// net<T> with dropouts: at the block's start (its shortcut reads relu1 itself), and before the
// dense layer.
template <class T>
constexpr auto dropped = ipu::input<T, 2, 8, 8, 3> | nn::conv<8, 3> | nn::batch_norm | nn::relu
    | nn::residual(nn::dropout<0.2> | nn::conv<8, 1> | nn::batch_norm | nn::relu | nn::conv<8, 3> | nn::batch_norm) | nn::relu
    | nn::global_avg_pool | nn::dropout<0.5> | nn::dense<4>;
template <class T>
using dropped_t = decltype(dropped<T>);

// net<f16> with a checkpoint after the stem's relu.
constexpr auto marked = ipu::input<ipu::f16, 2, 8, 8, 3> | nn::conv<8, 3> | nn::batch_norm | nn::relu | nn::checkpoint
    | nn::residual(nn::conv<8, 1> | nn::batch_norm | nn::relu | nn::conv<8, 3> | nn::batch_norm) | nn::relu
    | nn::global_avg_pool | nn::dense<4>;

template <class Plan>
int node(const Plan& p, std::string_view path) {
  return ipu::find_node(*p.inference->table, path);
}

// A dynamic buffer as the plan places it: live over steps [first, last], at `offset` with
// room for its fullest tile.
struct placed {
  int first, last;
  std::int64_t offset, bytes;
};

template <class Plan>
std::vector<placed> buffers_of(const Plan& p) {
  std::vector<placed> out;
  const auto add = [&](int first, int last, std::int64_t offset, std::int64_t bytes) {
    if (bytes > 0) out.push_back({first, last, offset, ipu::aligned(bytes)});
  };
  for (int j = 0; j < static_cast<int>(p.size); ++j) {
    const ipu::training_node& t = p.node_of(j);
    const ipu::node_plan& np = p.inference->plan_of(j);
    const std::int64_t out_bytes = np.output.max_elements_per_tile() * p.element_bytes(j);
    add(t.forward, t.output_last, t.output_offset, out_bytes);
    if (t.recompute >= 0) add(t.recompute, t.backward, t.recomputed_offset, out_bytes);
    if (t.grad_first >= 0) add(t.grad_first, t.backward, t.grad_offset, out_bytes);
    for (int w = 0; w < t.tensor_count; ++w)
      if (t.tensors[static_cast<std::size_t>(w)].trainable)
        add(t.backward, t.update, t.weight_grad_offset[static_cast<std::size_t>(w)],
            t.tensors[static_cast<std::size_t>(w)].mapping.max_elements_per_tile() * p.element_bytes(j));
    const ipu::node& n = p.at(j);
    for (std::size_t k = 0; k < static_cast<std::size_t>(n.input_count); ++k) {
      if (!n.dropout[k].active()) continue;
      const std::int64_t in_bytes = p.inference->plan_of(n.inputs[k]).output.max_elements_per_tile() * p.element_bytes(n.inputs[k]);
      add(t.forward, t.forward, t.dropped_offset[k], in_bytes);
      if (t.recompute >= 0) add(t.recompute, t.recompute, t.dropped_recomputed_offset[k], in_bytes);
      add(t.backward, t.backward, t.dropped_backward_offset[k], in_bytes);
      if (n.inputs[k] != 0) add(t.backward, t.backward, t.dropped_grad_offset[k], in_bytes);
    }
    const std::int64_t scratch = ipu::aligned(np.transient_max.temporaries) + ipu::aligned(np.transient_max.exchange);
    const auto first = [&](const ipu::step_buffers& sb) { return np.transient_max.temporaries > 0 ? sb.temporaries : sb.exchange; };
    if (scratch > 0) {
      add(t.forward, t.forward, first(t.forward_buffers), scratch);
      add(t.backward, t.backward, first(t.backward_buffers), scratch);
      if (t.recompute >= 0) add(t.recompute, t.recompute, first(t.recompute_buffers), scratch);
    }
  }
  return out;
}
}  // namespace

TEST_CASE("a training step runs every node forward, every node but the input backward in reverse, then the updates") {
  constexpr auto& p = ipu::plan_v<ipu::training<net_t<ipu::f32>, momentum>, tiny>;
  constexpr int n = static_cast<int>(p.size);
  // 3 convolutions, 3 batch norms and the dense layer have trainable tensors.
  STATIC_REQUIRE(p.step_count == static_cast<std::size_t>(n + (n - 1) + 7));
  for (int j = 0; j < n; ++j) {
    CHECK(p.steps[static_cast<std::size_t>(j)].node == j);
    CHECK(p.steps[static_cast<std::size_t>(j)].phase == ipu::step_phase::forward);
    CHECK(p.node_of(j).forward == j);
  }
  for (int k = 0; k < n - 1; ++k) {
    const ipu::plan_step& s = p.steps[static_cast<std::size_t>(n + k)];
    CHECK(s.node == n - 1 - k);
    CHECK(s.phase == ipu::step_phase::backward);
  }
  CHECK(p.node_of(0).backward == -1);
  std::vector<int> updated;
  for (std::size_t s = static_cast<std::size_t>(2 * n - 1); s < p.step_count; ++s) {
    CHECK(p.steps[s].phase == ipu::step_phase::update);
    updated.push_back(p.steps[s].node);
  }
  CHECK(updated == std::vector<int>{node(p, "conv1"), node(p, "batch_norm1"), node(p, "block1.conv1"),
                                    node(p, "block1.batch_norm1"), node(p, "block1.conv2"), node(p, "block1.batch_norm2"),
                                    node(p, "dense1")});
  CHECK(p.node_of(node(p, "relu1")).update == -1);
}

TEST_CASE("outputs are stashed until their own backward step, gradients live from their last reader's backward step") {
  constexpr auto& p = ipu::plan_v<ipu::training<net_t<ipu::f32>, momentum>, tiny>;
  const int relu1 = node(p, "relu1"), add = node(p, "block1.add"), conv1 = node(p, "conv1");
  // relu1 is read by the block's first conv and by its add (the shortcut): the add's backward
  // runs first and starts its gradient, block1.conv1's adds to it.
  CHECK(p.node_of(relu1).output_last == p.node_of(relu1).backward);
  CHECK(p.node_of(relu1).grad_first == p.node_of(add).backward);
  CHECK(p.node_of(add).backward < p.node_of(node(p, "block1.conv1")).backward);
  // The input is kept until conv1's backward (its kernel's gradient reads it) and has no gradient.
  CHECK(p.node_of(0).output_last == p.node_of(conv1).backward);
  CHECK(p.node_of(0).grad_first == -1);
  // The graph's output: its gradient comes from the loss, in its own backward step.
  const int last = static_cast<int>(p.size) - 1;
  CHECK(p.node_of(last).grad_first == p.node_of(last).backward);
  CHECK(p.node_of(last).backward == static_cast<int>(p.size));
}

TEST_CASE("the training plan's categories hold the tensors' bytes for each precision and optimiser") {
  // f32: the weights are the master weights; momentum one f32 state tensor, Adam two, plain SGD none.
  constexpr auto& f32_momentum = ipu::plan_v<ipu::training<net_t<ipu::f32>, momentum>, tiny>.ipus[0].totals;
  CHECK(f32_momentum.weights == (trainable + running) * 4);
  CHECK(f32_momentum.master_weights == 0);
  CHECK(f32_momentum.optimizer_state == trainable * 4);
  CHECK(ipu::plan_v<ipu::training<net_t<ipu::f32>, plain>, tiny>.ipus[0].totals.optimizer_state == 0);
  CHECK(ipu::plan_v<ipu::training<net_t<ipu::f32>, adam>, tiny>.ipus[0].totals.optimizer_state == 2 * trainable * 4);
  // f16 "16.32": f16 weights, f32 master copies and f32 state.
  constexpr auto& f16_adam = ipu::plan_v<ipu::training<net_t<ipu::f16>, adam>, tiny>.ipus[0].totals;
  CHECK(f16_adam.weights == (trainable + running) * 2);
  CHECK(f16_adam.master_weights == trainable * 4);
  CHECK(f16_adam.optimizer_state == 2 * trainable * 4);
  // f16 "16.16": the f16 weights are updated themselves, the state is f16.
  constexpr auto& f16_16 = ipu::plan_v<ipu::training<net_t<ipu::f16>, adam_16_16>, tiny>.ipus[0].totals;
  CHECK(f16_16.master_weights == 0);
  CHECK(f16_16.optimizer_state == 2 * trainable * 2);
  // Every output is stashed at the first backward step: the largest sum of stashed activations.
  constexpr auto& p = ipu::plan_v<ipu::training<net_t<ipu::f32>, momentum>, tiny>;
  std::int64_t outputs = 0;
  for (int j = 0; j < static_cast<int>(p.size); ++j) outputs += p.at(j).out.elements() * 4;
  CHECK(p.ipus[0].totals.activations == outputs);
}

namespace {
template <class Plan>
void check_allocation(const Plan& p) {
  const std::vector<placed> b = buffers_of(p);
  REQUIRE(b.size() > 20);
  for (std::size_t x = 0; x < b.size(); ++x) {
    CHECK(b[x].offset >= 0);
    CHECK(b[x].offset % ipu::buffer_alignment == 0);
    for (std::size_t y = x + 1; y < b.size(); ++y)
      if (b[x].first <= b[y].last && b[y].first <= b[x].last)
        CHECK((b[x].offset + b[x].bytes <= b[y].offset || b[y].offset + b[y].bytes <= b[x].offset));
  }
  const ipu::training_memory& m = p.ipus[0];
  REQUIRE(m.peak_step >= 0);
  for (int tile = 0; tile < tiny::chip.tiles; ++tile)
    for (int s = 0; s < static_cast<int>(p.step_count); ++s) CHECK(p.usage(tile, s).total() <= m.peak);
  CHECK(p.usage(m.peak_tile, m.peak_step) == m.at_peak);
  CHECK(m.at_peak.total() <= m.peak);
  CHECK(m.fits);
}
}  // namespace

TEST_CASE("the training plan's buffers never share a byte while both live, and no tile exceeds the peak") {
  check_allocation(ipu::plan_v<ipu::training<net_t<ipu::f16>, adam>, tiny>);
  check_allocation(ipu::plan_v<ipu::training<net_t<ipu::f16>, per_block>, tiny>);
  check_allocation(ipu::plan_v<ipu::training<decltype(marked), at_checkpoints>, tiny>);
  check_allocation(ipu::plan_v<ipu::training<dropped_t<ipu::f16>, per_block>, tiny>);
}

TEST_CASE("with the optimiser state sharded, each of 3 replicas holds a third of every state tensor, rounded up") {
  constexpr ipu::train_options sharded{.optimizer = ipu::adam{}, .shard_optimizer_state = true};
  using three = ipu::replicated<ipu::system<tiny, 3>, 3>;
  constexpr auto& whole = ipu::plan_v<ipu::training<net_t<ipu::f16>, adam>, tiny>;
  constexpr auto& shared = ipu::plan_v<ipu::training<net_t<ipu::f16>, sharded>, three>;
  STATIC_REQUIRE(shared.state_shards == 3);
  // The trainable tensors' elements: conv1 216; six batch-norm scales and offsets of 8;
  // block1.conv1 64; block1.conv2 576; dense1 32 and 4. A replica's shares: ceil(E / 3).
  constexpr std::int64_t shares = 72 + 6 * 3 + 22 + 192 + 11 + 2;
  const ipu::training_bytes& s = shared.ipus[0].totals;
  CHECK(s.optimizer_state == 2 * shares * 4);  // Adam's two moments, in f32 ("16.32")
  CHECK(s.weights == whole.ipus[0].totals.weights);
  CHECK(s.master_weights == whole.ipus[0].totals.master_weights);
  CHECK(s.activations == whole.ipus[0].totals.activations);
  CHECK(s.gradients == whole.ipus[0].totals.gradients);
  // Each share is mapped with the linear rule from tile 0: the tiles' bytes add up to the total.
  std::int64_t on_tiles = 0;
  for (int tile = 0; tile < tiny::chip.tiles; ++tile) on_tiles += shared.tensors_on(tile).optimizer_state;
  CHECK(on_tiles == s.optimizer_state);
  // Less always-live memory on the first tile, and a lower peak.
  CHECK(shared.dynamic_base(0) < whole.dynamic_base(0));
  CHECK(shared.ipus[0].peak < whole.ipus[0].peak);
  check_allocation(shared);
  // Not sharded, a replica holds what one IPU holds; sharded over one replica, the same.
  constexpr auto& unshared = ipu::plan_v<ipu::training<net_t<ipu::f16>, adam>, three>;
  CHECK(unshared.state_shards == 1);
  CHECK(unshared.ipus[0].totals == whole.ipus[0].totals);
  CHECK(unshared.ipus[0].peak == whole.ipus[0].peak);
  constexpr auto& alone = ipu::plan_v<ipu::training<net_t<ipu::f16>, sharded>, tiny>;
  CHECK(alone.state_shards == 1);
  CHECK(alone.ipus[0].totals == whole.ipus[0].totals);
}

TEST_CASE("a dropped-out input's copy lives in its reader's forward step, again in its backward step with its gradient, no mask is stored") {
  // The same graph with and without dropouts: the plans differ only in the steps of the two
  // readers, by the bytes of the input they read, in one category each.
  constexpr auto& with = ipu::plan_v<ipu::training<dropped_t<ipu::f16>, adam>, tiny>;
  constexpr auto& without = ipu::plan_v<ipu::training<net_t<ipu::f16>, adam>, tiny>;
  STATIC_REQUIRE(with.step_count == without.step_count);
  const int conv = node(with, "block1.conv1"), dense = node(with, "dense1");
  CHECK(with.at(conv).dropout[0].active());
  CHECK(with.at(dense).dropout[0].active());
  CHECK_FALSE(with.at(node(with, "block1.add")).dropout[1].active());  // the shortcut reads relu1 itself
  for (int tile = 0; tile < tiny::chip.tiles; ++tile)
    for (int s = 0; s < static_cast<int>(with.step_count); ++s) {
      const ipu::plan_step& st = with.steps[static_cast<std::size_t>(s)];
      ipu::training_bytes expected = without.usage(tile, s);
      const bool reader = (st.node == conv || st.node == dense) && st.phase != ipu::step_phase::update;
      if (reader) {
        const int src = with.at(st.node).inputs[0];
        const std::int64_t bytes = with.inference->plan_of(src).output.elements_on(tile) * 2;
        if (st.phase == ipu::step_phase::forward) {
          expected.activations += bytes;
        } else {
          expected.recomputed += bytes;  // drawn again
          expected.gradients += bytes;   // the copy's gradient
        }
      }
      INFO("tile " << tile << ", step " << s << ": " << ipu::name_of(st.phase) << ' ' << with.at(st.node).path.view());
      CHECK(with.usage(tile, s) == expected);
    }
  // The cycle model: the reader's forward step reads the input once more, its backward step twice.
  for (int s = 0; s < static_cast<int>(with.step_count); ++s) {
    const ipu::plan_step& st = with.steps[static_cast<std::size_t>(s)];
    const bool reader = (st.node == conv || st.node == dense) && st.phase != ipu::step_phase::update;
    const std::int64_t per_tile = reader ? with.inference->plan_of(with.at(st.node).inputs[0]).output.max_elements_per_tile() : 0;
    const std::int64_t reads = st.phase == ipu::step_phase::backward ? 2 : 1;
    CHECK(with.cycles(s).compute == without.cycles(s).compute + reads * ((per_tile + 3) / 4));  // f16: 4 per 64-bit vector
  }
}

TEST_CASE("training needs more memory than inference, and more with a larger optimiser state") {
  constexpr std::int64_t inference = ipu::plan_v<net_t<ipu::f16>, tiny>.ipus[0].peak;
  constexpr std::int64_t sgd = ipu::plan_v<ipu::training<net_t<ipu::f16>, plain>, tiny>.ipus[0].peak;
  constexpr std::int64_t with_momentum = ipu::plan_v<ipu::training<net_t<ipu::f16>, momentum>, tiny>.ipus[0].peak;
  constexpr std::int64_t with_adam = ipu::plan_v<ipu::training<net_t<ipu::f16>, adam>, tiny>.ipus[0].peak;
  CHECK(inference < sgd);
  CHECK(sgd < with_momentum);
  CHECK(with_momentum < with_adam);
  STATIC_REQUIRE(ipu::fits_v<ipu::training<net_t<ipu::f16>, adam>, tiny>);
  STATIC_REQUIRE(ipu::require_fit<ipu::training<net_t<ipu::f16>, adam>, tiny>);
}

TEST_CASE("ResNet-50 in f16 (16.16, SGD with momentum) trains on one Mk2 at micro-batch 3 without recomputation, not at 4") {
  constexpr ipu::train_options sgd_16_16{.optimizer = ipu::sgd{.learning_rate = 0.1, .momentum = 0.9, .weight_decay = 1e-4},
                                         .master_weights = ipu::dtype::f16};
  using fits_t = ipu::training<ipu::models::resnet50<ipu::f16, 3>, sgd_16_16>;
  using too_large_t = ipu::training<ipu::models::resnet50<ipu::f16, 4>, sgd_16_16>;
  STATIC_REQUIRE(ipu::fits_v<fits_t, ipu::mk2>);
  STATIC_REQUIRE_FALSE(ipu::fits_v<too_large_t, ipu::mk2>);
  // torchvision's resnet50: 25,557,032 trainable parameters and 53,120 running statistics
  // (26,560 batch-norm channels, a mean and a variance each).
  constexpr auto& totals = ipu::plan_v<fits_t, ipu::mk2>.ipus[0].totals;
  CHECK(totals.weights == (25'557'032 + 53'120) * 2);
  CHECK(totals.master_weights == 0);
  CHECK(totals.optimizer_state == 25'557'032 * 2);
  const ipu::training_memory& m = ipu::plan_v<too_large_t, ipu::mk2>.ipus[0];
  CHECK(m.peak > m.capacity);
  CHECK(m.capacity == 638'976);
}

TEST_CASE("ResNet-50 in f16 with Adam (16.32) trains at micro-batch 1 on a Mk2 only with its optimiser state shared out over replicas") {
  constexpr ipu::train_options adam_16_32{.optimizer = ipu::adam{}};
  constexpr ipu::train_options sharded{.optimizer = ipu::adam{}, .shard_optimizer_state = true};
  using net = ipu::models::resnet50<ipu::f16, 1>;
  using pod16 = ipu::replicated<ipu::system<ipu::mk2, 16>, 16>;  // 16 replicas of one Mk2
  STATIC_REQUIRE_FALSE(ipu::fits_v<ipu::training<net, adam_16_32>, ipu::mk2>);
  STATIC_REQUIRE_FALSE(ipu::fits_v<ipu::training<net, adam_16_32>, pod16>);
  STATIC_REQUIRE(ipu::require_fit<ipu::training<net, sharded>, pod16>);
  // Adam's two f32 moments of torchvision's 25,557,032 trainable parameters: each of a
  // replica's shares has ceil(E / 16) of a tensor's E elements, so at least a sixteenth.
  constexpr auto& whole = ipu::plan_v<ipu::training<net, adam_16_32>, ipu::mk2>.ipus[0].totals;
  constexpr auto& shared = ipu::plan_v<ipu::training<net, sharded>, pod16>.ipus[0].totals;
  CHECK(whole.optimizer_state == 2 * 25'557'032 * 4);
  CHECK(shared.optimizer_state >= whole.optimizer_state / 16);
  CHECK(shared.optimizer_state < whole.optimizer_state / 16 + 2 * 4 * 161);  // under one element more per tensor (161 trainable tensors)
  CHECK(shared.master_weights == whole.master_weights);
}

// The nodes of net: input 0, conv1 1, batch_norm1 2, relu1 3, block1.conv1 4 ... block1.batch_norm2 8,
// block1.add 9, relu2 10, global_avg_pool1 11, dense1 12.
TEST_CASE("recomputation per block keeps the outputs no earlier value crosses and computes the block's again") {
  constexpr auto& p = ipu::plan_v<ipu::training<net_t<ipu::f16>, per_block>, tiny>;
  const int add = node(p, "block1.add");
  REQUIRE(add == 9);
  // Kept: the stem's chain, the add (nothing before it is read after it), the rest of the chain.
  for (int j : {0, 1, 2, 3, 9, 10, 11, 12}) CHECK(p.node_of(j).recompute == -1);
  // Recomputed in order, just before the add's backward step, each held until its own backward.
  STATIC_REQUIRE(p.step_count == static_cast<std::size_t>(13 + 12 + 7 + 5));
  for (int j = 4; j <= 8; ++j) {
    CHECK(p.node_of(j).recompute == p.node_of(add).backward - (9 - j));
    CHECK(p.steps[static_cast<std::size_t>(p.node_of(j).recompute)].phase == ipu::step_phase::recompute);
    CHECK(p.node_of(j).output_last == j + 1);  // its forward output only until its reader's forward step
  }
  CHECK(p.node_of(node(p, "relu2")).backward < p.node_of(4).recompute);
  // Fewer bytes stashed at once than when every output is kept, the recomputed block's added.
  constexpr auto& all = ipu::plan_v<ipu::training<net_t<ipu::f16>, adam>, tiny>.ipus[0].totals;
  constexpr auto& some = p.ipus[0].totals;
  CHECK(some.activations < all.activations);
  CHECK(some.recomputed > 0);
  CHECK(all.recomputed == 0);
  std::int64_t block = 0;
  for (int j = 4; j <= 8; ++j) block += p.at(j).out.elements() * 2;
  CHECK(some.recomputed == block);
}

TEST_CASE("recomputation at checkpoints keeps the marked outputs, the input and the output") {
  constexpr auto& p = ipu::plan_v<ipu::training<decltype(marked), at_checkpoints>, tiny>;
  REQUIRE(p.at(3).checkpoint);
  for (int j = 0; j < static_cast<int>(p.size); ++j) CHECK((p.node_of(j).recompute == -1) == (j == 0 || j == 3 || j == 12));
  // conv1 and batch_norm1 are recomputed just before relu1's backward step.
  CHECK(p.node_of(1).recompute == p.node_of(3).backward - 2);
  CHECK(p.node_of(2).recompute == p.node_of(3).backward - 1);
  // Everything after the checkpoint is recomputed before the output's backward step.
  CHECK(p.node_of(4).recompute == 13);
  CHECK(p.node_of(11).recompute == 20);
  CHECK(p.node_of(12).backward == 21);
  // A node read beyond the next kept one is kept: marking only block1.conv1 leaves the
  // block's input relu1, which its add reads, kept as well.
  constexpr auto inner = ipu::input<ipu::f32, 1, 4, 4, 2> | nn::relu | nn::residual(nn::conv<2, 1> | nn::checkpoint | nn::relu)
      | nn::global_avg_pool | nn::dense<2>;
  constexpr auto& q = ipu::plan_v<ipu::training<decltype(inner), at_checkpoints>, tiny>;
  CHECK(q.node_of(node(q, "relu1")).recompute == -1);
  CHECK(q.node_of(node(q, "block1.conv1")).recompute == -1);
  CHECK(q.node_of(node(q, "block1.relu1")).recompute >= 0);
}

TEST_CASE("the cycle model of a training step: forward and recompute as inference, backward twice a convolution's, updates per value read") {
  constexpr auto& p = ipu::plan_v<ipu::training<net_t<ipu::f16>, per_block>, tiny>;
  const ipu::chip_spec& chip = tiny::chip;
  std::int64_t total = 0;
  std::array<std::int64_t, 4> by_phase{};
  int updates = 0, recomputes = 0;
  for (int s = 0; s < static_cast<int>(p.step_count); ++s) {
    const ipu::plan_step& st = p.steps[static_cast<std::size_t>(s)];
    const ipu::step_cycles c = p.cycles(s), fwd = p.inference->plan_of(st.node).cycles;
    INFO("step " << s << ": " << ipu::name_of(st.phase) << ' ' << p.at(st.node).path.view());
    switch (st.phase) {
      case ipu::step_phase::forward: CHECK(c == fwd); break;
      case ipu::step_phase::recompute: CHECK(c == fwd); ++recomputes; break;
      case ipu::step_phase::backward: {
        const std::int64_t k = p.at(st.node).kind == ipu::op_of<ipu::ops::conv> || p.at(st.node).kind == ipu::op_of<ipu::ops::dense> ? 2 : 1;
        CHECK(c.compute == k * fwd.compute);
        CHECK(c.exchange == k * fwd.exchange);
        CHECK(c.sync == k * fwd.sync);
        CHECK(c.link + c.host == 0);
        break;
      }
      case ipu::step_phase::update: {
        // Adam: weights, gradient and two moments read per value, in f32 (16.32): 2 per vector.
        std::int64_t expected = 0;
        const ipu::training_node& t = p.node_of(st.node);
        for (int w = 0; w < t.tensor_count; ++w)
          if (t.tensors[static_cast<std::size_t>(w)].trainable)
            expected += (t.tensors[static_cast<std::size_t>(w)].mapping.max_elements_per_tile() * 4 + 1) / 2;
        CHECK(c.compute == expected);
        CHECK(c.exchange == 0);
        CHECK(c.sync == p.inference->opts.cycles.sync_cycles);
        ++updates;
        break;
      }
    }
    total += c.total();
    by_phase[static_cast<std::size_t>(st.phase)] += c.total();
  }
  CHECK(chip.grain(4) == 2);  // the vector of the updates above: 64 bits, 2 f32 values
  CHECK(updates > 0);
  CHECK(recomputes > 0);
  CHECK(p.total_cycles() == total);
  for (std::size_t ph = 0; ph < 4; ++ph) CHECK(p.phase_cycles()[ph].total() == by_phase[ph]);
  // A convolution's backward doubles its work: the backward phase costs more than the forward.
  CHECK(by_phase[static_cast<std::size_t>(ipu::step_phase::backward)] > by_phase[static_cast<std::size_t>(ipu::step_phase::forward)]);
}

namespace pipelined_plan {

// Three stages on IPUs of 4 tiles, a residual whose shortcut (relu1, on IPU 0) is read by the add
// on IPU 2 and by the convolution on IPU 1. Nodes: input 0, conv1 1, relu1 2 on IPU 0;
// block1.conv1 3, block1.relu1 4 on IPU 1; block1.conv2 5, block1.add 6, global_avg_pool1 7,
// dense1 8 on IPU 2. Every 8x8x8 activation of a micro-batch of B is 512 B elements.
template <int B>
constexpr auto staged = ipu::input<float, B, 8, 8, 8>
    | ipu::on<0>(nn::conv<8, 3> | nn::relu)
    | ipu::on<2>(nn::residual(ipu::on<1>(nn::conv<8, 3> | nn::relu) | nn::conv<8, 1>) | nn::global_avg_pool | nn::dense<4>);
template <int B>
using staged_t = std::remove_cvref_t<decltype(staged<B>)>;
using three_ipus = ipu_test::small_target<4, 3>;

constexpr ipu::train_options sequential{.gradient_accumulation = 6};
constexpr ipu::train_options grouped{.gradient_accumulation = 6, .pipeline = ipu::pipeline_schedule::grouped};
constexpr ipu::train_options interleaved{.gradient_accumulation = 6, .pipeline = ipu::pipeline_schedule::interleaved};

template <ipu::train_options O, int B = 2>
constexpr const auto& plan_of = ipu::plan_v<ipu::training<staged_t<B>, O>, three_ipus>;

// Bytes over the tiles of IPU `ipu` at step `s`, in category `c`; of its always-live tensors
// when `s` is -1.
template <class Plan>
std::int64_t on_ipu(const Plan& p, int ipu, int s, ipu::training_category c) {
  std::int64_t bytes = 0;
  for (int t = 0; t < three_ipus::chip.tiles; ++t) bytes += (s < 0 ? p.tensors_on(ipu, t) : p.usage(ipu, t, s))[c];
  return bytes;
}

// Every IPU's buffers: none shares a byte with another live at a common step; no tile at any
// step uses more than the IPU's peak, which the highest buffer reaches.
template <class Plan>
void check_every_ipu(const Plan& p) {
  for (int i = 0; i < Plan::ipu_count; ++i) {
    INFO("IPU " << i);
    std::vector<placed> b;
    p.for_each_buffer(i, [&](const ipu::training_buffer& buffer) {
      for (int t = 0; t < three_ipus::chip.tiles; ++t) {
        const ipu::training_bytes bytes = p.bytes_on(buffer, t);
        const auto [first, second] = p.placed_at(buffer);
        const std::int64_t main = buffer.mapping ? bytes[buffer.category] : bytes.temporaries;
        if (main > 0) b.push_back({buffer.first, buffer.last, first + t * (std::int64_t{1} << 40), ipu::aligned(main)});
        if (!buffer.mapping && bytes.exchange > 0)
          b.push_back({buffer.first, buffer.last, second + t * (std::int64_t{1} << 40), ipu::aligned(bytes.exchange)});
      }
    });
    REQUIRE(b.size() > 10);
    for (std::size_t x = 0; x < b.size(); ++x)
      for (std::size_t y = x + 1; y < b.size(); ++y)
        if (b[x].first <= b[y].last && b[y].first <= b[x].last)
          CHECK((b[x].offset + b[x].bytes <= b[y].offset || b[y].offset + b[y].bytes <= b[x].offset));
    const ipu::training_memory& m = p.ipus[static_cast<std::size_t>(i)];
    std::int64_t highest = 0;
    for (int t = 0; t < three_ipus::chip.tiles; ++t) {
      highest = std::max(highest, p.extent_on(i, t));
      for (int s = 0; s < static_cast<int>(p.step_count); ++s) CHECK(p.usage(i, t, s).total() <= m.peak);
    }
    CHECK(highest == m.peak);
    CHECK(p.usage(i, m.peak_tile, m.peak_step) == m.at_peak);
  }
}

}  // namespace pipelined_plan

TEST_CASE("a pipeline's plan: each IPU holds its stage's weights, and stashes its activations once per micro-batch in flight") {
  using namespace pipelined_plan;
  constexpr auto& seq = plan_of<sequential>;
  constexpr auto& grp = plan_of<grouped>;
  constexpr auto& itl = plan_of<interleaved>;
  // TensorFlow's FIFO depths 2 (N - 1 - s) and N - 1 - s, and the micro-batch in each stage.
  CHECK(grp.stash_depth == std::array<int, 3>{6, 4, 2});
  CHECK(itl.stash_depth == std::array<int, 3>{3, 2, 1});
  CHECK(seq.stash_depth == std::array<int, 3>{1, 1, 1});
  // Weights, f32: conv1 and block1.conv1 3 x 3 x 8 x 8 = 576 each, block1.conv2 8 x 8 = 64,
  // dense1 8 x 4 + 4 = 36.
  CHECK(seq.ipus[0].totals.weights == 576 * 4);
  CHECK(seq.ipus[1].totals.weights == 576 * 4);
  CHECK(seq.ipus[2].totals.weights == (64 + 36) * 4);
  // Stashed per micro-batch of 2 (1,024 elements an activation): IPU 0 the input, conv1's and
  // relu1's outputs; IPU 1 relu1's copy and its two outputs; IPU 2 the copies of relu1 and
  // block1.relu1, its convolution's and the add's outputs, the pooling's 2 x 8 and the dense
  // layer's 2 x 4.
  constexpr std::array<std::int64_t, 3> stashed{3 * 1024 * 4, 3 * 1024 * 4, (4 * 1024 + 16 + 8) * 4};
  for (int i = 0; i < 3; ++i) {
    INFO("IPU " << i);
    const auto in_flight = [&](const auto& p) { return on_ipu(p, i, -1, ipu::training_category::activations); };
    CHECK(in_flight(seq) == 0);
    CHECK(in_flight(grp) == (grp.stash_depth[static_cast<std::size_t>(i)] - 1) * stashed[static_cast<std::size_t>(i)]);
    CHECK(in_flight(itl) == (itl.stash_depth[static_cast<std::size_t>(i)] - 1) * stashed[static_cast<std::size_t>(i)]);
    CHECK(grp.ipus[static_cast<std::size_t>(i)].totals.activations - seq.ipus[static_cast<std::size_t>(i)].totals.activations ==
          in_flight(grp));
  }
  // In block1.conv1's forward step, a step of IPU 1: IPU 0 holds its three stashed outputs,
  // IPU 1 relu1's copy and block1.conv1's output, IPU 2 relu1's copy, received when relu1 ran.
  const int conv2 = node(seq, "block1.conv1");
  const int s = seq.node_of(conv2).forward;
  CHECK(on_ipu(seq, 0, s, ipu::training_category::activations) == 3 * 1024 * 4);
  CHECK(on_ipu(seq, 1, s, ipu::training_category::activations) == 2 * 1024 * 4);
  CHECK(on_ipu(seq, 2, s, ipu::training_category::activations) == 1024 * 4);
  check_every_ipu(seq);
  check_every_ipu(grp);
  check_every_ipu(itl);
}

TEST_CASE("a pipeline's plan: an output read on a later IPU is sent, its copy kept to the readers' backward steps, its gradient sent back") {
  using namespace pipelined_plan;
  constexpr auto& p = plan_of<grouped>;
  const int relu1 = node(p, "relu1"), conv2 = node(p, "block1.conv1"), add = node(p, "block1.add"), conv3 = node(p, "block1.conv2");
  REQUIRE(p.at(add).reads(relu1));
  CHECK(p.copy_of(relu1, 0).first < 0);  // its own IPU
  for (const auto& [ipu, reader] : {std::pair{1, conv2}, std::pair{2, add}}) {
    INFO("IPU " << ipu);
    const ipu::training_copy& c = p.copy_of(relu1, ipu);
    CHECK(c.first == p.node_of(relu1).forward);
    CHECK(c.last == p.node_of(reader).backward);
    CHECK(c.grad_first == p.node_of(reader).backward);
    CHECK(c.grad_last == p.node_of(reader).backward);
    // The gradient's send buffer, 1,024 elements, beside the reader's backward step's scratch.
    const int b = p.node_of(reader).backward;
    CHECK(on_ipu(p, ipu, b, ipu::training_category::exchange) >= 1024 * 4);
    CHECK(on_ipu(p, ipu, b, ipu::training_category::gradients) >= 1024 * 4);
  }
  // block1.relu1 is read on IPU 2 only; the input, read on IPU 0 only, is copied nowhere.
  CHECK(p.copy_of(node(p, "block1.relu1"), 2).last == p.node_of(conv3).backward);
  CHECK(p.copy_of(node(p, "block1.relu1"), 0).first < 0);
  for (int i = 0; i < 3; ++i) CHECK(p.copy_of(0, i).first < 0);
  // relu1's forward step holds its send buffer: its exchange is relu1's output's size more than
  // the same step's when nothing reads relu1 elsewhere (the one-IPU plan of the same layers).
  constexpr auto one_ipu = ipu::input<float, 2, 8, 8, 8> | nn::conv<8, 3> | nn::relu
      | nn::residual(nn::conv<8, 3> | nn::relu | nn::conv<8, 1>) | nn::global_avg_pool | nn::dense<4>;
  constexpr auto& single = ipu::plan_v<ipu::training<decltype(one_ipu), sequential>, three_ipus>;
  const int f = p.node_of(relu1).forward;
  CHECK(on_ipu(p, 0, f, ipu::training_category::exchange) - on_ipu(single, 0, f, ipu::training_category::exchange) == 1024 * 4);
}

TEST_CASE("a pipeline that fits run sequentially can overfill an IPU with the grouped schedule's stash") {
  using namespace pipelined_plan;
  // Micro-batch 64: IPU 0 keeps six micro-batches' activations with the grouped schedule, three
  // with the interleaved one, one run sequentially.
  STATIC_REQUIRE(ipu::fits_v<ipu::training<staged_t<64>, sequential>, three_ipus>);
  STATIC_REQUIRE(ipu::fits_v<ipu::training<staged_t<64>, interleaved>, three_ipus>);
  STATIC_REQUIRE_FALSE(ipu::fits_v<ipu::training<staged_t<64>, grouped>, three_ipus>);
  constexpr auto& p = plan_of<grouped, 64>;
  CHECK_FALSE(p.ipus[0].fits);
  CHECK(p.ipus[1].fits);
  CHECK(p.ipus[2].fits);
  CHECK(p.ipus[0].peak_category == ipu::training_category::activations);
}

TEST_CASE("the cycle model of a window: one IPU runs its steps one after another, a pipeline's stages in the schedule's slots") {
  using namespace pipelined_plan;
  // One IPU, one micro-batch: the window is the training step.
  constexpr auto& one = ipu::plan_v<ipu::training<net_t<ipu::f16>, adam>, tiny>;
  constexpr ipu::pipeline_timing<1> single = one.timing();
  STATIC_REQUIRE(single.total() == one.total_cycles());
  STATIC_REQUIRE(single.ramp_up == 0);
  STATIC_REQUIRE(single.ramp_down == 0);
  CHECK(single.samples_per_second() == Approx(2.0 * static_cast<double>(tiny::chip.clock_hz) / static_cast<double>(one.total_cycles())));

  // Three stages, six micro-batches. Each stage's passes from the plan's steps on its IPU.
  constexpr auto& seq = plan_of<sequential>;
  std::array<std::int64_t, 3> fwd{}, bwd{}, upd{};
  for (int s = 0; s < static_cast<int>(seq.step_count); ++s) {
    const ipu::plan_step& st = seq.steps[static_cast<std::size_t>(s)];
    const std::size_t i = static_cast<std::size_t>(seq.at(st.node).ipu);
    (st.phase == ipu::step_phase::forward ? fwd : st.phase == ipu::step_phase::update ? upd : bwd)[i] += seq.cycles(s).total();
  }
  const std::int64_t longest_update = *std::max_element(upd.begin(), upd.end());
  // Sequential: every pass one after another, no slot with every stage busy.
  constexpr ipu::pipeline_timing<3> in_turn = seq.timing();
  CHECK(in_turn.total() == 6 * (fwd[0] + bwd[0] + fwd[1] + bwd[1] + fwd[2] + bwd[2]) + longest_update);
  CHECK(in_turn.slots == 36);
  CHECK(in_turn.ramp_up_slots == 36);
  CHECK(in_turn.steady_slots == 0);
  // Grouped: 11 slots; every stage busy from slot 2 (stage 2's first forward) to slot 8 (its
  // last backward). Interleaved: 16 slots, every stage busy in slots 4 to 11.
  constexpr ipu::pipeline_timing<3> grouped_t = plan_of<grouped>.timing();
  constexpr ipu::pipeline_timing<3> interleaved_t = plan_of<interleaved>.timing();
  CHECK(std::array{grouped_t.slots, grouped_t.ramp_up_slots, grouped_t.steady_slots, grouped_t.ramp_down_slots} ==
        std::array<std::int64_t, 4>{11, 2, 7, 2});
  CHECK(std::array{interleaved_t.slots, interleaved_t.ramp_up_slots, interleaved_t.steady_slots, interleaved_t.ramp_down_slots} ==
        std::array<std::int64_t, 4>{16, 4, 8, 4});
  for (const auto* t : {&grouped_t, &interleaved_t}) {
    CHECK(t->forward == fwd);
    CHECK(t->backward == bwd);
    CHECK(t->update_cycles == longest_update);
    // Overlapping beats taking turns, and cannot beat the busiest stage's own work.
    CHECK(t->total() < in_turn.total());
    std::int64_t busiest = 0;
    for (int s = 0; s < 3; ++s) busiest = std::max(busiest, 6 * (fwd[static_cast<std::size_t>(s)] + bwd[static_cast<std::size_t>(s)]));
    CHECK(t->total() >= busiest + longest_update);
    CHECK(t->samples_per_second() > in_turn.samples_per_second());
  }
  // Stage 0 of the grouped schedule: forward passes in slots 0-5, backward in 5-10.
  std::string timeline;
  for (std::int64_t slot = 0; slot < grouped_t.slots; ++slot) timeline += grouped_t.activity(0, slot);
  CHECK(timeline == "FFFFFXBBBBB");
}
