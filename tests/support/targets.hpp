// Targets with few tiles, for tests whose plans must be small enough to check by hand.
#pragma once

#include <ipu/target/chip.hpp>

namespace ipu_test {

/// A Mk2 with `Tiles` tiles and `Ipus` IPUs, as the IPU Model allows.
template <int Tiles, int Ipus = 1>
struct small_target {
  static constexpr ipu::chip_spec chip = ipu::with_tiles(ipu::mk2::chip, Tiles);
  static constexpr int ipus = Ipus;
  static constexpr const char* name = "mk2-small";
};

}  // namespace ipu_test
