"""The image build context: ``prepare_context(plan, job_name, out_dir) -> ImageContext``.

The directory holds everything ``images/runtime/Dockerfile`` reads, so the build never reaches for
a package index for a vendor name:

- ``Dockerfile`` (the recipe, shipped with the package);
- ``wheels/``: the vendor wheel files the plan names for the job (TaskD, MindIO, mindx_elastic),
  each checked against the profile's sha256 when it has one, and ``wheels/SHA256SUMS`` with the
  checksum of every copied file, which the build checks again;
- ``resumable/``: a wheel of the installed resumable (built here, byte-for-byte reproducible);
- ``profile.yaml``: the profile, baked into the image at /etc/resumable/profile.yaml.

The Pulumi image component (issue 9) and ``resumable image context`` call it. Re-running it on the
same directory replaces what it wrote before and refuses a non-empty directory it did not write.
``.resumable-context.json`` lists what a run wrote with the sha256 of each file; the marker is data to
check, never a list to trust: a name the command never writes (``..``, an absolute path, a
subdirectory of its own) makes the directory not provably its own, and a file is replaced or
removed only while its bytes are still those the marker records. The new files are staged in the
directory first; a run that fails leaves the previous context as it was and removes what it created
(the directory and its parents too).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import stat
import tempfile
import urllib.request
from typing import Dict, List, Optional, Set, Tuple

from .. import __version__, fileio, jsonio
from ..api import job_path, job_plan
from ..errors import ResumableError, shown
from ..fileio import (
    copy_file,
    ensure_directory,
    kind_of,
    make_dirs,
    os_errors,
    read_text,
    remove_dirs,
    sha256_of,
)
from ..hardware import IMAGE_PLATFORM
from ..plan.image import module_of_import
from ..plan.model import JobPlan, Plan, WheelPlan
from ..wheelfiles import base_name, is_https, release_zip
from ..wheelfiles import parse as parse_wheel_name
from .wheels import sha256_file, write_wheel

#: the recipe (a link to images/runtime/Dockerfile in the source tree; a file in an installed package)
DOCKERFILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Dockerfile")
MANIFEST = ".resumable-context.json"
WHEELS_DIR = "wheels"
SUMS_FILE = "SHA256SUMS"
RESUMABLE_DIR = "resumable"
PROFILE_NAME = "profile.yaml"
DISTRIBUTION = "ascend-resumable"
#: caps: vendor wheels are tens of MB; a profile has the one cap every profile read uses
MAX_WHEEL_BYTES = 2 << 30
MAX_PROFILE_BYTES = fileio.PROFILE_MAX_BYTES
DOWNLOAD_TIMEOUT = 60.0
#: the marker lists a few files with their checksums
MAX_MARKER_BYTES = 1 << 20
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclasses.dataclass
class ImageContext:
    """A prepared build context: ``podman build -f DOCKERFILE --build-arg K=V ... PATH``."""

    path: str
    dockerfile: str
    build_args: Dict[str, str]
    #: wheel file names copied into ``<path>/wheels/``
    wheels: List[str]


def _our_name(rel: str) -> bool:
    """Whether ``rel`` is a name prepare_context writes: the recipe, the profile, the checksum list,
    or a wheel directly in wheels/ or resumable/."""
    if rel in ("Dockerfile", PROFILE_NAME, "%s/%s" % (WHEELS_DIR, SUMS_FILE)):
        return True
    head, sep, name = rel.partition("/")
    # a wheel file name (PEP 427, as the plan's wheel-declaration rule reads it) directly in the directory
    return (
        bool(sep)
        and head in (WHEELS_DIR, RESUMABLE_DIR)
        and "/" not in name
        and not name.startswith(".")
        and (parse_wheel_name(name) is not None)
    )


def _not_ours(out: str, what: str) -> ResumableError:
    return ResumableError(
        "%s, so it is not provably a build context resumable wrote" % what,
        out,
        "Name a new or empty directory, or remove this one yourself; nothing in it is changed.",
    )


def _previous(out: str) -> Dict[str, str]:
    """What a previous run wrote into ``out`` (name -> sha256), read from its marker and checked; {}
    for an empty directory. A directory that is not empty and has no valid marker is refused."""
    marker = os.path.join(out, MANIFEST)
    try:
        info = os.lstat(marker)
    except FileNotFoundError:
        if os.listdir(out):
            raise ResumableError(
                "is not empty and was not written by `resumable image context`",
                out,
                "Name a new or empty directory; nothing in it is deleted.",
            ) from None
        return {}
    if not stat.S_ISREG(info.st_mode):
        raise _not_ours(
            out, "its %s is %s" % (MANIFEST, "a symbolic link" if stat.S_ISLNK(info.st_mode) else kind_of(info.st_mode))
        )
    try:
        data = jsonio.loads(
            read_text(marker, what="context marker", limit=MAX_MARKER_BYTES, error=ResumableError, fix="")
        )
    except ValueError as exc:
        raise _not_ours(out, "its %s is not JSON (%s)" % (MANIFEST, exc)) from None
    files = data.get("files") if isinstance(data, dict) else None
    if isinstance(files, list):
        raise _not_ours(out, "its %s was written by an older resumable, without the files' checksums" % MANIFEST)
    if not isinstance(files, dict):
        raise _not_ours(out, "its %s has no object of files" % MANIFEST)
    for rel, digest in files.items():
        if not _our_name(rel):
            raise _not_ours(
                out, "its %s names %s, which `resumable image context` never writes" % (MANIFEST, shown(rel))
            )
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            raise _not_ours(out, "its %s gives %s for %s, not a sha256" % (MANIFEST, shown(digest), rel))
    return dict(files)


def _check_targets(out: str, previous: Dict[str, str], written: Dict[str, str]) -> None:
    """Before anything in ``out`` changes: every file to be replaced or removed is a regular file
    whose bytes are still those the marker records, and wheels/ and resumable/ are directories of
    ``out`` (a symbolic link there would put the files elsewhere)."""
    for sub in (WHEELS_DIR, RESUMABLE_DIR):
        path = os.path.join(out, sub)
        if os.path.lexists(path) and (os.path.islink(path) or not os.path.isdir(path)):
            raise _not_ours(
                out, "%s in it is %s, not a directory" % (sub, "a symbolic link" if os.path.islink(path) else "a file")
            )
    for rel in sorted(set(previous) | set(written)):
        target = os.path.join(out, rel)
        try:
            mode = os.lstat(target).st_mode
        except FileNotFoundError:
            continue
        if rel not in previous:
            raise ResumableError(
                "is there, but no earlier `resumable image context` wrote it (it is not in %s)" % MANIFEST,
                target,
                "Remove it yourself or name another directory; it is not replaced.",
            )
        digest = (
            sha256_of(target, what="context file", limit=MAX_WHEEL_BYTES, error=ResumableError, fix="")
            if stat.S_ISREG(mode)
            else None
        )
        if digest != previous[rel]:
            raise ResumableError(
                "changed since `resumable image context` wrote it (its sha256 is not the one in %s)" % MANIFEST,
                target,
                "Keep your copy elsewhere and remove it, or name another directory; it is not replaced.",
            )


def _copy_checked(src: str, dst: str, limit: int, fix: str) -> str:
    """Copy a regular file (at most ``limit`` bytes) and return the sha256 of what was copied."""
    return copy_file(src, dst, what="file to copy", limit=limit, error=ResumableError, fix=fix)


def _download(url: str, dst: str) -> str:
    if not is_https(url):
        raise ResumableError("is not an https URL", url, "Give an https URL or a local file.")
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as response, open(dst, "wb") as out:
            total = 0
            while True:
                block = response.read(1 << 20)
                if not block:
                    break
                total += len(block)
                if total > MAX_WHEEL_BYTES:
                    raise ResumableError("is larger than %d bytes" % MAX_WHEEL_BYTES, url, "Check the URL.")
                out.write(block)
    except ResumableError:
        raise
    except (OSError, ValueError) as exc:
        raise ResumableError(
            "cannot be downloaded (%s)" % exc, url, "Check the URL, or download it and give file."
        ) from None
    return sha256_file(dst)


def _fetch_wheel(where_job: str, wheel: WheelPlan, wheels_dir: str) -> Tuple[str, str]:
    """Copy or download one vendor wheel into ``wheels_dir``; its file name and sha256."""
    where = "%s.image.wheels.%s" % (where_job, wheel.name)
    if wheel.file is not None:
        # the file name (distribution, version) is checked by the wheel-declaration rule of the plan
        filename = os.path.basename(wheel.file)
        digest = _copy_checked(
            wheel.file,
            os.path.join(wheels_dir, filename),
            MAX_WHEEL_BYTES,
            "Check image.wheels.*.file (relative to the profile).",
        )
        source = wheel.file
    elif wheel.url is not None:
        if wheel.sha256 is None:
            raise ResumableError(
                "has a url but no sha256", where, "Add the sha256 of the wheel: a download is only used when checked."
            )
        filename = base_name(wheel.url)
        digest = _download(wheel.url, os.path.join(wheels_dir, filename))
        source = wheel.url
    else:
        raise ResumableError(
            "is not given, but the plan installs %s %s (%s)" % (wheel.name, wheel.version or "", wheel.reason),
            where,
            "Add image.wheels.%s with the file (relative to the profile) and its sha256; it is never installed "
            "from a package index by name." % wheel.name,
        )
    if wheel.sha256 is not None and digest.lower() != wheel.sha256.lower():
        os.unlink(os.path.join(wheels_dir, filename))
        raise ResumableError(
            "has sha256 %s, but the profile says %s" % (digest, wheel.sha256),
            source,
            "Use the file the checksum was taken from, or correct image.wheels.%s.sha256." % wheel.name,
        )
    return filename, digest


def missing_wheel_files(plan: Plan, job: JobPlan) -> List[str]:
    """One line per vendor wheel file the profile declares that is not there: the file to place, where,
    and the release zip it comes in (the shipped examples name files nobody has until they place them)."""
    lines = []
    for wheel in job.image.wheels:
        if wheel.file is not None and not os.path.lexists(wheel.file):
            lines.append(
                "%s (%s %s, from %s)"
                % (wheel.file, wheel.name, wheel.version or "", release_zip(wheel.name, wheel.version, plan.nodes.arch))
            )
    return lines


def check_wheel_files(plan: Plan, job: JobPlan) -> None:
    """Refuse, naming every missing wheel file at once, before anything is copied."""
    missing = missing_wheel_files(plan, job)
    if missing:
        raise ResumableError(
            "needs vendor wheel files that are not there: place %s" % "; ".join(missing),
            "%s.image.wheels (job %s)" % (job_path(plan, job), job.name),
            "Unpack each zip from the MindCluster release of your cluster and put the .whl file at that path "
            "(relative paths in the profile are relative to the profile's directory), then set its sha256 in the "
            "profile to `sha256sum` of the file. They are never installed from a package index by name.",
        )


def _required_wheels(job: JobPlan) -> Set[str]:
    """Vendor packages the rest of the plan relies on: TaskD for LD_PRELOAD and its Manager, the
    package the run.py line imports."""
    needed = set()
    if job.launcher.ld_preload or job.launcher.taskd_manager.enabled:
        needed.add("taskd")
    if job.image.runpy_patch:
        needed.add(module_of_import(job.image.runpy_patch).split(".")[0])
    return needed


def _resumable_wheel(out_dir: str) -> str:
    """A wheel of the installed resumable: its files plus the metadata of the installed distribution."""
    from importlib import metadata

    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise ResumableError(
            "resumable is not installed as the %s distribution" % DISTRIBUTION,
            None,
            "Install it (`pip install -e .` in the project, or `make venv`) and run again.",
        ) from None
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files: Dict[str, bytes] = {}
    for root, dirs, names in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, os.path.dirname(package)).replace(os.sep, "/")
            with open(path, "rb") as handle:
                files[rel] = handle.read()
    entry_points: Dict[str, Dict[str, str]] = {}
    for ep in dist.entry_points:
        entry_points.setdefault(ep.group, {})[ep.name] = ep.value
    return write_wheel(
        out_dir,
        dist.metadata["Name"],
        dist.version or __version__,
        files,
        requires=dist.requires or [],
        requires_python=dist.metadata["Requires-Python"],
        entry_points=entry_points,
        summary=dist.metadata["Summary"] or "",
    )


def _copy_profile(plan: Plan, dst: str) -> str:
    source = plan.profile
    if not source or source.startswith("<") or not os.path.isfile(source):
        raise ResumableError(
            "the plan was not read from a profile file (%s)" % source,
            None,
            "Plan a profile file with resumable.api.load_plan(path); the image carries that file.",
        )
    return _copy_checked(source, dst, MAX_PROFILE_BYTES, "Check the profile file.")


def build_args(job: JobPlan) -> Dict[str, str]:
    img = job.image
    return {
        "BASE_IMAGE": img.base or "",
        "RESUMABLE_JOB": job.name,
        "RUN_USER": img.user,
        "RUN_UID": str(img.uid),
    }


def _stage(plan: Plan, job: JobPlan, stage: str) -> Tuple[Dict[str, str], List[str]]:
    """Write every file of the context into ``stage``; return (name -> sha256, vendor wheel names)."""
    written: Dict[str, str] = {}
    written["Dockerfile"] = _copy_checked(DOCKERFILE, os.path.join(stage, "Dockerfile"), MAX_WHEEL_BYTES, "")
    wheels_dir = os.path.join(stage, WHEELS_DIR)
    os.makedirs(wheels_dir)
    copied: List[str] = []
    sums: List[str] = []
    for wheel in job.image.wheels:
        filename, digest = _fetch_wheel(job_path(plan, job), wheel, wheels_dir)
        copied.append(filename)
        sums.append("%s  %s\n" % (digest, filename))
        written["%s/%s" % (WHEELS_DIR, filename)] = digest
    with open(os.path.join(wheels_dir, SUMS_FILE), "w", encoding="utf-8") as handle:
        handle.write("".join(sums))
    written["%s/%s" % (WHEELS_DIR, SUMS_FILE)] = sha256_file(os.path.join(wheels_dir, SUMS_FILE))
    own = _resumable_wheel(os.path.join(stage, RESUMABLE_DIR))
    written["%s/%s" % (RESUMABLE_DIR, os.path.basename(own))] = sha256_file(own)
    written[PROFILE_NAME] = _copy_profile(plan, os.path.join(stage, PROFILE_NAME))
    return written, copied


def prepare_context(plan: Plan, job_name: Optional[str], out_dir: str) -> ImageContext:
    """Write the build context of job ``job_name`` (None: the profile's only job) into ``out_dir``."""
    job = job_plan(plan, job_name)
    if not job.image.base:
        raise ResumableError(
            "%s.image.base is not set (job %s)" % (job_path(plan, job), job.name),
            plan.profile,
            "Name the base image that already has CANN, torch and torch_npu (or MindSpore), e.g. "
            "ascendai/pytorch:2.7.1 built on CANN 8.5.0 (see images/runtime/README.md).",
        )
    names = {w.name for w in job.image.wheels}
    missing = sorted(_required_wheels(job) - names)
    if missing:
        raise ResumableError(
            "the plan runs %s in the container but installs no %s wheel" % (", ".join(missing), ", ".join(missing)),
            "%s.image (job %s)" % (job_path(plan, job), job.name),
            "Set image.%s (the version) and image.wheels.%s (file and sha256)." % (missing[0], missing[0]),
        )
    check_wheel_files(plan, job)
    if not os.path.isfile(DOCKERFILE):
        raise ResumableError(
            "is missing from the installed package (it is package data of the %s distribution)" % DISTRIBUTION,
            DOCKERFILE,
            "Install %s from a wheel or a checkout (`pip install --force-reinstall %s` or `pip install .`); "
            "a copy of the resumable/ folder alone has no recipe." % (DISTRIBUTION, DISTRIBUTION),
        )
    ensure_directory(out_dir, "--out", create=False)
    out = os.path.abspath(out_dir)
    previous = _previous(out) if os.path.isdir(out) else {}
    where = "--out %s" % shown(out_dir)
    with os_errors("cannot be created", where, "Choose a place you can write."):
        created = make_dirs(out)
    stage: Optional[str] = None
    try:
        # build into a fresh staging directory in out, then move the pieces in: a failure half-way
        # leaves the previous context as it was
        with os_errors("cannot be written", where, "Choose a place you can write (check free space)."):
            stage = tempfile.mkdtemp(prefix=".stage-", dir=out)
            written, copied = _stage(plan, job, stage)
            for rel in written:  # what the next run accepts in its marker (a plan from the gate has only these)
                if not _our_name(rel):
                    raise ResumableError("is not a wheel file name (PEP 427)", rel, "Rename the wheel file as built.")
            _check_targets(out, previous, written)
            for rel in sorted(set(previous) - set(written)):
                if os.path.lexists(os.path.join(out, rel)):
                    os.unlink(os.path.join(out, rel))  # proven ours by _check_targets
            for rel in written:
                target = os.path.join(out, rel)
                if not os.path.isdir(os.path.dirname(target)):
                    os.mkdir(os.path.dirname(target))
                os.replace(os.path.join(stage, rel), target)
            with open(os.path.join(stage, MANIFEST), "x", encoding="utf-8") as handle:
                handle.write(jsonio.dumps({"job": job.name, "files": written}, indent=1))
            os.replace(os.path.join(stage, MANIFEST), os.path.join(out, MANIFEST))
    except BaseException:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        remove_dirs(created)
        raise
    shutil.rmtree(stage, ignore_errors=True)
    return ImageContext(
        path=out,
        dockerfile=os.path.join(out, "Dockerfile"),
        build_args=build_args(job),
        wheels=copied,
    )


def build_commands(plan: Plan, job: JobPlan, ctx: ImageContext, builder: str = "podman") -> List[List[str]]:
    """The commands that build the image of ``job`` from ``ctx`` for the cluster's CPU (whatever the
    machine that builds it; hardware.IMAGE_PLATFORM), tagged with the reference the job runs, and push it
    when that reference names a registry (image.name or image.registry)."""
    platform = IMAGE_PLATFORM[plan.nodes.arch]
    build = ["docker", "buildx", "build", "--load"] if builder == "docker" else ["podman", "build"]
    build += ["--platform", platform, "-f", ctx.dockerfile]
    for key, value in ctx.build_args.items():
        build += ["--build-arg", "%s=%s" % (key, value)]
    build += ["-t", job.image.reference, ctx.path]
    commands = [build]
    if job.image.pullable:
        commands.append([builder, "push", job.image.reference])
    return commands


__all__ = [
    "ImageContext",
    "build_args",
    "build_commands",
    "check_wheel_files",
    "missing_wheel_files",
    "prepare_context",
]
