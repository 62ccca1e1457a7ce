// Configurations Graphcore ran on IPU hardware, and what the plan says of each: the rows of
// the calibration table in docs/memory-planning.md, which gives each row's source. A
// configuration that ran must fit, and its peak is the table's figure, so a change to the
// memory model shows here and in the table together. A configuration that ran but that the plan
// does not fit yet is a known gap, tagged [gap]: its test holds the figure and that it does not
// fit, so it fails, asking for the table to be updated, once the plan fits it.
#include <ipu/ipu.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

namespace {

using std::int64_t;

/// PyTorch's `half_partial` with the default available memory proportion (0.6): the inference
/// configurations of graphcore/examples.
constexpr ipu::options half_partials{.partials = ipu::dtype::f16};

/// Model `G` fed as those configurations feed it: `eight_bit_io` with the ImageNet
/// normalisation on the IPU (`normalization_location: ipu`).
template <class G>
using eight_bit = ipu::with_stream_t<G, ipu::imagenet_eight_bit>;

/// Checks whether `G` fits one IPU of `Target` with `Opts` (`fits`), at a peak of `peak` bytes on
/// its fullest tile.
template <class G, class Target, ipu::options Opts>
void check_row(bool fits, int64_t peak) {
  constexpr const auto& p = ipu::plan_v<G, Target, Opts>;
  const ipu::ipu_memory& m = p.ipus[0];
  INFO(Target::name << ": peak " << m.peak << " of " << m.capacity << " bytes on tile " << m.peak_tile << " during "
                    << (m.peak_step >= 0 ? std::string(p.at(m.peak_step).path.view()) : std::string("always-live"))
                    << ", " << p.warnings << " layers over the proportion");
  CHECK(m.peak == peak);
  CHECK(p.warnings == 0);
  REQUIRE(p.fits == fits);
}

/// A configuration that ran on hardware: it fits.
template <class G, class Target, ipu::options Opts>
void check_ran(int64_t peak) {
  check_row<G, Target, Opts>(true, peak);
}

/// A configuration that ran on hardware but that the plan does not fit yet, a known gap
/// (docs/memory-planning.md says why).
template <class G, class Target, ipu::options Opts>
void check_gap(int64_t peak) {
  check_row<G, Target, Opts>(false, peak);
}

}  // namespace

TEST_CASE("the seed's ResNeXt-101 32x4d, f16, batch 4, proportion 0.3, fits one Mk2", "[plan][calibration]") {
  // Four input channels, f32 partials (TensorFlow's default), as the seed's program runs it.
  check_ran<ipu::models::resnext101_32x4d<ipu::f16, 4, 4>, ipu::mk2, ipu::options{.available_memory_proportion = {3, 10}}>(
      281'976);
}

TEST_CASE("ResNet-50, f16 with half partials, batch 80, fits one Mk2", "[plan][calibration]") {
  check_ran<eight_bit<ipu::models::resnet50<ipu::f16, 80>>, ipu::mk2, half_partials>(564'900);
}

TEST_CASE("ResNeXt-101 32x4d, f16 with half partials, batch 16, 32 I/O tiles, fits one Mk2", "[plan][calibration]") {
  check_ran<eight_bit<ipu::models::resnext101_32x4d<ipu::f16, 16>>, ipu::mk2,
            ipu::options{.partials = ipu::dtype::f16, .io_tiles = 32}>(394'828);
}

TEST_CASE("ResNet-50, f16 with half partials, batch 90, fits one Mk2", "[plan][calibration]") {
  check_ran<eight_bit<ipu::models::resnet50<ipu::f16, 90>>, ipu::mk2, half_partials>(583'716);
}

TEST_CASE("ResNet-50, f16 with half partials, batch 80, 64 I/O tiles, fits one Mk2", "[plan][calibration]") {
  check_ran<eight_bit<ipu::models::resnet50<ipu::f16, 80>>, ipu::mk2, ipu::options{.partials = ipu::dtype::f16, .io_tiles = 64}>(
      573'556);
}

TEST_CASE("EfficientNet-B0, f16 with half partials, batch 40, fits one Mk2", "[plan][calibration]") {
  check_ran<eight_bit<ipu::models::efficientnet_b0<ipu::f16, 40>>, ipu::mk2, half_partials>(274'432);
}

TEST_CASE("EfficientNet-B0, f16 with half partials, batch 49, fits one Mk2", "[plan][calibration]") {
  check_ran<eight_bit<ipu::models::efficientnet_b0<ipu::f16, 49>>, ipu::mk2, half_partials>(311'536);
}

TEST_CASE("EfficientNet-B0, f16 with half partials, batch 11, fits one Mk1", "[plan][calibration]") {
  check_ran<eight_bit<ipu::models::efficientnet_b0<ipu::f16, 11>>, ipu::mk1, half_partials>(167'924);
}

TEST_CASE("ResNeXt-101 32x4d, f16, batch 6, proportion 0.3, ran on one Mk1 but does not fit the plan yet",
          "[plan][calibration][gap]") {
  // Three input channels and f32 partials, as Graphcore's PopART inference example runs it.
  check_gap<ipu::models::resnext101_32x4d<ipu::f16, 6>, ipu::mk1, ipu::options{.available_memory_proportion = {3, 10}}>(
      268'248);
}

TEST_CASE("ResNet-50, f16 with half partials, batch 8, ran on one Mk1 but does not fit the plan yet",
          "[plan][calibration][gap]") {
  check_gap<eight_bit<ipu::models::resnet50<ipu::f16, 8>>, ipu::mk1, half_partials>(269'428);
}
