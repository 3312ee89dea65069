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

# shellcheck source=scripts/podman-env.sh
. "$repo/scripts/podman-env.sh"
ensure_podman test-runtime-image
want=$(scripts/build-runtime-base.sh --recipe-hash)
have=$(podman image inspect --format '{{index .Labels "resumable.base-recipe"}}' "$base" 2>/dev/null || true)
if [ "$want" != "$have" ]; then
  step scripts/build-runtime-base.sh "$base"
fi
step env RESUMABLE_IMAGE_TEST=1 .venv/bin/python -m pytest -q -p no:cacheprovider tests/runtime/test_image.py "$@"
