#!/usr/bin/env bash
# Compile time against graph size: compiles benchmarks/compile/by_size.cpp for each model of the
# zoo below (planned and fit-checked for one Mk2; two of them as training steps) and the
# umbrella header alone, with g++-12 and clang++-16 at -O0 as run.sh does (with the limits on
# constant evaluation that the ipu::ipu CMake target sets), and writes the best
# wall time and peak memory of REPEATS compiles (default 3) of each as JSON, with each graph's
# node and step counts:
#   benchmarks/compile/sizes.sh [--repeats N] [--out FILE]   (default FILE: stdout)
# scripts/run-benchmarks runs it and scripts/performance-report makes its table and chart.
# The times are wall-clock: run it on an otherwise idle machine.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
repeats=3
out_file=""
while [ "$#" -gt 0 ]; do
  case "$1" in
    --repeats) repeats=$2; shift 2 ;;
    --out) out_file=$2; shift 2 ;;
    *) echo "usage: $0 [--repeats N] [--out FILE]" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(-std=c++20 -O0 -I"$root/include" -Wall -Wextra -Wpedantic -Werror)
compilers=(g++-12 clang++-16)
# The constant-evaluation limits that the ipu::ipu CMake target gives its users (CMakeLists.txt).
limits() {
  case $1 in
    clang*) echo -fconstexpr-steps=16777216 ;;
    *) echo -fconstexpr-ops-limit=4294967296 ;;
  esac
}

# label | kind | type
models=(
  "ResNet-18|inference|ipu::models::resnet18<ipu::f16, 4>"
  "ResNet-34|inference|ipu::models::resnet34<ipu::f16, 4>"
  "MobileNetV2|inference|ipu::models::mobilenet_v2<ipu::f16, 4>"
  "ResNet-50|inference|ipu::models::resnet50<ipu::f16, 4>"
  "ResNeXt-50 32x4d|inference|ipu::models::resnext50_32x4d<ipu::f16, 4>"
  "EfficientNet-B0|inference|ipu::models::efficientnet_b0<ipu::f16, 4>"
  "ResNet-101|inference|ipu::models::resnet101<ipu::f16, 4>"
  "ResNeXt-101 32x4d (the seed's)|inference|ipu::models::resnext<ipu::f16, 4, 101, 32, 4, 4, 1000, 224, ipu::models::stride_at::first_conv>"
  "ResNet-152|inference|ipu::models::resnet152<ipu::f16, 4>"
  "ResNet-18|training|ipu::models::resnet18<ipu::f16, 4>"
  "ResNet-50|training|ipu::models::resnet50<ipu::f16, 4>"
)

# best <compiler> <output> <args...>: compiles `repeats` times; prints "seconds MiB" of the fastest.
best() {
  local cxx=$1 output=$2
  shift 2
  local best_wall="" best_mem="" wall mem
  for _ in $(seq "$repeats"); do
    /usr/bin/time -v "$cxx" "${flags[@]}" "$(limits "$cxx")" "$@" -o "$output" 2>"$work/time.txt" >/dev/null ||
      { cat "$work/time.txt" >&2; exit 1; }
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,p,":"); s=0; for(i=1;i<=n;i++) s=s*60+p[i]; print s}' "$work/time.txt")
    mem=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$work/time.txt")
    if [ -z "$best_wall" ] || awk -v a="$wall" -v b="$best_wall" 'BEGIN{exit !(a<b)}'; then best_wall=$wall; best_mem=$mem; fi
  done
  echo "$best_wall $best_mem"
}

rows=()
# The umbrella header alone: what every user's first line costs.
line="{\"label\": \"#include <ipu/ipu.hpp>\", \"kind\": \"header\", \"nodes\": 0, \"steps\": 0, \"fits\": null"
for cxx in "${compilers[@]}"; do
  read -r wall mem < <(best "$cxx" "$work/tu.o" -c "$here/umbrella.cpp")
  line+=", \"$cxx\": {\"seconds\": $wall, \"mib\": $mem}"
  echo "umbrella header, $cxx: $wall s, $mem MiB" >&2
done
rows+=("$line}")
for entry in "${models[@]}"; do
  IFS='|' read -r label kind type <<<"$entry"
  defines=("-DIPU_BENCH_MODEL=$type")
  [ "$kind" = training ] && defines+=(-DIPU_BENCH_TRAINING)
  # The counts, from a program built once.
  g++-12 "${flags[@]}" "$(limits g++-12)" "${defines[@]}" "$here/by_size.cpp" -o "$work/count"
  read -r nodes steps fits < <("$work/count")
  line="{\"label\": \"$label\", \"kind\": \"$kind\", \"nodes\": $nodes, \"steps\": $steps, \"fits\": $([ "$fits" = 1 ] && echo true || echo false)"
  for cxx in "${compilers[@]}"; do
    read -r wall mem < <(best "$cxx" "$work/tu.o" -c "${defines[@]}" "$here/by_size.cpp")
    line+=", \"$cxx\": {\"seconds\": $wall, \"mib\": $mem}"
    echo "$label ($kind, $nodes nodes, $steps steps), $cxx: $wall s, $mem MiB" >&2
  done
  rows+=("$line}")
done

{
  printf '{"context": {"date": "%s", "cpu": "%s", "cpus": %s, "load_average": "%s", "flags": "%s",\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%S+00:00)" "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)" "$(nproc)" \
    "$(cut -d' ' -f1-3 /proc/loadavg)" "${flags[*]//$root\//} and the ipu target's constant-evaluation limits"
  printf '  "compilers": {"g++-12": "%s", "clang++-16": "%s"}, "repeats": %s},\n' \
    "$(g++-12 -dumpfullversion)" "$(clang++-16 -dumpversion)" "$repeats"
  printf ' "rows": [\n'
  for i in "${!rows[@]}"; do printf '  %s%s\n' "${rows[$i]}" "$([ "$i" -lt $((${#rows[@]} - 1)) ] && echo ,)"; done
  printf ']}\n'
} > "$work/out.json"
if [ -n "$out_file" ]; then cp "$work/out.json" "$out_file"; else cat "$work/out.json"; fi
