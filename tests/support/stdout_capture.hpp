#pragma once
// Runs a documentation example's `main` and returns what it wrote to std::cout.

#include <iostream>
#include <sstream>
#include <string>

namespace ipu_test {

/// What `program()` printed on std::cout; `exit_code` receives its return value.
template <class Program>
std::string stdout_of(Program program, int& exit_code) {
  std::ostringstream captured;
  std::streambuf* const original = std::cout.rdbuf(captured.rdbuf());
  struct restore {
    std::streambuf* buffer;
    ~restore() { std::cout.rdbuf(buffer); }
  } const guard{original};
  exit_code = program();
  return captured.str();
}

}  // namespace ipu_test
