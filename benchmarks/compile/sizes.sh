#!/usr/bin/env bash
# Compile time against graph size: compiles benchmarks/compile/by_size.cpp for each model of the
# zoo below (planned and fit-checked for one Mk2 through <ipu/planning.hpp>; two of them as
# training steps), and the umbrella header <ipu/ipu.hpp> and <ipu/planning.hpp> alone, with
# g++-12 and clang++-16 at -O0 as run.sh does (with the limits on constant evaluation that the
# ipu::ipu CMake target sets), and writes the best wall time and peak memory of REPEATS
# compiles (default 3) of each as JSON, with each graph's node and step counts:
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
# shellcheck source=common.sh
source "$here/common.sh"
compilers=(g++-12 clang++-16)

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

rows=()
# The standard library's headers that the umbrella includes (all of them, as the preprocessor
# finds them), alone: the part of the umbrella's time that is not the library's.
g++-12 "${compile_flags[@]}" -M "$here/umbrella.cpp" | tr ' \\' '\n\n' |
  sed -nE 's|^/usr/include/c\+\+/[0-9]+/([a-z_]+)$|#include <\1>|p' | sort -u >"$work/standard.cpp"
[ -s "$work/standard.cpp" ] || { echo "sizes.sh: found no standard header in g++'s dependencies of umbrella.cpp" >&2; exit 1; }
# The headers alone: the umbrella, what a user's first line costs, and the planning header,
# which by_size.cpp includes ("under_plans").
for entry in "$here/umbrella.cpp|#include <ipu/ipu.hpp>|false|header" "$here/planning.cpp|#include <ipu/planning.hpp>|true|header" \
  "$work/standard.cpp|the umbrella's standard headers|false|standard"; do
  IFS='|' read -r tu label under_plans kind <<<"$entry"
  line="{\"label\": \"$label\", \"kind\": \"$kind\", \"under_plans\": $under_plans, \"nodes\": 0, \"steps\": 0, \"fits\": null"
  for cxx in "${compilers[@]}"; do
    read -r wall mem < <(best_compile "$repeats" "$cxx" "$work/tu.o" -c "$tu")
    line+=", \"$cxx\": {\"seconds\": $wall, \"mib\": $mem}"
    echo "$label, $cxx: $wall s, $mem MiB" >&2
  done
  rows+=("$line}")
done
for entry in "${models[@]}"; do
  IFS='|' read -r label kind type <<<"$entry"
  defines=("-DIPU_BENCH_MODEL=$type")
  [ "$kind" = training ] && defines+=(-DIPU_BENCH_TRAINING)
  # The counts, from a program built once.
  g++-12 "${compile_flags[@]}" "$(limits g++-12)" "${defines[@]}" "$here/by_size.cpp" -o "$work/count"
  read -r nodes steps fits < <("$work/count")
  line="{\"label\": \"$label\", \"kind\": \"$kind\", \"nodes\": $nodes, \"steps\": $steps, \"fits\": $([ "$fits" = 1 ] && echo true || echo false)"
  for cxx in "${compilers[@]}"; do
    read -r wall mem < <(best_compile "$repeats" "$cxx" "$work/tu.o" -c "${defines[@]}" "$here/by_size.cpp")
    line+=", \"$cxx\": {\"seconds\": $wall, \"mib\": $mem}"
    echo "$label ($kind, $nodes nodes, $steps steps), $cxx: $wall s, $mem MiB" >&2
  done
  rows+=("$line}")
done

{
  printf '{"context": {"date": "%s", "cpu": "%s", "cpus": %s, "load_average": "%s", "flags": "%s",\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%S+00:00)" "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)" "$(nproc)" \
    "$(cut -d' ' -f1-3 /proc/loadavg)" "${compile_flags[*]//$root\//} and the ipu target's constant-evaluation limits"
  printf '  "compilers": {"g++-12": "%s", "clang++-16": "%s"}, "repeats": %s},\n' \
    "$(g++-12 -dumpfullversion)" "$(clang++-16 -dumpversion)" "$repeats"
  printf ' "rows": [\n'
  for i in "${!rows[@]}"; do printf '  %s%s\n' "${rows[$i]}" "$([ "$i" -lt $((${#rows[@]} - 1)) ] && echo ,)"; done
  printf ']}\n'
} > "$work/out.json"
if [ -n "$out_file" ]; then cp "$work/out.json" "$out_file"; else cat "$work/out.json"; fi
