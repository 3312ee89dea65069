#!/bin/bash
# Ansible Galaxy is not reachable from CI: take the few collections the tests need
# out of the PyPI "ansible" wheel (which bundles them) and unpack them into DEST.
#   usage: scripts/fetch-collections.sh [DEST] [PYTHON]
#   then:  export ANSIBLE_COLLECTIONS_PATH=$PWD/DEST
# The "ansible" release must match the installed ansible-core:
#   core 2.19 <-> ansible 12, core 2.20 <-> 13, core 2.21 <-> 14.
set -euo pipefail
repo=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
dest=${1:-$repo/collections}
py=${2:-$repo/.venv/bin/python}
core=$("$py" -c 'import ansible.release as r; print(r.__version__)')
case "$core" in
  2.19.*) spec='ansible>=12,<13' ;;
  2.20.*) spec='ansible>=13,<14' ;;
  2.21.*) spec='ansible>=14,<15' ;;
  *) echo "fetch-collections: no known ansible release for ansible-core $core" >&2; exit 1 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" -m pip download --quiet --no-deps --only-binary=:all: "$spec" -d "$tmp"
mkdir -p "$dest"
"$py" - "$tmp" "$dest" containers.podman ansible.posix community.general <<'PY'
import glob, json, sys, zipfile

wheel_dir, dest, *wanted = sys.argv[1:]
(wheel,) = glob.glob(wheel_dir + "/ansible-*.whl")
with zipfile.ZipFile(wheel) as z:
    names = z.namelist()
    for coll in wanted:
        prefix = "ansible_collections/%s/" % coll.replace(".", "/")
        members = [n for n in names if n.startswith(prefix)]
        if not members:
            sys.exit("%s is not bundled in %s" % (coll, wheel))
        z.extractall(dest, members)
        info = json.loads(z.read(prefix + "MANIFEST.json"))["collection_info"]
        print("collection", coll, info["version"])
PY
