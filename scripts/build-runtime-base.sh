#!/bin/bash
# Build the local base image the runtime image test builds images/runtime/Dockerfile on:
# the molecule node image (Debian 12 from debootstrap, built here when missing) plus a virtualenv
# with the real torch 2.13.0 CPU wheel (from pip's cache or this machine's wheel directory),
# PyYAML, grpcio and protobuf. The image build itself has no network.
#   usage (root): scripts/build-runtime-base.sh [TAG]     default TAG localhost/resumable-runtime-base:latest
#                 scripts/build-runtime-base.sh --recipe-hash   prints the hash the image is labelled with
#   PYTHON=...   the Python whose pip downloads the wheels (default .venv/bin/python; must be 3.11,
#                the Python of Debian 12, so the cp311 wheels fit)
set -euo pipefail
repo=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
export CONTAINERS_CONF=${CONTAINERS_CONF:-$repo/podman/containers.conf}
tag=${1:-localhost/resumable-runtime-base:latest}
[ "$tag" = "--recipe-hash" ] && tag=localhost/resumable-runtime-base:latest
node=localhost/ascend-node-deb12:latest
python=${PYTHON:-$repo/.venv/bin/python}

recipe_hash() { cat "$repo/images/runtime-base/Containerfile" "$repo/images/runtime-base/requirements.txt" | sha256sum | cut -c1-16; }
if [ "${1:-}" = "--recipe-hash" ]; then recipe_hash; exit 0; fi

"$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || {
  echo "build-runtime-base: $python is not Python 3.11 (Debian 12's), so its wheels would not fit" >&2; exit 1; }
podman image exists "$node" || "$repo/scripts/build-node-image.sh" "$node"
ctx=$(mktemp -d /var/tmp/resumable-runtime-base.XXXXXX)
trap 'rm -rf "$ctx"' EXIT
"$python" -m pip download --quiet --only-binary=:all: --dest "$ctx/wheels" pip -r "$repo/images/runtime-base/requirements.txt" \
  2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
cp "$repo/images/runtime-base/Containerfile" "$repo/images/runtime-base/requirements.txt" "$ctx/"
old=$(podman image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
# the label lets scripts/test-runtime-image.sh rebuild the base only when its recipe changed
podman build --network=none --layers=false --build-arg NODE_IMAGE="$node" \
  --label "resumable.base-recipe=$(recipe_hash)" -t "$tag" "$ctx"
new=$(podman image inspect --format '{{.Id}}' "$tag")
# the image this replaced is ours and now untagged: remove it unless something still uses it
if [ -n "$old" ] && [ "$old" != "$new" ]; then podman rmi "$old" >/dev/null 2>&1 || true; fi
podman image inspect --format '{{.Id}} {{.Size}}' "$tag"
