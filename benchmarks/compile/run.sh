#!/usr/bin/env bash
# Compile-time benchmark: compiles each translation unit here with g++-12 and clang++-16 and
# prints wall time and peak memory (GNU time). Usage: benchmarks/compile/run.sh [repeats]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
repeats=${1:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags=(-std=c++20 -O0 -c -I"$root/include" -Wall -Wextra -Wpedantic -Werror)

printf '%-28s %-12s %10s %12s\n' "translation unit" compiler "wall s" "peak MiB"
for tu in "$here"/*.cpp; do
  for cxx in g++-12 clang++-16; do
    command -v "$cxx" >/dev/null || { echo "$cxx not found, skipped"; continue; }
    best_wall=""; best_mem=""
    for _ in $(seq "$repeats"); do
      /usr/bin/time -v "$cxx" "${flags[@]}" "$tu" -o "$out/tu.o" 2>"$out/time.txt" >/dev/null ||
        { cat "$out/time.txt"; exit 1; }
      wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,p,":"); s=0; for(i=1;i<=n;i++) s=s*60+p[i]; print s}' "$out/time.txt")
      mem=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$out/time.txt")
      if [ -z "$best_wall" ] || awk -v a="$wall" -v b="$best_wall" 'BEGIN{exit !(a<b)}'; then best_wall=$wall; best_mem=$mem; fi
    done
    printf '%-28s %-12s %10.2f %12s\n' "$(basename "$tu")" "$cxx" "$best_wall" "$best_mem"
  done
done
