#!/usr/bin/env bash
# The pipelined training table of docs/scaling.md: compiles fit.cpp for ResNeXt-101 32x4d over
# 1, 2 and 4 Mk2s, at micro-batches 2 to 16, with each schedule (one IPU: sequential), and
# prints a Markdown row per configuration: IPUs, schedule, micro-batch, whether every IPU fits,
# the fullest tile's bytes and its IPU, the simulated images per second and the share of the
# window in the ramps. Each row is a compile of 20 to 40 s and about 1 GiB; all 28, 14 minutes.
# Usage: benchmarks/pipeline/run.sh [compiler]   (default g++-12)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cxx=${1:-g++-12}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
case "$cxx" in  # the constexpr limits the CMake package sets
  clang*) limits=(-fconstexpr-steps=16777216) ;;
  *) limits=(-fconstexpr-ops-limit=4294967296) ;;
esac
echo "| IPUs | schedule | micro-batch | fits | fullest tile, bytes | images/s | ramps |"
echo "|---:|---|---:|---|---:|---:|---:|"
for stages in 1 2 4; do
  schedules=(0 1 2)
  [ "$stages" = 1 ] && schedules=(0)
  for schedule in "${schedules[@]}"; do
    for micro in 2 4 8 16; do
      "$cxx" -std=c++20 -O1 "${limits[@]}" -I"$root/include" -DIPU_STAGES="$stages" -DIPU_MICRO="$micro" \
        -DIPU_SCHEDULE="$schedule" "$here/fit.cpp" -o "$out/fit"
      "$out/fit"
    done
  done
done
