// Places the seed's ResNeXt-101 32x4d (f16, 224x224 with 4 channels, available memory
// proportion 0.3) at a batch too large for one Mk2 over several Mk2s, once by hand with
// ipu::on<> and once with ipu::auto_shard, and prints each IPU's memory from the compile-time
// plan (the plans are constants and the static_asserts below are the proof). Then it runs one
// batch through each placement, with the same weights, on the host, and checks that both give
// the same bits: a placement changes where layers run, not what they compute.
//
// Batch 94 is the smallest batch that does not fit one Mk2; batch 93 still does (635,528 bytes
// on its fullest tile). At 94, tile 1 needs 640,152 bytes during stage1.block1.shortcut.conv1,
// 1,176 more than a tile's 638,976: 174,966 of weights and code, 231,456 of activations (the
// block's input, which the shortcut reads, the bottleneck's output, kept for the residual add,
// and the shortcut's output) and the conv's transients, 149,120.
//
// By hand, two IPUs are enough: with the cut between stage3 and stage4, IPU 0 no longer holds
// stage4's weights and code, and its fullest tile drops to 603,924 bytes. Given all four IPUs of
// an IPU-M2000, auto_shard takes the fewest that hold the model, two (a sharded model runs one
// IPU at a time, so more would only add exchange), and among the cuts into two, the one that
// best balances the estimated cycles: within stage3, well before the hand's cut.
#include <ipu/ipu.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace nn = ipu::nn;

namespace {

constexpr int batch = 94;
constexpr ipu::options opts{.available_memory_proportion = {3, 10}};  // 0.3, as the seed sets it

// As the seed builds it: a stage downsamples in its first 1x1 conv (see resnext101_inference.cpp).
template <int Batch>
using resnext101 = ipu::models::resnext<ipu::f16, Batch, /*layers*/ 101, /*cardinality*/ 32, /*width per group*/ 4,
                                        /*in channels*/ 4, /*classes*/ 1000, /*image size*/ 224,
                                        ipu::models::stride_at::first_conv>;
using model_t = resnext101<batch>;

static_assert(!ipu::fits_v<model_t, ipu::mk2, opts>);
static_assert(ipu::fits_v<resnext101<batch - 1>, ipu::mk2, opts>);

// The zoo's network spelled out, because placement goes inside it. The grouped 3x3 conv is the
// ResNeXt part: 32 groups; the stride is on the first 1x1, as in the seed's group_conv_block.
template <int Width, int Out, int Stride>
constexpr auto bottleneck = nn::conv<Width, 1, Stride> | nn::batch_norm | nn::relu
                          | nn::conv<Width, 3, 1, /*groups*/ 32> | nn::batch_norm | nn::relu
                          | nn::conv<Out, 1> | nn::batch_norm;
template <int Width, int Out, int Stride>
constexpr auto first_block = nn::residual(bottleneck<Width, Out, Stride>, nn::conv<Out, 1, Stride> | nn::batch_norm)
                           | nn::relu;
template <int Width, int Out>
constexpr auto block = nn::residual(bottleneck<Width, Out, 1>) | nn::relu;

constexpr auto by_hand = ipu::input<ipu::f16, batch, 224, 224, 4>                                        // N, H, W, C
    | ipu::on<0>(nn::scope<"stem">(nn::conv<64, 7, 2> | nn::batch_norm | nn::relu | nn::max_pool<3, 2>)
                 | nn::scope<"stage1">(first_block<128, 256, 1> | nn::repeat<2>(block<128, 256>))       // 56x56
                 | nn::scope<"stage2">(first_block<256, 512, 2> | nn::repeat<3>(block<256, 512>))       // 28x28
                 | nn::scope<"stage3">(first_block<512, 1024, 2> | nn::repeat<22>(block<512, 1024>)))   // 14x14
    | ipu::on<1>(nn::scope<"stage4">(first_block<1024, 2048, 2> | nn::repeat<2>(block<1024, 2048>))    // 7x7
                 | nn::global_avg_pool | nn::dense<1000>);
using by_hand_t = decltype(by_hand);
using two_mk2 = ipu::system<ipu::mk2, 2>;

using m2000 = ipu::system<ipu::mk2, 4>;  // an IPU-M2000
using auto_sharded_t = ipu::auto_shard<model_t, m2000>;

// Same layers, paths and shapes as the zoo's, so the two placements are of one network.
template <class A, class B>
constexpr bool same_network = [] {
  if constexpr (ipu::node_count_v<A> != ipu::node_count_v<B>) {
    return false;
  } else {
    const auto& a = ipu::node_table_v<A>;
    const auto& b = ipu::node_table_v<B>;
    for (std::size_t j = 0; j < a.size(); ++j)
      if (a[j].kind != b[j].kind || !(a[j].path == b[j].path) || !(a[j].out == b[j].out)) return false;
    return true;
  }
}();
static_assert(same_network<by_hand_t, model_t>);
static_assert(ipu::param_count_v<by_hand_t> == ipu::param_count_v<model_t>);
static_assert(ipu::mac_count_v<by_hand_t> == ipu::mac_count_v<model_t>);

static_assert(ipu::require_fit<by_hand_t, two_mk2, opts>);
static_assert(ipu::require_fit<auto_sharded_t, m2000, opts>);

// auto_shard uses IPUs 0 and 1 of the four, and balances them better than the hand did.
static_assert(ipu::plan_v<auto_sharded_t, m2000, opts>.ipus[1].nodes > 0 &&
              ipu::plan_v<auto_sharded_t, m2000, opts>.ipus[2].nodes == 0);
static_assert(ipu::plan_v<auto_sharded_t, m2000, opts>.ipus[0].cycles <
              ipu::plan_v<by_hand_t, two_mk2, opts>.ipus[0].cycles);

std::string grouped(std::int64_t v) {
  const std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out = v < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string percent(std::int64_t part, std::int64_t whole) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << 100.0 * static_cast<double>(part) / static_cast<double>(whole) << '%';
  return s.str();
}

// The node ranges an IPU runs, "first .. last", comma-separated when not contiguous.
template <class Plan>
std::string layers_on(const Plan& p, int ipu) {
  std::string out;
  for (int j = 0; j < static_cast<int>(Plan::size); ++j) {
    if (p.at(j).ipu != ipu || (j > 0 && p.at(j - 1).ipu == ipu)) continue;
    int last = j;
    while (last + 1 < static_cast<int>(Plan::size) && p.at(last + 1).ipu == ipu) ++last;
    if (!out.empty()) out += ", ";
    out.append(p.at(j).path.view()).append(" .. ").append(p.at(last).path.view());
  }
  return out;
}

template <class G, class Target>
void print_placement(std::ostream& os, const char* title) {
  const auto& p = ipu::plan_v<G, Target, opts>;
  os << title << ": " << (p.fits ? "fits" : "does not fit") << '\n'
     << "  " << std::left << std::setw(4) << "IPU" << std::setw(36) << "layers" << std::right << std::setw(6) << "nodes"
     << std::setw(6) << "tile" << std::setw(12) << "peak bytes" << std::setw(7) << "used" << "  " << std::left
     << std::setw(30) << "layer at peak" << std::right << std::setw(14) << "IPU bytes" << std::setw(7) << "used"
     << std::setw(13) << "est. cycles" << '\n';
  for (int i = 0; i < Target::ipus; ++i) {
    const ipu::ipu_memory& m = p.ipus[static_cast<std::size_t>(i)];
    os << "  " << std::left << std::setw(4) << i << std::setw(36) << layers_on(p, i) << std::right << std::setw(6)
       << m.nodes << std::setw(6) << m.peak_tile << std::setw(12) << grouped(m.peak) << std::setw(7)
       << percent(m.peak, m.capacity) << "  " << std::left << std::setw(30)
       << (m.peak_step >= 0 ? p.at(m.peak_step).path.view() : "-") << std::right << std::setw(14)
       << grouped(m.totals.total()) << std::setw(7)
       << percent(m.totals.total(), p.chip.bytes_per_ipu()) << std::setw(13) << grouped(m.cycles) << '\n';
  }
}

void print_report(std::ostream& os) {
  const ipu::chip_spec& chip = ipu::mk2::chip;
  const auto& one = ipu::plan_v<model_t, ipu::mk2, opts>;
  const ipu::ipu_memory& m = one.ipus[0];
  const ipu::node_plan& layer = one.plan_of(m.peak_step);
  const ipu::ratio amp = opts.available_memory_proportion;

  os << "ResNeXt-101 32x4d, f16, batch " << batch << " of 224x224x4 images, available memory proportion " << amp.num
     << '/' << amp.den << "\nmk2: " << grouped(chip.tiles) << " tiles x " << grouped(chip.bytes_per_tile)
     << " bytes = " << grouped(chip.bytes_per_ipu()) << " bytes per IPU\n\n";

  os << "one mk2: does not fit; batch " << batch << " is the smallest that does not (batch " << batch - 1
     << " fits)\n"
     << "  tile " << m.peak_tile << " needs " << grouped(m.peak) << " of " << grouped(m.capacity) << " bytes ("
     << grouped(m.peak - m.capacity) << " over) during " << one.at(m.peak_step).path << '\n'
     << "  weights " << grouped(m.at_peak.weights) << "  code " << grouped(m.at_peak.code) << "  activations "
     << grouped(m.at_peak.activations) << "  temporaries " << grouped(m.at_peak.temporaries) << "  exchange "
     << grouped(m.at_peak.exchange) << '\n'
     << "  the layer's transients on its fullest tile, " << grouped(layer.transient_max.total()) << " bytes, "
     << (layer.transient_max.total() > layer.transient_bound ? "exceed" : "are within") << " the " << amp.num << '/'
     << amp.den << " bound of " << grouped(layer.transient_bound)
     << (layer.over_bound ? "; no split meets it" : "") << "\n\n";

  print_placement<by_hand_t, two_mk2>(os, "by hand, ipu::on<0> and ipu::on<1> over system<mk2, 2>");
  os << '\n';
  print_placement<auto_sharded_t, m2000>(os, "ipu::auto_shard over system<mk2, 4>, an IPU-M2000");
  os << "\ntile: the IPU's fullest tile. IPU bytes: weights and code summed over the tiles, plus activations,\n"
        "temporaries and exchange at their largest step. auto_shard takes the fewest IPUs that hold the\n"
        "model, as a sharded model runs one IPU at a time, and of the cuts into two, the one that best\n"
        "balances the estimated cycles.\n";
}

// The zoo's random weights (seed 42) as a weight set of graph `G`, a placement of the same
// network: the same tensors, in the same order.
template <class G>
ipu::weights<G> same_weights(const ipu::weights<model_t>& w) {
  std::vector<std::vector<float>> arrays;
  for (const ipu::layer_weights& layer : w)
    for (const ipu::weight_tensor& t : layer.tensors()) arrays.push_back(t.values);
  return ipu::weights<G>::from_arrays(arrays);
}

// Runs one batch of `x` through `G` on `Target` in fast mode; prints the host time and the
// simulated throughput, and returns the output.
// Its profile, with the host time of each step, goes to `measured`.
template <class G, class Target>
ipu::output_tensor_t<G> run(std::ostream& os, const char* title, const ipu::weights<model_t>& w,
                            const ipu::input_tensor_t<G>& x, unsigned threads, ipu::profile& measured) {
  ipu::engine<G, Target, opts> engine{same_weights<G>(w), {.mode = ipu::execution_mode::fast, .threads = threads}};
  const auto start = std::chrono::steady_clock::now();
  ipu::output_tensor_t<G> y = engine.infer(x);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const ipu::profile& p = engine.profile();
  const auto* first = y.data();
  const std::ptrdiff_t top = std::max_element(first, first + 1000, [](auto a, auto b) {
                               return static_cast<float>(a) < static_cast<float>(b);
                             }) - first;
  os << "  " << title << ": " << std::fixed << std::setprecision(2) << seconds << " s on " << engine.threads()
     << " host threads; image 0's top class " << top << "; simulated " << std::setprecision(1)
     << p.simulated_images_per_second() << " images/s, " << p.pipelined_images_per_second()
     << " images/s pipelined over the IPUs\n";
  measured = p;
  return y;
}

// The two placements' profiles: the cycle model's, with host times once a batch ran.
struct profiles {
  ipu::profile by_hand, auto_shard;
};

// One batch through both placements; true when they agree bit for bit.
bool run_both(std::ostream& os, unsigned threads, profiles& measured) {
  const auto w = ipu::weights<model_t>::random(42);
  ipu::input_tensor_t<by_hand_t> x;
  std::uint64_t state = 7;
  for (auto& v : x) {  // uniform in [-1, 1), a fixed sequence
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v = ipu::f16(static_cast<float>(state >> 40) / static_cast<float>(1ull << 23) - 1.0f);
  }
  os << "one batch of " << batch << " synthetic images, weights random(42), fast mode:\n";
  const auto by_hand_y = run<by_hand_t, two_mk2>(os, "by hand    ", w, x, threads, measured.by_hand);
  ipu::input_tensor_t<auto_sharded_t> x2;
  std::copy(x.begin(), x.end(), x2.begin());
  const auto auto_y = run<auto_sharded_t, m2000>(os, "auto_shard ", w, x2, threads, measured.auto_shard);
  const bool same = std::memcmp(by_hand_y.data(), auto_y.data(), by_hand_y.size() * sizeof(by_hand_y[0])) == 0;
  os << "  the two placements' outputs are " << (same ? "bit-identical" : "DIFFERENT") << '\n';
  return same;
}

// DIR/report.html: auto_shard's placement beside the hand's (open it in a browser).
void write_report(const std::filesystem::path& dir, const profiles& p) {
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "report.html").string();
  const std::string title = "ResNeXt-101 32x4d, f16, batch " + std::to_string(batch);
  const ipu::html_report by_hand = ipu::make_html_report<by_hand_t, two_mk2, opts>(title + ", by hand", p.by_hand);
  ipu::make_html_report<auto_sharded_t, m2000, opts>(title + ", auto_shard", p.auto_shard).write(path, &by_hand);
  std::cout << "Report written to " << path << " (auto_shard against the hand's placement)\n";
}

int run_program(int argc, char** argv) {
  bool run_network = true;
  unsigned threads = 0;
  std::optional<std::filesystem::path> report;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::cout << "usage: sharded_inference [--plans-only] [--threads N] [--report DIR]\n"
                   "Shows that ResNeXt-101 32x4d (f16, 224x224x4) at batch "
                << batch
                << " does not fit one Mk2 IPU, then places it\n"
                   "over two Mk2s by hand (ipu::on<>) and with ipu::auto_shard over four, and prints each IPU's\n"
                   "memory from the plan computed at compile time. Then it runs one batch through each placement\n"
                   "on the host (fast mode, N host threads; 0, the default, is one per core) and checks that both\n"
                   "give the same bits; --plans-only skips that. --report DIR writes DIR/report.html, the two\n"
                   "placements side by side (with the host times of the batch unless --plans-only). The batch size\n"
                   "is part of the graph's type, so it is fixed when the program is compiled.\n";
      return 0;
    }
    if (std::strcmp(argv[i], "--plans-only") == 0) {
      run_network = false;
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      char* end = nullptr;
      const unsigned long n = std::strtoul(argv[++i], &end, 10);
      if (*end != '\0' || n > 1024) {
        std::cerr << "sharded_inference: --threads takes a count from 0 to 1024, not '" << argv[i] << "'\n";
        return 2;
      }
      threads = static_cast<unsigned>(n);
    } else if (std::strcmp(argv[i], "--report") == 0 && i + 1 < argc && argv[i + 1][0] != '\0') {
      report = std::filesystem::path(argv[++i]);
    } else {
      std::cerr << "sharded_inference: unknown argument '" << argv[i] << "' (try --help)\n";
      return 2;
    }
  }
  print_report(std::cout);
  // Without a run, the profiles are the plans' alone.
  profiles measured{ipu::plan_profile<by_hand_t, two_mk2, opts>(), ipu::plan_profile<auto_sharded_t, m2000, opts>()};
  bool same = true;
  if (run_network) {
    std::cout << '\n';
    same = run_both(std::cout, threads, measured);
  }
  if (report) write_report(*report, measured);
  return same ? 0 : 1;
}

}  // namespace

// A report that cannot be written (or any other failure) ends the program with its message.
int main(int argc, char** argv) {
  try {
    return run_program(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "sharded_inference: " << e.what() << '\n';
    return 1;
  }
}
