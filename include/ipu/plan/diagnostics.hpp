#pragma once
/// \file
/// Compile errors of planning: a tile out of memory, an IPU index outside the target, an
/// invalid `available_memory_proportion`, a tile size off the buffer alignment. As for graph errors, each is a class template whose
/// name states the problem and whose arguments are labelled numbers, instantiated once from
/// the finished plan's values, never from the graph type.

#include <ipu/graph/diagnostics.hpp>
#include <ipu/core/fixed_string.hpp>
#include <ipu/plan/memory.hpp>

#include <cstddef>
#include <cstdint>

namespace ipu::diag {

/// The category holding the most bytes of the failing tile, as a type both compilers print
/// by name.
struct largest_is_weights {};
struct largest_is_code {};
struct largest_is_activations {};
struct largest_is_temporaries {};
struct largest_is_exchange {};

struct on_ipu { int value; };
struct on_tile { int value; };
struct bytes_needed { std::int64_t value; };
struct bytes_available { std::int64_t value; };
/// The tile's bytes by category at the failing step.
struct weights { std::int64_t bytes; };
struct code { std::int64_t bytes; };
struct activations { std::int64_t bytes; };
struct temporaries { std::int64_t bytes; };
struct exchange { std::int64_t bytes; };
struct ipu_index { std::int64_t value; };
struct ipus_in_target { std::int64_t value; };
struct numerator { std::int64_t value; };
struct denominator { std::int64_t value; };
struct bytes_per_tile { std::int64_t value; };
struct alignment { std::int64_t value; };
struct io_tiles { std::int64_t value; };
struct tiles_per_ipu { std::int64_t value; };

template <on_ipu Ipu, on_tile Tile, auto Layer, class Largest, bytes_needed Needed, bytes_available Available,
          weights W, code C, activations A, temporaries T, exchange E>
struct tile_out_of_memory {
  static_assert(Needed.value <= Available.value,
                "ipu: a tile needs more memory than it has; place part of the model on another IPU "
                "(ipu::on<I> or ipu::auto_shard), or lower the batch size or available_memory_proportion");
  static constexpr bool value = false;
};

/// As `tile_out_of_memory`, where the graph does not fit at batch size 1 either, so that a
/// smaller batch cannot help.
template <on_ipu Ipu, on_tile Tile, auto Layer, class Largest, bytes_needed Needed, bytes_available Available,
          weights W, code C, activations A, temporaries T, exchange E>
struct tile_out_of_memory_even_at_batch_1 {
  static_assert(Needed.value <= Available.value,
                "ipu: a tile needs more memory than it has, even at batch size 1; place part of the model on "
                "another IPU (ipu::on<I> or ipu::auto_shard), or lower available_memory_proportion");
  static constexpr bool value = false;
};

/// As `tile_out_of_memory`, at batch size 1 (the numbers are that plan's), where the step's own
/// temporaries and exchange buffers exceed the tile, so that neither a smaller batch nor
/// another placement of the other layers can help.
template <on_ipu Ipu, on_tile Tile, auto Layer, class Largest, bytes_needed Needed, bytes_available Available,
          weights W, code C, activations A, temporaries T, exchange E>
struct one_step_exceeds_a_tile_even_at_batch_1 {
  static_assert(Needed.value <= Available.value,
                "ipu: a tile needs more memory than it has, even at batch size 1 (the bytes shown), for this "
                "step's temporaries and exchange buffers alone: neither a smaller batch nor another placement "
                "fits it on this chip");
  static constexpr bool value = false;
};

template <auto Layer, ipu_index Index, ipus_in_target Ipus>
struct ipu_index_outside_system {
  static_assert(Index.value < Ipus.value,
                "ipu: a block is placed with ipu::on<I> on an IPU the target does not have; use "
                "ipu::system<Chip, N> with more IPUs");
  static constexpr bool value = false;
};

template <numerator Num, denominator Den>
struct available_memory_proportion_must_be_in_0_1 {
  static_assert(Num.value > 0 && Den.value > 0 && Num.value <= Den.value,
                "ipu: options::available_memory_proportion must be a ratio in (0, 1], e.g. {3, 10}");
  static constexpr bool value = false;
};

template <bytes_per_tile Bytes, alignment Alignment>
struct tile_bytes_must_be_a_multiple_of_the_alignment {
  static_assert(Bytes.value % Alignment.value == 0,
                "ipu: a target's chip_spec::bytes_per_tile must be a multiple of ipu::buffer_alignment, as every "
                "buffer of a tile image starts at a multiple of it");
  static constexpr bool value = false;
};

template <auto Layer, ipu_index Index>
struct trained_layer_on_the_host {
  static_assert(Index.value >= 0,
                "ipu: a training step runs on the IPUs, and this block is placed on the host (ipu::on_host); place "
                "it on an IPU (ipu::on<I>) to train it");
  static constexpr bool value = false;
};

template <io_tiles Io, tiles_per_ipu Tiles>
struct io_tiles_must_leave_tiles_for_the_model {
  static_assert(Io.value >= 0 && Io.value < Tiles.value,
                "ipu: options::io_tiles must be in [0, tiles per IPU): the other tiles hold the model");
  static constexpr bool value = false;
};

}  // namespace ipu::diag

namespace ipu::detail {

/// What an out-of-memory error can advise: whatever was tried at batch size 1.
enum class memory_advice : std::uint8_t {
  any,               ///< a smaller batch, another placement or a lower proportion may help
  not_batch,         ///< batch size 1 does not fit either
  neither,           ///< at batch size 1 one step alone exceeds a tile
};

/// Instantiates the out-of-memory diagnostic for the peak `M` of IPU `Ipu`, at layer `Path`,
/// with the advice that holds for it.
template <int Ipu, ipu_memory M, path_string Path, memory_advice Advice = memory_advice::any>
consteval auto report_out_of_memory() {
  constexpr auto layer = diag::in_layer<Path.length + 1>{Path};
  using largest = decltype([] {
    if constexpr (M.at_peak.largest() == memory_category::weights) return diag::largest_is_weights{};
    else if constexpr (M.at_peak.largest() == memory_category::code) return diag::largest_is_code{};
    else if constexpr (M.at_peak.largest() == memory_category::activations) return diag::largest_is_activations{};
    else if constexpr (M.at_peak.largest() == memory_category::temporaries) return diag::largest_is_temporaries{};
    else return diag::largest_is_exchange{};
  }());
  constexpr diag::bytes_needed needed{M.peak};
  constexpr diag::bytes_available available{M.capacity};
  constexpr diag::weights w{M.at_peak.weights};
  constexpr diag::code c{M.at_peak.code};
  constexpr diag::activations a{M.at_peak.activations};
  constexpr diag::temporaries t{M.at_peak.temporaries};
  constexpr diag::exchange e{M.at_peak.exchange};
  constexpr diag::on_ipu ipu{Ipu};
  constexpr diag::on_tile tile{M.peak_tile};
  if constexpr (Advice == memory_advice::neither) {
    return diag::one_step_exceeds_a_tile_even_at_batch_1<ipu, tile, layer, largest, needed, available, w, c, a, t, e>::value;
  } else if constexpr (Advice == memory_advice::not_batch) {
    return diag::tile_out_of_memory_even_at_batch_1<ipu, tile, layer, largest, needed, available, w, c, a, t, e>::value;
  } else {
    return diag::tile_out_of_memory<ipu, tile, layer, largest, needed, available, w, c, a, t, e>::value;
  }
}

/// Instantiates the diagnostic for plan error `E` (at the layer `Path`); true when there is none.
template <plan_error E, path_string Path>
consteval auto report_plan_error() {
  if constexpr (E.kind == plan_error_kind::none) {
    return true;
  } else if constexpr (E.kind == plan_error_kind::ipu_outside_system) {
    constexpr auto layer = diag::in_layer<Path.length + 1>{Path};
    return diag::ipu_index_outside_system<layer, diag::ipu_index{E.x}, diag::ipus_in_target{E.y}>::value;
  } else if constexpr (E.kind == plan_error_kind::tile_bytes_not_aligned) {
    return diag::tile_bytes_must_be_a_multiple_of_the_alignment<diag::bytes_per_tile{E.x}, diag::alignment{E.y}>::value;
  } else if constexpr (E.kind == plan_error_kind::training_on_the_host) {
    constexpr auto layer = diag::in_layer<Path.length + 1>{Path};
    return diag::trained_layer_on_the_host<layer, diag::ipu_index{E.x}>::value;
  } else if constexpr (E.kind == plan_error_kind::bad_io_tiles) {
    return diag::io_tiles_must_leave_tiles_for_the_model<diag::io_tiles{E.x}, diag::tiles_per_ipu{E.y}>::value;
  } else {
    return diag::available_memory_proportion_must_be_in_0_1<diag::numerator{E.x}, diag::denominator{E.y}>::value;
  }
}

}  // namespace ipu::detail
