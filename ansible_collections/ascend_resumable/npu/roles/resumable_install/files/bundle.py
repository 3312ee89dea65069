#!/usr/bin/env python3
"""The resumable package for the nodes, on the controller, and the digests a re-run compares.

    usage: bundle.py --profile FILE [--shipped DIR] [--source REPO --cache DIR]
    prints JSON: {"src": path, "sha256": hex, "origin": "...", "profile_sha256": hex} (only the profile's
    digest without --shipped and --source: the inventory names the package, resumable_install_package)

The package is, in this order:
- the wheel shipped with the collection (DIR/<name>.whl, put there by scripts/build-collection.sh), checked
  against DIR/<name>.whl.sha256 like a vendor package (a mismatch stops the run);
- else, when the collection is used in place from a checkout of ascend-resumable, the resumable package of
  REPO bundled into one zip (PEP 441 zipapp), deterministically: the same sources give the same bytes (entries
  sorted, fixed timestamps), cached in CACHE as resumable-<sha256[:12]>.pyz.
Either archive is run on the node the same way, from sys.path (zipimport): python3 -m resumable.
Runtime dependency on the node: Python >= 3.8 with PyYAML (the OS package python3-yaml).
"""

import argparse
import glob
import hashlib
import io
import json
import os
import sys
import zipfile

MAIN = b'import runpy\nrunpy.run_module("resumable", run_name="__main__", alter_sys=True)\n'
STAMP = (1980, 1, 1, 0, 0, 0)


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def entries(repo):
    root = os.path.join(repo, "resumable")
    if not os.path.isfile(os.path.join(root, "__init__.py")):
        sys.exit(
            "bundle.py: %s is not the resumable package, and the collection ships no wheel: build the collection "
            "with scripts/build-collection.sh, or set resumable_install_package (a wheel with its checksum) or "
            "resumable_install_source (a checkout of ascend-resumable)" % root
        )
    out = [("__main__.py", MAIN)]
    for base, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".typed", ".json", ".yaml")):
                path = os.path.join(base, name)
                with open(path, "rb") as handle:
                    out.append((os.path.relpath(path, repo).replace(os.sep, "/"), handle.read()))
    return sorted(out)


def build(repo):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries(repo):
            info = zipfile.ZipInfo(name, date_time=STAMP)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return b"#!/usr/bin/env python3\n" + buf.getvalue()


def bundled(repo, cache):
    data = build(repo)
    digest = hashlib.sha256(data).hexdigest()
    path = os.path.join(cache, "resumable-%s.pyz" % digest[:12])
    if not os.path.exists(path):
        os.makedirs(cache, exist_ok=True)
        tmp = "%s.%d.tmp" % (path, os.getpid())
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    return {"src": path, "sha256": digest, "origin": "bundled from the checkout %s" % os.path.abspath(repo)}


def shipped(directory):
    """The one wheel in ``directory`` with its checksum file, or None when there is none."""
    wheels = sorted(glob.glob(os.path.join(directory, "*.whl")))
    if not wheels:
        return None
    if len(wheels) > 1:
        sys.exit("bundle.py: %s holds more than one wheel: %s" % (directory, ", ".join(wheels)))
    wheel = wheels[0]
    try:
        with open(wheel + ".sha256") as handle:
            wanted = handle.read().split()[0].lower()
    except (OSError, IndexError):
        sys.exit("bundle.py: %s has no checksum file %s.sha256 (sha256 hex digest first)" % (wheel, wheel))
    found = sha256_file(wheel)
    if found != wanted:
        message = "bundle.py: %s has sha256 %s, its checksum file says %s: the wheel is damaged"
        sys.exit(message % (wheel, found, wanted))
    return {"src": wheel, "sha256": found, "origin": "shipped with the collection"}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", required=True)
    parser.add_argument("--shipped", default="")
    parser.add_argument("--source", default="")
    parser.add_argument("--cache", default="")
    args = parser.parse_args(argv)
    found = shipped(args.shipped) if args.shipped else None
    if found is None and args.source and args.cache:
        found = bundled(args.source, args.cache)
    found = dict(found or {}, profile_sha256=sha256_file(args.profile))
    print(json.dumps(found))


if __name__ == "__main__":
    main(sys.argv[1:])
