#!/usr/bin/env python3
"""Build MindCluster's TaskD (its Python wheel with ``libtaskd.so`` inside) from the upstream source tree.

TaskD is never installed from a package index by name (public projects of that name exist): it is
the wheel built here from ``shared/upstream/src/mind-cluster/v<release>/component/taskd``, at the
tag of that folder's COMMIT, installed by path with its sha256 checked against the build's record.
The vendor's recipe (``component/taskd/build/build.sh`` and ``build_backend.sh``, same at v7.3.0 and
v26.1.0) is followed in a copy of the source (the shared folder is read-only):

1. ``libtaskd.so``: ``go build -buildmode=c-shared`` in ``taskd/go`` with cgo on, the vendor's
   hardening ``CGO_CFLAGS``/``CGO_CPPFLAGS`` and link flags. The Go module replaces
   ``../../../{ascend-common,clusterd,ascend-faultdiag-online}``, so those three components are copied
   beside it. The vendor runs ``go mod tidy`` then ``go build -mod=mod`` with ``GOTOOLCHAIN=go1.21.13``;
   here ``-mod=mod`` without the tidy, with the machine's own Go (``GOTOOLCHAIN=local``: no toolchain
   is downloaded). At v26.1.0 go.mod and go.sum are complete and stay as they are; at v7.3.0 they lack
   the Kubernetes modules clusterd and ascend-common import, which ``-mod=mod`` adds at the versions the
   replaced modules' own go.mod files require (MVS: no ``latest`` lookup). The resolved go.mod and
   go.sum digests are kept in the build record, so a change of what was resolved shows.
2. the wheel: ``python3 setup.py bdist_wheel --plat-name linux_<arch> --python-tag py3`` with
   ``BUILD_VERSION=v<release>`` (build.sh reads it from a ``service_config.ini`` the source archive
   does not have, and falls back to ``v7.0.RC1`` for every release), in a virtualenv holding only a
   pinned setuptools (:data:`SETUPTOOLS`), so the wheel does not depend on what this Python has, and
   with fixed file times (:data:`SOURCE_DATE_EPOCH`): ``libtaskd.so`` and the wheel come out byte for
   byte the same from the same sources (checked: two builds of 26.1.0, same sha256).

Builds land in a cache outside the checkout beside the Go tools (``go_tools.cache_root()``, same lock),
one directory per release keyed by what decides the build: the four source trees, the recipe below and
the Go version. A release's older builds are pruned. The wheel's runtime dependencies (``grpcio``,
``protobuf``, ``pyOpenSSL``, from upstream ``requirements.txt``) come from PyPI when it is installed.

    python3 tools/taskd_build.py build [--release R ...]       build what is missing (all releases here)
    python3 tools/taskd_build.py path --release R              the built wheel's path; exit 1 if not built
    python3 tools/taskd_build.py install --release R --python PY  install the built wheel by path into PY
    python3 tools/taskd_build.py releases                      the releases whose TaskD source is here

Standard library only (it runs before any virtualenv).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from go_tools import BUILT_MARK, ToolError, cache_lock, cache_root, children_cpu, go_version, is_built

HERE = Path(__file__).resolve().parent
#: ``shared/upstream/src`` beside the checkout (the shared folder's README says which tags)
UPSTREAM_SRC = HERE.parent.parent / "shared" / "upstream" / "src"
#: the components the TaskD build reads: itself and the three its go.mod replaces
COMPONENTS = ("taskd", "ascend-common", "clusterd", "ascend-faultdiag-online")
#: setuptools for ``setup.py bdist_wheel`` (bdist_wheel is part of setuptools since 70.1: no ``wheel``)
SETUPTOOLS = "80.9.0"
#: the wheel's file times (bdist_wheel reads SOURCE_DATE_EPOCH): the same sources give the same wheel
#: bytes, so its sha256 is the same on every machine (1980-01-01, the earliest a zip file can hold)
SOURCE_DATE_EPOCH = "315532800"
LIB_NAME = "libtaskd.so"
#: where taskd's ctypes loader looks for the library (taskd/python/constants/constants.py LIB_SO_PATH)
LIB_IN_PACKAGE = Path("taskd") / "python" / "cython_api" / "libs"
#: build_backend.sh: CGO flags and link flags of the vendor's build
CGO_HARDENING = "-fstack-protector-strong -D_FORTIFY_SOURCE=2 -O2 -fPIC -ftrapv"
GO_ENV = {
    "CGO_ENABLED": "1",
    "GO111MODULE": "on",
    "GOFLAGS": "-mod=mod",
    "GOTOOLCHAIN": "local",
    "CGO_CFLAGS": CGO_HARDENING,
    "CGO_CPPFLAGS": CGO_HARDENING,
}


def say(message: str) -> None:
    print(f"[taskd-build] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Release:
    """One MindCluster release whose TaskD source lies under ``src``."""

    name: str  # "26.1.0"
    src: Path  # .../mind-cluster/v26.1.0/component

    @property
    def commit(self) -> str:
        mark = self.src.parent / "COMMIT"
        return mark.read_text(encoding="utf-8").strip() if mark.is_file() else ""

    @property
    def build_version(self) -> str:
        """BUILD_VERSION as build.sh makes it from ``service_config.ini`` (``v`` + the version)."""
        return "v" + self.name.replace(".SPC", "+SPC")


def arch() -> str:
    """The wheel's platform suffix as build.sh names it (x86_64 or aarch64)."""
    machine = platform.machine()
    return "aarch64" if machine in ("aarch64", "arm64") else machine


def releases(root: Optional[Path] = None) -> Dict[str, Release]:
    """The releases whose ``component/taskd`` and the components it replaces are present."""
    base = (root or UPSTREAM_SRC) / "mind-cluster"
    found: Dict[str, Release] = {}
    if not base.is_dir():
        return found
    for folder in sorted(base.iterdir()):
        component = folder / "component"
        if folder.name.startswith("v") and all((component / c).is_dir() for c in COMPONENTS):
            found[folder.name[1:]] = Release(folder.name[1:], component)
    return found


def release_named(name: str, root: Optional[Path] = None) -> Release:
    name = name[1:] if name.startswith("v") else name
    known = releases(root)
    if name not in known:
        where = (root or UPSTREAM_SRC) / "mind-cluster"
        have = ", ".join(known) or "none"
        raise ToolError(
            f"no TaskD source for release {name} under {where} (releases with component/taskd and the components "
            f"its go.mod replaces: {have}); the shared folder's upstream/README.md says which tags are there"
        )
    return known[name]


def ldflags(release: Release) -> List[str]:
    """build_backend.sh's ``-ldflags`` (BuildScene is empty there as well)."""
    return [
        f"-X main.BuildName={LIB_NAME}",
        "-X main.BuildScene=",
        f"-X main.BuildVersion={release.build_version}_linux-{arch()}",
        "-buildid none",
        "-s",
        "-linkmode=external",
        "-extldflags=-Wl,-z,relro,-z,now,-z,noexecstack",
    ]


def tree_digest(directory: Path) -> str:
    """sha256 over every file's relative path, mode bit for execute and bytes (symlinks by target)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file() or p.is_symlink()):
        rel = path.relative_to(directory).as_posix()
        if path.is_symlink():
            body = b"->" + os.readlink(path).encode()
        else:
            body = path.read_bytes() + (b"x" if os.access(path, os.X_OK) else b"-")
        digest.update(rel.encode() + b"\0" + hashlib.sha256(body).digest())
    return digest.hexdigest()


def recipe(release: Release, goversion: str) -> Dict[str, object]:
    return {
        "release": release.name,
        "build_version": release.build_version,
        "ldflags": ldflags(release),
        "env": GO_ENV,
        "go": goversion,
        "setuptools": SETUPTOOLS,
        "source_date_epoch": SOURCE_DATE_EPOCH,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "arch": arch(),
    }


def build_key(release: Release, goversion: str) -> str:
    """What decides the build: the four source trees, the recipe and the Go version."""
    digest = hashlib.sha256(json.dumps(recipe(release, goversion), sort_keys=True).encode())
    for component in COMPONENTS:
        digest.update(component.encode() + b"\0" + tree_digest(release.src / component).encode())
    return digest.hexdigest()[:16]


def release_dir(release: Release, goversion: str) -> Path:
    return cache_root() / "taskd" / release.name / build_key(release, goversion)


def run(args: Sequence[str], cwd: Path, env: Optional[Dict[str, str]] = None) -> None:
    """Run a build step with its output on stderr; ToolError when it fails."""
    done = subprocess.run(list(args), cwd=cwd, env=env, stdout=sys.stderr, check=False)
    if done.returncode != 0:
        raise ToolError(f"{' '.join(args)} failed in {cwd} (exit {done.returncode}; output above)")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build_library(release: Release, work: Path) -> Path:
    """``libtaskd.so`` built in the copy ``work`` (build_backend.sh ``build``), moved where the package loads it."""
    if shutil.which("go") is None:
        raise ToolError("the go command is not on PATH: install Go (the machine's own) and run again")
    if shutil.which(os.environ.get("CC", "gcc")) is None:
        raise ToolError("no C compiler (gcc) on PATH: cgo needs one for -buildmode=c-shared (apt-get install gcc)")
    gomod = work / "taskd" / "taskd" / "go"
    env = dict(os.environ, **GO_ENV)
    args = ["go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags", " ".join(ldflags(release))]
    run([*args, "-o", LIB_NAME, "."], gomod, env)
    libs = work / "taskd" / LIB_IN_PACKAGE
    shutil.rmtree(libs, ignore_errors=True)
    libs.mkdir(parents=True)
    (gomod / LIB_NAME).rename(libs / LIB_NAME)
    return libs / LIB_NAME


def resolved_modules(release: Release, work: Path) -> Dict[str, object]:
    """What ``-mod=mod`` resolved: go.mod and go.sum digests, and whether they changed from the source."""
    out: Dict[str, object] = {}
    for name in ("go.mod", "go.sum"):
        built = (work / "taskd" / "taskd" / "go" / name).read_bytes()
        source = (release.src / "taskd" / "taskd" / "go" / name).read_bytes()
        out[name] = {"sha256": hashlib.sha256(built).hexdigest(), "changed": built != source}
    return out


def build_wheel(release: Release, work: Path, staging: Path) -> Path:
    """The wheel by the vendor's ``setup.py bdist_wheel`` (build.sh ``build_wheel_package``) in a
    virtualenv with the pinned setuptools only."""
    venv = staging / "venv"
    run([sys.executable, "-m", "venv", str(venv)], staging)
    python = venv / "bin" / "python"
    run([str(python), "-m", "pip", "install", "-q", f"setuptools=={SETUPTOOLS}"], staging)
    source = work / "taskd"
    env = dict(os.environ, BUILD_VERSION=release.build_version, SOURCE_DATE_EPOCH=SOURCE_DATE_EPOCH)
    run(
        [str(python), "setup.py", "-q", "bdist_wheel", "--plat-name", f"linux_{arch()}", "--python-tag", "py3"],
        source,
        env,
    )
    wheels = sorted((source / "dist").glob("taskd-*.whl"))
    if len(wheels) != 1:
        raise ToolError(f"setup.py bdist_wheel left {len(wheels)} wheels in {source / 'dist'}, not one")
    target = staging / wheels[0].name
    shutil.move(str(wheels[0]), target)
    shutil.rmtree(venv)
    return target


def build(release: Release, goversion: str) -> Path:
    """Build ``release``'s wheel into its keyed cache directory unless it is there; the directory."""
    target = release_dir(release, goversion)
    if is_built(target):
        return target
    commit = release.commit[:12] or "no COMMIT"
    say(f"building TaskD {release.name} ({commit}) into {target} (minutes on a cold Go cache)")
    started = time.monotonic()
    cpu_before = children_cpu()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{release.name}-", dir=target.parent))
    try:
        work = staging / "src"
        for component in COMPONENTS:
            shutil.copytree(release.src / component, work / component, symlinks=True)
        for path in [work, *work.rglob("*")]:  # the shared folder is read-only; its copy must not be
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | 0o200)
        lib = build_library(release, work)
        lib_sha = sha256_of(lib)
        modules = resolved_modules(release, work)
        wheel = build_wheel(release, work, staging)
        shutil.rmtree(work)
        seconds = round(time.monotonic() - started, 1)
        cpu = round(children_cpu() - cpu_before, 1)
        record = {
            "component": "taskd",
            "release": release.name,
            "commit": release.commit,
            "wheel": wheel.name,
            "sha256": sha256_of(wheel),
            "libtaskd_sha256": lib_sha,
            "go_modules": modules,
            "go": goversion,
            "setuptools": SETUPTOOLS,
            "seconds": seconds,
            "cpu_seconds": cpu,
        }
        (staging / BUILT_MARK).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        if target.exists():  # an unfinished directory of ours (no BUILT mark): replace it
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    say(f"built TaskD {release.name} in {seconds} s ({cpu} s of CPU): {target / wheel.name}")
    prune(keep=target)
    return target


def prune(keep: Path) -> None:
    """Remove this release's other builds: directories this script wrote (they carry its BUILT mark)."""
    for other in sorted(keep.parent.iterdir()):
        if other != keep and other.is_dir() and is_built(other):
            shutil.rmtree(other, ignore_errors=True)


def record_of(directory: Path) -> Dict[str, str]:
    data = json.loads((directory / BUILT_MARK).read_text(encoding="utf-8"))
    return {str(k): str(v) for k, v in data.items() if isinstance(v, (str, int, float))}


def wheel_path(release: Release, goversion: Optional[str] = None) -> Path:
    """The built wheel of ``release``, its sha256 checked against the build's record."""
    directory = release_dir(release, goversion or go_version())
    if not is_built(directory):
        raise ToolError(
            f"TaskD {release.name} is not built for this source and Go: run {__file__} build --release {release.name}"
        )
    record = record_of(directory)
    wheel = directory / record["wheel"]
    if not wheel.is_file() or sha256_of(wheel) != record["sha256"]:
        raise ToolError(f"{wheel} is missing or differs from its build record (sha256 {record['sha256']}): build again")
    return wheel


def install(release: Release, python: str) -> Path:
    """``pip install`` the built wheel by its path (never ``taskd`` by name); its deps come from PyPI."""
    wheel = wheel_path(release)
    run([python, "-m", "pip", "install", "-q", str(wheel)], wheel.parent)
    return wheel


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("build", "path", "install", "releases"))
    parser.add_argument("--release", action="append", default=[], help="e.g. 26.1.0 (default: every release here)")
    parser.add_argument("--python", default=sys.executable, help="the Python to install into (install)")
    args = parser.parse_args(argv)
    try:
        if args.command == "releases":
            for release in releases().values():
                print(f"{release.name}\t{release.commit}\t{release.src}")
            return 0
        chosen = [release_named(name) for name in args.release] or list(releases().values())
        if not chosen:
            raise ToolError(f"no TaskD source under {UPSTREAM_SRC / 'mind-cluster'}")
        if args.command == "build":
            goversion = go_version()
            with cache_lock():
                for release in chosen:
                    build(release, goversion)
            for release in chosen:
                print(wheel_path(release, goversion))
        elif args.command == "path":
            for release in chosen:
                print(wheel_path(release))
        else:
            if len(chosen) != 1:
                raise ToolError("install takes exactly one --release")
            print(install(chosen[0], args.python))
        return 0
    except ToolError as exc:
        print(f"taskd_build: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
