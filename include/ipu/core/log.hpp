#pragma once
/// \file
/// Logging, the counterpart of Poplar's `POPLAR_LOG_LEVEL` and `POPLAR_LOG_DEST` (seed 004,
/// section 3.2): `IPU_LOG_LEVEL` chooses what the library reports, `IPU_LOG_DEST` where.
///
///   - `err`: errors the library recovers from or reports elsewhere too;
///   - `warn`: what deserves a look: tiles above 90% of their memory when an engine or a
///     trainer is built, a training step skipped for an f16 overflow, an infeed that ran dry;
///   - `info`: the plan's summary when an engine or a trainer is built, and each `run` of an
///     engine over its feeds;
///   - `debug`: a line per step: each layer's host time for each batch an engine runs, and each
///     training step's loss, learning rate and loss scale;
///   - `trace`: as `debug`; reserved for finer detail.
///
/// Each level includes those above it. Unset or `off`, nothing is logged, and a call costs a
/// test of the level (a relaxed atomic load): the message is not formatted. The names are read
/// case-insensitively; an unknown one is reported once on standard error and logs nothing.
/// `IPU_LOG_DEST` is `stderr` (the default), `stdout`, or a file, appended to. A line reads
///
///     14:03:07.412 ipu:engine [I] mk2, 1 IPU: 14 layers, fast mode, 2 threads; ...
///
/// (UTC, then the component and the level's letter). `ipu::logging::set_level` and
/// `set_sink` override both variables from the program, e.g. in a test.

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>

namespace ipu {

/// How much the library logs (see the file comment): each level includes those before it.
enum class log_level : std::uint8_t { off, err, warn, info, debug, trace };

/// `"off"`, `"err"`, `"warn"`, `"info"`, `"debug"` or `"trace"`.
constexpr std::string_view name_of(log_level l) noexcept {
  constexpr std::string_view names[] = {"off", "err", "warn", "info", "debug", "trace"};
  return names[static_cast<int>(l)];
}

/// The level named `s`, in any case (`"WARN"`, `"warn"`); `std::nullopt` for another name.
constexpr std::optional<log_level> parse_log_level(std::string_view s) noexcept {
  for (int l = 0; l <= static_cast<int>(log_level::trace); ++l) {
    const std::string_view name = name_of(static_cast<log_level>(l));
    if (s.size() == name.size() && std::equal(s.begin(), s.end(), name.begin(), [](char a, char b) {
          return (a >= 'A' && a <= 'Z' ? static_cast<char>(a - 'A' + 'a') : a) == b;
        }))
      return static_cast<log_level>(l);
  }
  return std::nullopt;
}

namespace detail {

/// The logger's state, made on first use from the environment.
class logger {
 public:
  static logger& instance() {
    static logger l;
    return l;
  }
  log_level threshold() const noexcept { return threshold_.load(std::memory_order_relaxed); }
  void set_threshold(log_level l) noexcept { threshold_.store(l, std::memory_order_relaxed); }
  void set_sink(std::ostream* os) {
    const std::lock_guard lock(m_);
    sink_ = os;
  }
  void emit(const std::string& line) {
    const std::lock_guard lock(m_);
    std::ostream& os = sink_ ? *sink_ : *destination_;
    os << line << std::flush;
  }

 private:
  logger() {
    const char* level = std::getenv("IPU_LOG_LEVEL");
    const std::optional<log_level> parsed = level ? parse_log_level(level) : std::optional{log_level::off};
    if (!parsed)
      std::fprintf(stderr, "ipu: IPU_LOG_LEVEL=%s is not a level (off, err, warn, info, debug, trace); nothing is logged\n", level);
    threshold_.store(parsed.value_or(log_level::off), std::memory_order_relaxed);
    const char* dest = std::getenv("IPU_LOG_DEST");
    const std::string_view d = dest ? dest : "stderr";
    if (d == "stdout") {
      destination_ = &std::cout;
    } else if (d != "stderr") {
      file_.open(std::string(d), std::ios::app);
      if (file_) destination_ = &file_;
      else std::fprintf(stderr, "ipu: cannot open IPU_LOG_DEST=%s; logging to standard error\n", dest);
    }
  }

  std::atomic<log_level> threshold_{log_level::off};
  std::mutex m_;
  std::ostream* sink_ = nullptr;              // set_sink's; null: the destination
  std::ostream* destination_ = &std::clog;    // IPU_LOG_DEST's
  std::ofstream file_;
};

}  // namespace detail

/// Logging: the level's test and the writers (see the file comment).
namespace logging {

/// The level logged now: `IPU_LOG_LEVEL`'s, or `set_level`'s.
inline log_level level() noexcept { return detail::logger::instance().threshold(); }
/// Logs `l` and the levels before it from now on, whatever `IPU_LOG_LEVEL` says.
inline void set_level(log_level l) noexcept { detail::logger::instance().set_threshold(l); }
/// Whether a message of level `l` is logged: test it before building an expensive message.
inline bool enabled(log_level l) noexcept { return l != log_level::off && l <= level(); }
/// Writes the lines to `os` from now on, instead of `IPU_LOG_DEST`; null goes back to it. `os`
/// must outlive its use; the lines are written one at a time, under a lock.
inline void set_sink(std::ostream* os) { detail::logger::instance().set_sink(os); }

/// Logs the values `parts`, written with `<<`, as one line of level `l` from `component` (e.g.
/// `"engine"`), if `l` is enabled.
template <class... Parts>
void write(log_level l, std::string_view component, const Parts&... parts) {
  if (!enabled(l)) return;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now).count() % (24 * 3600 * 1000);
  std::ostringstream line;
  line << std::setfill('0') << std::setw(2) << ms / 3'600'000 << ':' << std::setw(2) << ms / 60'000 % 60 << ':'
       << std::setw(2) << ms / 1000 % 60 << '.' << std::setw(3) << ms % 1000 << std::setfill(' ') << " ipu:" << component
       << " [" << static_cast<char>(std::toupper(static_cast<unsigned char>(name_of(l)[0]))) << "] ";
  (line << ... << parts);
  line << '\n';
  detail::logger::instance().emit(line.str());
}
/// `write(log_level::err, ...)`.
template <class... Parts>
void err(std::string_view component, const Parts&... parts) {
  write(log_level::err, component, parts...);
}
/// `write(log_level::warn, ...)`.
template <class... Parts>
void warn(std::string_view component, const Parts&... parts) {
  write(log_level::warn, component, parts...);
}
/// `write(log_level::info, ...)`.
template <class... Parts>
void info(std::string_view component, const Parts&... parts) {
  write(log_level::info, component, parts...);
}
/// `write(log_level::debug, ...)`.
template <class... Parts>
void debug(std::string_view component, const Parts&... parts) {
  write(log_level::debug, component, parts...);
}
/// `write(log_level::trace, ...)`.
template <class... Parts>
void trace(std::string_view component, const Parts&... parts) {
  write(log_level::trace, component, parts...);
}

}  // namespace logging

}  // namespace ipu
