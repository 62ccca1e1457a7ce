// Compile-time benchmark: the umbrella header alone, as every user's first line.
// Compiled, never run.
#include <ipu/ipu.hpp>

int main() { return 0; }
