#!/usr/bin/env bash
# Compile-time benchmark: compiles each translation unit here with g++-12 and clang++-16, with
# the limits on constant evaluation that the ipu::ipu CMake target sets, and prints wall time
# and peak memory (GNU time). Usage: benchmarks/compile/run.sh [repeats]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
repeats=${1:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# shellcheck source=common.sh
source "$here/common.sh"

printf '%-28s %-12s %10s %12s\n' "translation unit" compiler "wall s" "peak MiB"
for tu in "$here"/*.cpp; do
  [ "$(basename "$tu")" = by_size.cpp ] && continue  # sizes.sh's, which names a model
  for cxx in g++-12 clang++-16; do
    command -v "$cxx" >/dev/null || { echo "$cxx not found, skipped"; continue; }
    read -r wall mem < <(best_compile "$repeats" "$cxx" "$out/tu.o" -c "$tu")
    printf '%-28s %-12s %10.2f %12s\n' "$(basename "$tu")" "$cxx" "$wall" "$mem"
  done
done
