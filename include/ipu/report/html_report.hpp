#pragma once
/// \file
/// `ipu::html_report`: a plan's memory and a profile's cycles and host times as one
/// self-contained HTML page (no network, no external script or style), the views of PopVision's
/// Graph Analyser that the seed's section 3.4 profiles with:
///   - a summary: the target, the model, the batch, the peak memory and where, the simulated
///     and measured throughput;
///   - memory: a map of every tile coloured by its bytes at a step, with a control to move over
///     the steps (it opens at the peak); the bytes by category at the peak; the IPU's memory
///     over the steps by category, always-live code and weights included (the seed's Fig. 3.3),
///     and its fullest tile's; the histogram of the tiles' peaks; the fullest tiles and layers;
///   - execution: the cycles of each step split into compute, exchange, sync and IPU-Link (the
///     seed's Fig. 3.2), per IPU, and a timeline per IPU, one batch after another or pipelined;
///   - a table of the layers (shape, parameters, MACs, bytes, cycles, host time), sortable by
///     any column and filtered by path or op;
///   - a comparison with another report, given to `write` or opened in the page.
///
/// The page embeds the memory report's JSON (`memory_report_t::write_json`), the profile's
/// (`profile::write_json`) and every tile's bytes at every step of its IPU, as 16-bit counts of
/// `unit` bytes (the smallest power of two that keeps the fullest tile's count within 16 bits:
/// 8 bytes for the seed's ResNeXt-101 on a Mk2), each distinct step once, base64 encoded; the
/// page draws everything from them. Every `<` of the JSON is written `\u003c`, so no name
/// closes the script holding it. Errors while the page renders are shown at its top (and
/// logged to the console). A training step's page (`training_html_report`) shows IPU 0's tiles
/// over the step's forward, recompute, backward and update steps, the cycles by phase and the
/// window of micro-batches over the pipeline's stages.
///
/// The flagship's page (ResNeXt-101 on a Mk2) is 0.6 MB; Chromium draws it in about 0.2 s.

#include <ipu/core/json.hpp>
#include <ipu/graph/compose.hpp>
#include <ipu/report/html_page.hpp>
#include <ipu/report/memory_report.hpp>
#include <ipu/report/training_report.hpp>
#include <ipu/runtime/profile.hpp>
#include <ipu/train/profile.hpp>
#include <ipu/target/chip.hpp>
#include <ipu/target/options.hpp>
#include <ipu/version.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ipu {

/// What a report page shows of one run: a plan's memory report and a profile, the cycle model's
/// with the host times an engine measured (or none, for a plan alone).
struct html_report {
  std::string title;       ///< the page's heading, e.g. `"ResNeXt-101 32x4d, f16, batch 4"`
  memory_report_t memory;  ///< the plan's memory, per tile and step
  ipu::profile profile;    ///< cycles per step, and host times if batches ran

  /// Writes the page; with `baseline`, the page also compares this report with it side by side.
  void write(std::ostream& os, const html_report* baseline = nullptr) const;
  /// Writes the page to `path`; throws `std::runtime_error` if it cannot.
  void write(const std::string& path, const html_report* baseline = nullptr) const {
    detail::write_file(path, "ipu::html_report", [&](std::ostream& os) { write(os, baseline); });
  }
};

/// What a report page shows of a training step: its plan's memory report (IPU 0's tiles over
/// the step's forward, recompute, backward and update steps) and a training profile, the cycle
/// model's with the host times a trainer measured (or none, for a plan alone). The execution
/// view shows the phases and, for a pipeline or gradient accumulation, each stage's timeline
/// over a window of micro-batches.
struct training_html_report {
  std::string title;                 ///< the page's heading
  training_memory_report_t memory;   ///< the training plan's memory, per tile and step
  training_profile profile;          ///< cycles per step, and host times if steps ran

  /// Writes the page; with `baseline`, the page also compares this report with it side by side.
  void write(std::ostream& os, const training_html_report* baseline = nullptr) const;
  /// Writes the page to `path`; throws `std::runtime_error` if it cannot.
  void write(const std::string& path, const training_html_report* baseline = nullptr) const {
    detail::write_file(path, "ipu::html_report", [&](std::ostream& os) { write(os, baseline); });
  }
};

/// The report of graph `G` on `T` with `Opts`: its plan's memory report and `p`, the profile
/// of an engine running it (`engine::profile()`), with the host times it measured.
template <Graph G, Target T, options Opts = options{}>
html_report make_html_report(std::string title, const profile& p) {
  return {std::move(title), memory_report<G, T, Opts>(), p};
}

/// The report of graph `G` on `T` with `Opts` from its plan alone: the cycle model's profile,
/// without measured times.
template <Graph G, Target T, options Opts = options{}>
html_report make_html_report(std::string title) {
  return {std::move(title), memory_report<G, T, Opts>(), plan_profile<G, T, Opts>()};
}

/// The report of a training step, `ipu::training<G, TrainOpts>`, on `T` with `Opts`: its
/// plan's memory report and `p`, a trainer's profile (`trainer::profile()`).
template <class Training, Target T, options Opts = options{}>
  requires detail::is_training_spec<Training>::value
training_html_report make_html_report(std::string title, const training_profile& p) {
  return {std::move(title), memory_report<Training, T, Opts>(), p};
}

/// The report of a training step on `T` with `Opts` from its plan alone, without measured times.
template <class Training, Target T, options Opts = options{}>
  requires detail::is_training_spec<Training>::value
training_html_report make_html_report(std::string title) {
  return {std::move(title), memory_report<Training, T, Opts>(), training_profile(plan_v<Training, T, Opts>, T::name)};
}

namespace detail {

/// Writes `bytes` as base64 (RFC 4648, section 4, with padding).
inline void write_base64(std::ostream& os, std::string_view bytes) {
  constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  const auto at = [&](std::size_t i) { return i < bytes.size() ? static_cast<unsigned char>(bytes[i]) : 0u; };
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const unsigned v = at(i) << 16 | at(i + 1) << 8 | at(i + 2);
    out += alphabet[v >> 18 & 63];
    out += alphabet[v >> 12 & 63];
    out += i + 1 < bytes.size() ? alphabet[v >> 6 & 63] : '=';
    out += i + 2 < bytes.size() ? alphabet[v & 63] : '=';
  }
  os << out;
}

/// The largest count of `unit` bytes a 16-bit tile cell holds.
inline constexpr std::int64_t html_cell_max = 0xffff;

/// Writes `"tile_steps": {"unit", "ipus": [{"rows", "steps"}, ...]}`: for each IPU, every tile's
/// bytes at every step, `cells[ipu][step * tiles + tile]`, as 16-bit counts of `unit` bytes,
/// rounded up; `unit` is the smallest power of two that keeps every count within
/// `html_cell_max`. A step's counts over the tiles are a row; an IPU's distinct rows, in the
/// order they first appear, are `"rows"` (base64 of little-endian counts), and `"steps"` gives
/// each step's row: many steps leave every tile as an earlier step did (ResNeXt-101: 76
/// distinct rows in 345 steps).
inline void write_html_cells(std::ostream& os, int tiles, const std::vector<const std::vector<std::int64_t>*>& cells) {
  std::int64_t most = 0;
  for (const std::vector<std::int64_t>* c : cells)
    for (const std::int64_t b : *c) most = std::max(most, b);
  std::int64_t unit = 1;
  while ((most + unit - 1) / unit > html_cell_max) unit *= 2;
  const auto width = static_cast<std::size_t>(tiles);
  os << "\"tile_steps\": {\"unit\": " << unit << ", \"ipus\": [";
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::vector<std::int64_t>& bytes = *cells[i];
    std::unordered_map<std::string, int> row_of;
    std::string rows, row(2 * width, '\0');
    std::vector<int> steps;
    for (std::size_t at = 0; at + width <= bytes.size(); at += width) {
      for (std::size_t t = 0; t < width; ++t) {
        const auto count = static_cast<std::uint16_t>((bytes[at + t] + unit - 1) / unit);
        row[2 * t] = static_cast<char>(count & 0xff);
        row[2 * t + 1] = static_cast<char>(count >> 8);
      }
      const auto [it, added] = row_of.try_emplace(row, static_cast<int>(row_of.size()));
      if (added) rows += row;
      steps.push_back(it->second);
    }
    os << (i ? ", " : "") << "{\"rows\": \"";
    write_base64(os, rows);
    os << "\", \"steps\": [";
    for (std::size_t k = 0; k < steps.size(); ++k) os << (k ? "," : "") << steps[k];
    os << "]}";
  }
  os << "]}";
}

/// Every IPU's tiles at every step of memory report `m`.
inline std::vector<const std::vector<std::int64_t>*> html_cells(const memory_report_t& m) {
  std::vector<const std::vector<std::int64_t>*> cells;
  for (const memory_report_t::ipu_report& i : m.ipus) cells.push_back(&i.step_tiles);
  return cells;
}
/// IPU 0's tiles at every step of training memory report `m`.
inline std::vector<const std::vector<std::int64_t>*> html_cells(const training_memory_report_t& m) { return {&m.step_tiles}; }

/// Writes one run of the page's data: `{"kind": "inference" or "training", "name", "memory",
/// "profile", "tile_steps"}`.
template <class Report>
void write_html_run(std::ostream& os, const Report& r) {
  constexpr bool training = std::is_same_v<Report, training_html_report>;
  os << "{\"kind\": \"" << (training ? "training" : "inference") << "\", \"name\": " << json_string{r.title}
     << ",\n\"memory\": ";
  r.memory.write_json(os);
  os << ",\n\"profile\": ";
  r.profile.write_json(os);
  os << ",\n";
  write_html_cells(os, r.memory.chip.tiles, html_cells(r.memory));
  os << '}';
}

/// Writes the page of `report`, compared with `baseline` if not null.
template <class Report>
void write_html_page(std::ostream& os, const Report& report, const Report* baseline) {
  std::ostringstream data;
  data << "{\"generator\": \"ipu " << version << "\", \"runs\": [";
  write_html_run(data, report);
  if (baseline != nullptr) {
    data << ",\n";
    write_html_run(data, *baseline);
  }
  data << "]}";
  // `<` appears in JSON only inside strings, where `\u003c` stands for it.
  const std::string json = std::move(data).str();
  std::string escaped;
  escaped.reserve(json.size());
  for (const char c : json) {
    if (c == '<') escaped += "\\u003c";
    else escaped += c;
  }
  std::string heading;
  for (const char c : report.title) {
    switch (c) {
      case '<': heading += "&lt;"; break;
      case '>': heading += "&gt;"; break;
      case '&': heading += "&amp;"; break;
      default: heading += c;
    }
  }
  os << html_page::head << heading << html_page::style << "<script type=\"application/json\" id=\"ipu-data\">" << escaped
     << "</script>\n" << html_page::script << html_page::tail;
}

}  // namespace detail

inline void html_report::write(std::ostream& os, const html_report* baseline) const {
  detail::write_html_page(os, *this, baseline);
}

inline void training_html_report::write(std::ostream& os, const training_html_report* baseline) const {
  detail::write_html_page(os, *this, baseline);
}

}  // namespace ipu
