#!/usr/bin/env python3
"""Bundle the resumable package of this repository into one executable zip (PEP 441 zipapp) for
the nodes, deterministically: the same sources give the same bytes (entries sorted, fixed
timestamps), so copying it again changes nothing on a converged node.

    usage: bundle.py REPO OUT_DIR   -> prints the path of OUT_DIR/resumable-<sha256[:12]>.pyz

Runtime dependency on the node: Python >= 3.8 with PyYAML (the OS package python3-yaml).
"""

import hashlib
import io
import os
import sys
import zipfile

MAIN = b'import runpy\nrunpy.run_module("resumable", run_name="__main__", alter_sys=True)\n'
STAMP = (1980, 1, 1, 0, 0, 0)


def entries(repo):
    root = os.path.join(repo, "resumable")
    if not os.path.isfile(os.path.join(root, "__init__.py")):
        sys.exit("bundle.py: %s is not the resumable package" % root)
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


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    repo, out_dir = argv
    data = build(repo)
    digest = hashlib.sha256(data).hexdigest()
    path = os.path.join(out_dir, "resumable-%s.pyz" % digest[:12])
    if not os.path.exists(path):
        os.makedirs(out_dir, exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    print(path)


if __name__ == "__main__":
    main(sys.argv[1:])
