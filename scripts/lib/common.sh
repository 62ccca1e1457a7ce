# shellcheck shell=bash
# Shared by the scripts in scripts/. Source it; do not run it.

# ipu_repo_root: the top of the source tree (the parent of scripts/).
ipu_repo_root() {
  local here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  (cd "$here/../.." && pwd)
}

# ipu_ensure_packages pkg...: install the Debian packages that are not installed yet.
# Runs `apt-get update` and `apt-get install` only when something is missing, through sudo
# when not root.
ipu_ensure_packages() {
  local missing=() pkg
  for pkg in "$@"; do
    if ! dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed'; then
      missing+=("$pkg")
    fi
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    return 0
  fi
  echo "== installing missing packages: ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      echo "error: not root and no sudo; please install: ${missing[*]}" >&2
      return 1
    fi
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
}

# ipu_jobs: how many parallel jobs to use.
ipu_jobs() {
  nproc 2>/dev/null || echo 2
}
