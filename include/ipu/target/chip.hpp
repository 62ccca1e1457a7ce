#pragma once
/// \file
/// IPU chips and systems: `ipu::mk1`, `ipu::mk2`, `ipu::bow`, `ipu::system<Chip, N>`, and the
/// `ipu::Target` concept a user-defined target satisfies.
///
/// Every constant cites its source beside it: Graphcore's published chip and system
/// specifications (GC2, GC200, IPU-M2000, Bow-2000), the IPU Programmer's Guide, and Poplar's
/// own error text; "derived" means computed from those figures, with the computation shown.

#include <concepts>
#include <cstdint>
#include <type_traits>

namespace ipu {

/// What the planner and the cycle model need to know about one IPU.
struct chip_spec {
  int tiles = 0;                          ///< tiles per IPU
  std::int64_t bytes_per_tile = 0;        ///< SRAM per tile
  int workers = 0;                        ///< worker contexts per tile (the supervisor excluded)
  std::int64_t clock_hz = 0;              ///< tile clock
  int f16_macs_per_cycle = 0;             ///< f16 multiply-accumulates per cycle per tile (AMP)
  int f32_macs_per_cycle = 0;             ///< f32 multiply-accumulates per cycle per tile
  std::int64_t exchange_bytes_per_s = 0;  ///< on-chip exchange bandwidth, whole IPU
  std::int64_t link_bytes_per_s = 0;      ///< IPU-Link bandwidth, all links of one IPU
  std::int64_t host_bytes_per_s = 0;      ///< host-link bandwidth in one direction (`ipu::on_host`'s transfers)
  int vector_bytes = 8;                   ///< natural vector width: 2 floats or 4 halves

  /// SRAM of the whole IPU.
  constexpr std::int64_t bytes_per_ipu() const noexcept { return bytes_per_tile * tiles; }
  /// Grain of the linear tile mapping: one vector, in elements of `element_bytes` (at least 1).
  constexpr std::int64_t grain(std::int64_t element_bytes) const noexcept {
    return element_bytes >= vector_bytes ? 1 : vector_bytes / element_bytes;
  }
  /// Equal when every field is equal.
  constexpr bool operator==(const chip_spec&) const = default;
};

/// First-generation IPU (GC2, on the C2 card).
struct mk1 {
  /// The GC2's figures (sources and assumptions in the comments).
  static constexpr chip_spec chip{
      .tiles = 1216,                  // Graphcore GC2 specification
      .bytes_per_tile = 262'144,      // 256 KiB: Poplar profile-data documentation
      .workers = 6,                   // 6 worker contexts + 1 supervisor (IPU programmer's guide)
      .clock_hz = 1'600'000'000,      // derived: 124.5 TFLOPS f16 / (1216 tiles x 32 MAC x 2)
      .f16_macs_per_cycle = 32,       // derived from 124.5 TFLOPS
      .f32_macs_per_cycle = 8,        // derived: a quarter of the f16 rate
      .exchange_bytes_per_s = 8'000'000'000'000,  // not published for Mk1: Mk2's 8 TB/s assumed
      .link_bytes_per_s = 320'000'000'000,        // not published for Mk1: Mk2's 320 GB/s assumed
      .host_bytes_per_s = 32'000'000'000,         // derived: PCIe Gen4 x16 (C2 card), 64 GB/s both ways
      .vector_bytes = 8,              // 64-bit vectors (IPU programmer's guide)
  };
  static constexpr int ipus = 1;                ///< one IPU
  static constexpr const char* name = "mk1";    ///< the name reports print
};

/// Second-generation IPU (GC200, in the IPU-M2000).
struct mk2 {
  /// The GC200's figures (sources in the comments).
  static constexpr chip_spec chip{
      .tiles = 1472,                  // Graphcore GC200 specification
      .bytes_per_tile = 638'976,      // 624 KiB: "tiles only have 638976 bytes of memory" (Poplar)
      .workers = 6,                   // 6 worker contexts + 1 supervisor
      .clock_hz = 1'330'000'000,      // derived: 250 TFLOPS f16 / (1472 tiles x 64 MAC x 2)
      .f16_macs_per_cycle = 64,       // derived from 250 TFLOPS
      .f32_macs_per_cycle = 16,       // derived from 62.5 TFLOPS f32
      .exchange_bytes_per_s = 8'000'000'000'000,  // 8 TB/s on-chip exchange (GC200 specification)
      .link_bytes_per_s = 320'000'000'000,        // 10 IPU-Links, 320 GB/s (IPU-M2000 specification)
      .host_bytes_per_s = 32'000'000'000,         // derived: PCIe Gen4 x16, 64 GB/s counting both directions
      .vector_bytes = 8,
  };
  static constexpr int ipus = 1;                ///< one IPU
  static constexpr const char* name = "mk2";    ///< the name reports print
};

/// Bow IPU: the GC200 tile array, wafer-on-wafer, at a higher clock.
struct bow {
  /// The Bow IPU's figures (sources and derivations in the comments).
  static constexpr chip_spec chip{
      .tiles = 1472,                  // Bow IPU specification
      .bytes_per_tile = 638'976,      // as Mk2 (~900 MB per IPU)
      .workers = 6,
      .clock_hz = 1'850'000'000,      // 1.85 GHz (Bow IPU specification)
      .f16_macs_per_cycle = 64,       // derived: same tile as Mk2
      .f32_macs_per_cycle = 16,       // derived: same tile as Mk2
      .exchange_bytes_per_s = 11'127'819'548'872,  // derived: Mk2's 8 TB/s scaled by 1.85 / 1.33
      .link_bytes_per_s = 640'000'000'000,         // derived: 10 links x 512 Gbps (Bow-2000 spec)
      .host_bytes_per_s = 32'000'000'000,          // not published here: Mk2's host link assumed
      .vector_bytes = 8,
  };
  static constexpr int ipus = 1;                ///< one IPU
  static constexpr const char* name = "bow";    ///< the name reports print
};

/// A target: one kind of chip and a number of IPUs. `ipu::mk2` is a one-IPU target; a
/// user-defined target is any type with these members (e.g. a Mk2 with 16 tiles, as the IPU
/// Model allows: `struct tiny { static constexpr ipu::chip_spec chip = ipu::with_tiles(ipu::mk2::chip, 16);
/// static constexpr int ipus = 1; static constexpr const char* name = "tiny"; };`).
template <class T>
concept Target = requires {
  { T::chip } -> std::convertible_to<chip_spec>;
  { T::ipus } -> std::convertible_to<int>;
  { T::name } -> std::convertible_to<const char*>;
} && (T::ipus > 0) && (T::chip.tiles > 0) && (T::chip.bytes_per_tile > 0);

/// `NumIpus` IPUs of `Chip`, e.g. `ipu::system<ipu::mk2, 4>` (an IPU-M2000).
template <Target Chip, int NumIpus>
  requires(NumIpus > 0 && Chip::ipus == 1)
struct system {
  static constexpr chip_spec chip = Chip::chip;    ///< the chip of each IPU, `Chip::chip`
  static constexpr int ipus = NumIpus;             ///< number of IPUs
  static constexpr const char* name = Chip::name;  ///< the chip's name (the IPU count is not part of it)
};

/// `System`'s IPUs split into `Replicas` replicas of `System::ipus / Replicas` IPUs each, e.g.
/// `ipu::replicated<ipu::system<ipu::mk2, 4>, 2>`: two replicas of two IPUs (TensorFlow's
/// "the number of IPUs must be a multiple of the shard count: 2 shards on 8 IPUs gives 4
/// replicas"). As a target it is one replica, which a plan places a graph on; the replicas
/// are `replicas`, and `ipu::replicated_trainer` trains on all of them.
template <Target System, int Replicas>
  requires(Replicas > 0 && System::ipus % Replicas == 0)
struct replicated {
  static constexpr chip_spec chip = System::chip;              ///< the chip of each IPU
  static constexpr int ipus = System::ipus / Replicas;         ///< IPUs of one replica
  static constexpr int replicas = Replicas;                    ///< replicas of the model
  static constexpr const char* name = System::name;            ///< the chip's name
};

namespace detail {
template <Target T>
struct one_replica {
  using type = T;
};
template <Target Chip, int N, int R>
struct one_replica<replicated<system<Chip, N>, R>> {
  using type = std::conditional_t<N / R == 1, Chip, system<Chip, N / R>>;
};
}  // namespace detail

/// The target of one replica of `T`: of `ipu::replicated<ipu::system<Chip, N>, R>`, `Chip` when
/// a replica has one IPU, else `ipu::system<Chip, N / R>`: the same chip, IPUs and name, so the
/// same plan, and the replicas of `ipu::replicated_trainer` and `ipu::replicated_engine` are the
/// very `trainer` and `engine` types a program on that target compiles (instantiated once). Any
/// other target is its own replica.
template <Target T>
using replica_target_t = typename detail::one_replica<T>::type;

/// The replicas of target `T`: `T::replicas` for an `ipu::replicated` target, else 1.
template <Target T>
inline constexpr int replicas_v = [] {
  if constexpr (requires { T::replicas; }) return static_cast<int>(T::replicas);
  else return 1;
}();

/// `chip` with `tiles` tiles per IPU, the rest unchanged (an IPU Model-style target).
constexpr chip_spec with_tiles(chip_spec chip, int tiles) noexcept {
  chip.tiles = tiles;
  return chip;
}

}  // namespace ipu
