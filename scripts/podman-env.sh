# Sourced by the test scripts that run containers (test-ansible.sh, test-runtime-image.sh):
# the timed `step` wrapper and the podman set-up on a fresh Debian 12 machine (apt, as root).
# podman/runc/debootstrap come from apt with their Recommends (catatonit for --init, netavark).

# Keeps the command's exit status: a caller under `if !` has `set -e` off, so a step that only
# echoed its timing would report every failure (a failed molecule scenario) as a success.
step() {
  local t0=$SECONDS rc=0
  echo "=== $*" >&2
  "$@" || rc=$?
  echo "=== done in $((SECONDS - t0)) s (exit $rc): $*" >&2
  return "$rc"
}

# ensure_podman WHO: install podman, runc and debootstrap when one is missing; WHO names the caller
# in the message when they are missing and we are not root.
ensure_podman() {
  local need_pkgs=()
  command -v podman >/dev/null || need_pkgs+=(podman)
  command -v runc >/dev/null || need_pkgs+=(runc)
  command -v debootstrap >/dev/null || need_pkgs+=(debootstrap)
  [ ${#need_pkgs[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ]; then
    echo "$1: ${need_pkgs[*]} missing; run as root (apt-get install -y ${need_pkgs[*]})" >&2
    return 1
  fi
  step apt-get update -q
  step env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need_pkgs[@]}"
}
