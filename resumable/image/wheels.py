"""Wheel files without pip: names, checksums, declared requirements, and a small writer.

The image recipe installs vendor wheels (TaskD, MindIO, mindx_elastic) only from files with
``pip install --no-index --no-deps``; their public dependencies (TaskD needs grpcio and protobuf,
``component/taskd/requirements.txt``) are then installed by name, and a requirement on another
vendor name must be satisfied by a file too, never by an index (public projects with those names
exist). The writer builds resumable's own wheel for the image (deterministic bytes, so an unchanged
source gives an unchanged build context) and the tests' fixture wheels.
"""

from __future__ import annotations

import base64
import csv
import email.parser
import hashlib
import io
import os
import re
import zipfile
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..errors import ResumableError
from ..wheelfiles import DISTRIBUTIONS, normalise, parse

#: zip timestamps of the wheels written here (the earliest zip allows): same input, same bytes
FIXED_DATE = (1980, 1, 1, 0, 0, 0)
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
#: normalised distribution -> the image.wheels key (installed from files only)
VENDOR_DISTRIBUTIONS = {normalise(dist): name for name, dist in DISTRIBUTIONS.items()}


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def filename_parts(filename: str) -> Optional[Tuple[str, str]]:
    """(normalised distribution, version) from a wheel file name (PEP427), None when it is not one."""
    parsed = parse(filename)
    return None if parsed is None else (parsed.distribution, parsed.version)


def requirement_name(requirement: str) -> Optional[str]:
    match = _REQ_NAME.match(requirement)
    return match.group(1) if match else None


def declared_requirements(path: str) -> List[str]:
    """The Requires-Dist lines of a wheel (without the ones that only apply to an extra)."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
            if not names:
                raise ResumableError("is not a wheel (no *.dist-info/METADATA)", path, "Name the .whl file itself.")
            text = archive.read(names[0]).decode("utf-8", "replace")
    except zipfile.BadZipFile:
        raise ResumableError("is not a wheel (not a zip archive)", path, "Name the .whl file itself.") from None
    message = email.parser.Parser().parsestr(text, headersonly=True)
    out = []
    for req in message.get_all("Requires-Dist") or []:
        marker = req.partition(";")[2]
        if "extra" in marker and "==" in marker:
            continue
        out.append(req.strip())
    return out


def public_requirements(paths: Sequence[str]) -> List[str]:
    """What the vendor wheels in ``paths`` need from a package index: their requirements except
    those on vendor names, which must be among ``paths`` themselves."""
    given = set()
    for path in paths:
        parts = filename_parts(path)
        if parts is None:
            raise ResumableError("is not a wheel file name (PEP 427)", path, "Use the vendor's .whl file as is.")
        given.add(parts[0])
    out: List[str] = []
    for path in paths:
        for req in declared_requirements(path):
            name = requirement_name(req)
            if name is None:
                continue
            key = normalise(name)
            if key in VENDOR_DISTRIBUTIONS:
                if key not in given:
                    raise ResumableError(
                        "requires %s, a vendor package that must come from a file, not from an index by name" % name,
                        path,
                        "Add jobs[].image.wheels.%s (file and sha256) to the profile." % VENDOR_DISTRIBUTIONS[key],
                    )
                continue
            if req not in out:
                out.append(req)
    return out


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(
    out_dir: str,
    dist: str,
    version: str,
    files: Mapping[str, bytes],
    requires: Iterable[str] = (),
    requires_python: Optional[str] = None,
    entry_points: Optional[Mapping[str, Mapping[str, str]]] = None,
    summary: str = "",
) -> str:
    """Write a pure-Python ``py3-none-any`` wheel of ``files`` (archive name -> bytes); returns its path."""
    tag = re.sub(r"[-_.]+", "_", dist)  # PEP427 escapes "-" in the file name
    info = "%s-%s.dist-info" % (tag, version)
    meta = ["Metadata-Version: 2.1", "Name: %s" % dist, "Version: %s" % version]
    if summary:
        meta.append("Summary: %s" % summary)
    if requires_python:
        meta.append("Requires-Python: %s" % requires_python)
    meta.extend("Requires-Dist: %s" % r for r in requires)
    members: Dict[str, bytes] = dict(sorted(files.items()))
    members[info + "/METADATA"] = ("\n".join(meta) + "\n").encode()
    members[info + "/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: resumable\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    if entry_points:
        lines: List[str] = []
        for group, entries in sorted(entry_points.items()):
            lines.append("[%s]" % group)
            lines.extend("%s = %s" % (k, v) for k, v in sorted(entries.items()))
            lines.append("")
        members[info + "/entry_points.txt"] = "\n".join(lines).encode()
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for name, data in members.items():
        writer.writerow([name, _record_hash(data), str(len(data))])
    writer.writerow([info + "/RECORD", "", ""])
    members[info + "/RECORD"] = record.getvalue().encode()
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "%s-%s-py3-none-any.whl" % (tag, version))
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            member = zipfile.ZipInfo(name, date_time=FIXED_DATE)
            member.external_attr = 0o644 << 16
            member.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(member, data)
    return path
