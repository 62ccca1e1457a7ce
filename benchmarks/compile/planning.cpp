// Compile-time benchmark: the planning header alone, as a translation unit that only proves
// fit includes it. Compiled, never run.
#include <ipu/planning.hpp>

int main() { return 0; }
