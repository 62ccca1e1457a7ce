#pragma once
/// \file
/// Keeps a stream's formatting as the caller set it while one of ipu's printers formats numbers
/// its own way (the summary, the profile and its JSON).

#include <ios>

namespace ipu::detail {

/// Saves a stream's format flags and precision, and restores them when destroyed: printing an
/// ipu object leaves `std::cout` as it was.
class stream_state {
 public:
  explicit stream_state(std::ios_base& stream) noexcept
      : stream_(stream), flags_(stream.flags()), precision_(stream.precision()) {}
  stream_state(const stream_state&) = delete;
  stream_state& operator=(const stream_state&) = delete;
  ~stream_state() {
    stream_.flags(flags_);
    stream_.precision(precision_);
  }

 private:
  std::ios_base& stream_;
  std::ios_base::fmtflags flags_;
  std::streamsize precision_;
};

}  // namespace ipu::detail
