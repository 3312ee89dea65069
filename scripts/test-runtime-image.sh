#!/bin/bash
# Runtime image part of `make test`: build images/runtime/Dockerfile with podman on a local base image
# and check it (tests/runtime/test_image.py). Does its own set-up on a fresh Debian 12 machine (as
# root): podman/runc/debootstrap through apt, the node image and the runtime base image when missing
# or when the base recipe (images/runtime-base/) changed. Uses the venv in .venv.
#   usage: scripts/test-runtime-image.sh [PYTEST ARGS...]
set -euo pipefail
repo=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
cd "$repo"
export CONTAINERS_CONF=$repo/podman/containers.conf
base=localhost/resumable-runtime-base:latest

step() { local t0=$SECONDS; echo "=== $*" >&2; "$@"; echo "=== done in $((SECONDS - t0)) s: $*" >&2; }

need_pkgs=()
command -v podman >/dev/null || need_pkgs+=(podman)
command -v runc >/dev/null || need_pkgs+=(runc)
command -v debootstrap >/dev/null || need_pkgs+=(debootstrap)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "test-runtime-image: ${need_pkgs[*]} missing; run as root (apt-get install -y ${need_pkgs[*]})" >&2
    exit 1
  fi
  # keep Recommends: catatonit and netavark come with podman
  step apt-get update -q
  step env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need_pkgs[@]}"
fi
want=$(scripts/build-runtime-base.sh --recipe-hash)
have=$(podman image inspect --format '{{index .Labels "resumable.base-recipe"}}' "$base" 2>/dev/null || true)
if [ "$want" != "$have" ]; then
  step scripts/build-runtime-base.sh "$base"
fi
step env RESUMABLE_IMAGE_TEST=1 .venv/bin/python -m pytest -q -p no:cacheprovider tests/runtime/test_image.py "$@"
