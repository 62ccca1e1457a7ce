// The examples of docs/porting.md, compiled and, where they run quickly, run. Keep the two in
// step: the code between two `// [name]` markers is the code the guide shows under that name.
//
// The seed's ResNeXt-101 is planned here (static_asserts) and its weights are made, but it is
// never run: everything that runs uses small graphs, since ResNeXt-101 takes seconds per batch
// on the host.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include <range/v3/view/cycle.hpp>
#include <range/v3/view/iota.hpp>
#include <range/v3/view/transform.hpp>

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

// A namespace of its own: the guides' examples that run engines are one translation unit
// (tests/CMakeLists.txt).
namespace porting_doc {

namespace {
namespace nn = ipu::nn;

// [group_conv_block]
// The seed's group_conv_block(x, first_stride, filters=[Width, Out], count, cardinality).
template <int Width, int Out, int Stride, int Cardinality>
constexpr auto bottleneck = nn::conv<Width, 1, Stride> | nn::batch_norm | nn::relu          // <name><i>_1
                          | nn::conv<Width, 3, 1, /*groups*/ Cardinality>                   // <name><i>_2
                          | nn::batch_norm | nn::relu
                          | nn::conv<Out, 1> | nn::batch_norm;                              // <name><i>_3

template <int Width, int Out, int FirstStride, int Count, int Cardinality = 32>
constexpr auto group_conv_block =
    nn::residual(bottleneck<Width, Out, FirstStride, Cardinality>,                   // i == 0
                 nn::conv<Out, 1, FirstStride> | nn::batch_norm)                     // <name>0skip
    | nn::relu                                                                       // relu(x + shortcut)
    | nn::repeat<Count - 1>(nn::residual(bottleneck<Width, Out, 1, Cardinality>) | nn::relu);  // i >= 1
// [group_conv_block]

// [seed_model]
constexpr auto seed_model =
    ipu::input<ipu::f16, /*BATCH_SIZE*/ 4, /*height*/ 224, /*width*/ 224, /*channels*/ 4>
    | nn::scope<"stem">(nn::conv<64, 7, 2> | nn::batch_norm | nn::relu | nn::max_pool<3, 2>)  // input_block
    | nn::scope<"stage1">(group_conv_block<128, 256, 1, 3>)     // res2_
    | nn::scope<"stage2">(group_conv_block<256, 512, 2, 4>)     // res3_
    | nn::scope<"stage3">(group_conv_block<512, 1024, 2, 23>)   // res4_
    | nn::scope<"stage4">(group_conv_block<1024, 2048, 2, 3>)   // res5_
    | nn::global_avg_pool | nn::dense<1000>;                     // reduce_mean, fc
using seed_model_t = std::remove_cvref_t<decltype(seed_model)>;

// The zoo has it: the seed's stride placement is models::stride_at::first_conv.
static_assert(std::is_same_v<seed_model_t,
                             ipu::models::resnext<ipu::f16, /*batch*/ 4, /*layers*/ 101, /*cardinality*/ 32,
                                                  /*width per group*/ 4, /*channels*/ 4, /*classes*/ 1000,
                                                  /*image size*/ 224, ipu::models::stride_at::first_conv>>);
static_assert(ipu::param_count_v<seed_model_t> == 44'180'840);
static_assert(ipu::output_shape_v<seed_model_t> == std::array<std::int64_t, 2>{4, 1000});
// [seed_model]

// [zoo_model]
using model_t = ipu::models::resnext101_32x4d<ipu::f16, /*batch*/ 4, /*channels*/ 4>;
static_assert(ipu::param_count_v<model_t> == ipu::param_count_v<seed_model_t>);   // strides move, weights don't
static_assert(ipu::node_count_v<model_t> == 345);
// [zoo_model]

// [options]
// cfg.convolutions.poplar_options["availableMemoryProportion"] = "0.3"
constexpr ipu::options opts{.available_memory_proportion = {3, 10}};

// cfg.auto_select_ipus = 1: one Mk2, checked while the program compiles
static_assert(ipu::require_fit<model_t, ipu::mk2, opts>);

// poplar_options["partialsType"] = "half": f16 partial sums
constexpr ipu::options half_partials{.available_memory_proportion = {3, 10}, .partials = ipu::dtype::f16};
// [options]

// [auto_shard]
// One first-generation IPU (256 KiB per tile) is too small for the seed's model ...
static_assert(!ipu::fits_v<model_t, ipu::mk1, opts>);

// ... two of them hold it: given four, auto_shard takes on<0> and on<1>, balancing cycles.
using mk1x4 = ipu::system<ipu::mk1, 4>;
using placed_t = ipu::auto_shard<model_t, mk1x4>;
static_assert(ipu::require_fit<placed_t, mk1x4, opts>);
// [auto_shard]

// A small graph of the same kind, for everything that runs.
// [small_model]
constexpr auto small = ipu::input<ipu::f16, /*N*/ 2, /*H*/ 32, /*W*/ 32, /*C*/ 4>
    | nn::scope<"stem">(nn::conv<16, 3, 2> | nn::batch_norm | nn::relu)
    | nn::scope<"stage1">(group_conv_block<32, 64, 1, 2, /*cardinality*/ 8>)
    | nn::global_avg_pool | nn::dense<10>;
using small_t = decltype(small);
// [small_model]

// [sharded_model]
// with ipu_shard(0): the stem; with ipu_shard(1): the rest
constexpr auto sharded = ipu::input<ipu::f16, 2, 32, 32, 4>
    | nn::scope<"stem">(nn::conv<16, 3, 2> | nn::batch_norm | nn::relu)                  // IPU 0
    | ipu::on<1>(nn::scope<"stage1">(group_conv_block<32, 64, 1, 2, 8>)                 // IPU 1
                 | nn::global_avg_pool | nn::dense<10>);
using sharded_t = decltype(sharded);
using two_mk2 = ipu::system<ipu::mk2, 2>;                                             // auto_select_ipus = 2
static_assert(ipu::require_fit<sharded_t, two_mk2>);
// [sharded_model]

using image = ipu::input_tensor_t<small_t>;

image random_image(unsigned seed) {                    // the seed's np.random.random((N, H, W, C))
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  image x;
  for (auto& v : x) v = ipu::f16(uniform(rng));
  return x;
}
}  // namespace

TEST_CASE("docs/porting.md: the seed's model is the zoo's, and it is planned") {
  STATIC_REQUIRE(ipu::mac_count_v<model_t> == 32'037'339'136);       // the guide's 32.0 G per batch of 4
  STATIC_REQUIRE(ipu::mac_count_v<seed_model_t> == 30'187'651'072);  // and 30.2 G with the seed's strides
  CHECK(ipu::plan_v<model_t, ipu::mk2, half_partials>.fits);
  const auto& table = ipu::node_table_v<placed_t>;
  CHECK(table[static_cast<std::size_t>(ipu::find_node(table, "stem.conv1"))].ipu == 0);
  CHECK(table[static_cast<std::size_t>(ipu::find_node(table, "dense1"))].ipu == 1);  // two of the four suffice
}

TEST_CASE("docs/porting.md: a sharded graph computes what the unsharded one does") {
  const image x = random_image(1);
  // [placement]
  auto w = ipu::weights<sharded_t>::random(42);
  ipu::engine<sharded_t, two_mk2> engine{w};
  ipu::output_tensor_t<sharded_t> y = engine.infer(x);            // IPU 0, then IPU 1

  double one_after_another = engine.profile().simulated_images_per_second();
  double pipelined = engine.profile().pipelined_images_per_second();  // what pipelining would give
  // [placement]
  CHECK(pipelined > one_after_another);

  std::vector<std::vector<float>> arrays;
  for (const ipu::layer_weights& layer : w)
    for (const ipu::weight_tensor& t : layer.tensors()) arrays.push_back(t.values);
  ipu::engine<small_t, ipu::mk2> single{ipu::weights<small_t>::from_arrays(arrays)};
  CHECK(single.infer(x) == y);
}

TEST_CASE("docs/porting.md: the IPU Model is the host executor") {
  const image x = random_image(2);
  // [ipu_model]
  const auto w = ipu::weights<small_t>::random(42);
  ipu::engine<small_t, ipu::mk2> fast{w};                                  // the default
  ipu::engine<small_t, ipu::mk2> faithful{w, {.mode = ipu::execution_mode::faithful, .threads = 2}};
  CHECK(fast.infer(x) == faithful.infer(x));                               // the same bits
  // [ipu_model]
}

TEST_CASE("docs/porting.md: infeed, loop, outfeed and reports, as the seed runs them") {
  const image input_data = random_image(3);
  std::ostringstream console;                          // std::cout in a program
  const std::filesystem::path dir =   // unique: the g++ and clang builds may run this at once
      std::filesystem::temp_directory_path() / ("ipu-porting-report-" + std::to_string(std::random_device{}()));

  // [feeds]
  ipu::engine<small_t, ipu::mk2> engine{ipu::weights<small_t>::random(42)};
  ipu::infeed<small_t, /*prefetch_depth*/ 8> infeed_queue;
  ipu::outfeed<small_t, ipu::outfeed_mode::all> outfeed_queue;

  // tf.data.Dataset.range(1).map(lambda k: {"features": input_data}).repeat()
  std::jthread producer([&](std::stop_token stop) {
    ipu::feed(infeed_queue,
              ranges::views::iota(0, 1)
                  | ranges::views::transform([&](int) -> const image& { return input_data; })
                  | ranges::views::cycle,
              stop);
  });
  // [feeds]

  // [loop]
  constexpr std::int64_t batches_per_step = 100;       // BATCHES_PER_STEP
  constexpr int num_iterations = 5;                     // NUM_ITERATIONS

  engine.run(infeed_queue, outfeed_queue, batches_per_step);   // warm-up: sess.run(res)
  outfeed_queue.drain();                                       //          sess.run(outfeed)

  std::vector<double> fps, latency;
  for (int iter_count = 0; iter_count < num_iterations; ++iter_count) {
    ipu::run_stats stats = engine.run(infeed_queue, outfeed_queue, batches_per_step);  // sess.run(res)
    std::vector<ipu::output_tensor_t<small_t>> outfed = outfeed_queue.drain();        // sess.run(outfeed)
    fps.push_back(stats.images_per_second());                     // BATCHES_PER_STEP * BATCH_SIZE / s
    latency.push_back(1000 * stats.seconds / batches_per_step);   // ms per batch
    console << stats << '\n';
  }
  // [loop]
  CHECK(fps.size() == num_iterations);
  CHECK(latency.back() > 0);
  CHECK(console.str().find("100 of 100 iterations (2 images each)") != std::string::npos);

  // [report]
  std::filesystem::create_directories(dir);                               // --report DIR
  const ipu::html_report report = ipu::make_html_report<small_t, ipu::mk2>("small", engine.profile());
  report.write((dir / "report.html").string());                           // open it in a browser
  report.profile.write_json((dir / "profile.json").string());             // cycles per step and per IPU
  std::ofstream memory(dir / "memory.txt");
  memory << report.memory;                                                // every tile's memory
  report.memory.write_json((dir / "memory.json").string());               // the same, for programs
  // [report]
  memory.close();
  CHECK(std::filesystem::file_size(dir / "report.html") > 0);
  CHECK(std::filesystem::file_size(dir / "profile.json") > 0);
  CHECK(std::filesystem::file_size(dir / "memory.txt") > 0);
  CHECK(std::filesystem::file_size(dir / "memory.json") > 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("docs/porting.md: the system summary") {
  std::ostringstream console;
  ipu::engine<sharded_t, two_mk2> engine{ipu::weights<sharded_t>::random(42)};
  engine.infer(random_image(4));
  // [summary]
  console << two_mk2::ipus << " x " << two_mk2::name << ", " << two_mk2::chip.tiles << " tiles, "
          << two_mk2::chip.clock_hz / 1'000'000 << " MHz\n";             // 2 x mk2, 1472 tiles, 1330 MHz
  console << ipu::summary<sharded_t>();                                   // every layer and its IPU
  const ipu::memory_report_t memory = ipu::memory_report<sharded_t, two_mk2>();
  for (const ipu::memory_report_t::ipu_report& i : memory.ipus)          // per IPU: memory
    console << "IPU " << i.ipu << ": " << i.plan.nodes << " nodes, peak " << i.peak.bytes.total() << " of "
            << i.plan.capacity << " bytes on tile " << i.peak.tile << '\n';
  console << engine.profile();                                            // per IPU: cycles, host time
  // [summary]
  CHECK(console.str().find("2 x mk2, 1472 tiles, 1330 MHz") != std::string::npos);
  CHECK(console.str().find("IPU 1: ") != std::string::npos);
}

TEST_CASE("docs/porting.md: weights by the seed's layer names") {
  const std::vector<float> checkpoint_kernel(3 * 3 * 4 * 128, 0.01f);  // as read from the seed's checkpoint
  const std::vector<float> checkpoint_conv1_bias(64, 0.5f);
  // [weights]
  auto w = ipu::weights<model_t>::random(42);       // tf.global_variables_initializer(), on the host

  // The seed's res2_0_2 (conv2d/kernel1): the group conv of stage 1's first block, HWIO.
  w["stage1.block1.conv2"].assign("kernel", checkpoint_kernel, std::array<std::int64_t, 4>{3, 3, 4, 128});

  // The seed's conv1 adds a bias; nn::conv has none: fold it into the batch norm after it.
  std::span<float> mean = w["stem.batch_norm1"]["mean"];
  for (std::size_t c = 0; c < mean.size(); ++c) mean[c] -= checkpoint_conv1_bias[c];
  // [weights]
  for (float m : w["stem.batch_norm1"]["mean"]) CHECK((m >= -0.6f && m <= -0.4f));  // random means are in ±0.1
  CHECK(w["stage1.block1.conv2"]["kernel"][7] == 0.01f);
  CHECK(w.size() == 209u);
  CHECK_THROWS_AS(w["stage1.block1.conv2"]["bias"], ipu::weight_error);
  const std::array<std::int64_t, 4> transposed{3, 3, 128, 4};         // a wrong shape is named, not loaded
  CHECK_THROWS_AS(w["stage1.block1.conv2"].assign("kernel", checkpoint_kernel, transposed), ipu::weight_error);
}

}  // namespace porting_doc
