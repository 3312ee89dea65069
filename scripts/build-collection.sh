#!/bin/bash
# Build the Ansible collection ascend_resumable.npu as a Galaxy tarball that stands alone: the resumable
# wheel of this checkout (pip wheel, the project's own build backend) goes into the collection's
# roles/resumable_install/files/wheel/ with its sha256, where the role takes it from (checked like a
# vendor package); the same wheel and its .sha256 are also put beside the tarball.
#   usage: scripts/build-collection.sh [OUT_DIR] [PYTHON]     (default OUT_DIR dist/, PYTHON .venv/bin/python)
#   then:  ansible-galaxy collection install OUT_DIR/ascend_resumable-npu-<version>.tar.gz
# Prints the tarball's path on the last line.
set -euo pipefail
repo=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
out=$(mkdir -p "${1:-$repo/dist}" && cd "${1:-$repo/dist}" && pwd)
py=${2:-$repo/.venv/bin/python}
galaxy=$(dirname "$py")/ansible-galaxy
[ -x "$galaxy" ] || galaxy=ansible-galaxy
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the collection as git would give it (no caches, no built wheel of an earlier run)
cp -a "$repo/ansible_collections/ascend_resumable/npu" "$tmp/npu"
rm -rf "$tmp/npu/roles/resumable_install/files/wheel"
find "$tmp/npu" -name __pycache__ -prune -exec rm -rf {} +
# the wheel from a copy of the project's sources: setuptools writes build/ and *.egg-info into the tree it
# builds, and make test builds this tarball (molecule site) while pytest builds and installs the same tree
mkdir "$tmp/src"
tar -C "$repo" --exclude=./.git --exclude='./.venv*' --exclude=./.cache --exclude=./.sandbox --exclude=./build \
  --exclude=./dist --exclude=./out --exclude=./collections --exclude='*.egg-info' --exclude=__pycache__ \
  --exclude=./.mypy_cache --exclude=./.ruff_cache -cf - . | tar -C "$tmp/src" -xf -
"$py" -m pip wheel --quiet --no-deps --wheel-dir "$tmp/wheel" "$tmp/src" >&2
wheels=("$tmp"/wheel/*.whl)
[ ${#wheels[@]} -eq 1 ] || { echo "build-collection: expected one wheel, got ${wheels[*]}" >&2; exit 1; }
wheel=${wheels[0]}
name=$(basename "$wheel")
mkdir -p "$tmp/npu/roles/resumable_install/files/wheel"
for dir in "$tmp/npu/roles/resumable_install/files/wheel" "$out"; do
  cp "$wheel" "$dir/$name"
  (cd "$dir" && sha256sum "$name" > "$name.sha256")
done
"$galaxy" collection build "$tmp/npu" --output-path "$out" --force >&2
version=$("$py" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["version"])' "$tmp/npu/galaxy.yml")
echo "build-collection: $out/$name ($(cut -d' ' -f1 "$out/$name.sha256")) shipped in the collection" >&2
echo "$out/ascend_resumable-npu-$version.tar.gz"
