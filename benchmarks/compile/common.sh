# Sourced by run.sh and sizes.sh (with `root` set to the repository): the compile flags, the
# limits on constant evaluation that the ipu::ipu CMake target gives its users
# (CMakeLists.txt), and the timing of a compile.
compile_flags=(-std=c++20 -O0 -I"$root/include" -Wall -Wextra -Wpedantic -Werror)

# limits <compiler>: the ipu target's constant-evaluation limit for that compiler.
limits() {
  case $1 in
    clang*) echo -fconstexpr-steps=16777216 ;;
    *) echo -fconstexpr-ops-limit=4294967296 ;;
  esac
}

# best_compile <repeats> <compiler> <output> <args...>: compiles `repeats` times with the flags
# and limits above (GNU time); prints "seconds MiB" of the fastest. Exits on a failed compile,
# with its messages.
best_compile() {
  local repeats=$1 cxx=$2 output=$3
  shift 3
  local log best_wall="" best_mem="" wall mem
  log=$(mktemp)
  for _ in $(seq "$repeats"); do
    /usr/bin/time -v "$cxx" "${compile_flags[@]}" "$(limits "$cxx")" "$@" -o "$output" 2>"$log" >/dev/null ||
      { cat "$log" >&2; rm -f "$log"; exit 1; }
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,p,":"); s=0; for(i=1;i<=n;i++) s=s*60+p[i]; print s}' "$log")
    mem=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$log")
    if [ -z "$best_wall" ] || awk -v a="$wall" -v b="$best_wall" 'BEGIN{exit !(a<b)}'; then best_wall=$wall; best_mem=$mem; fi
  done
  rm -f "$log"
  echo "$best_wall $best_mem"
}
