"""The image build context (``prepare_context`` / ``resumable image context``), the wheel helpers and
the recipe's promises that can be read without building (the podman build is test_image.py)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any, Dict, List

import pytest
from conftest import EXAMPLES, ROOT

from resumable import constants as C
from resumable.api import job_plan, load_plan
from resumable.errors import ResumableError
from resumable.image import context as ctxmod
from resumable.image.context import prepare_context
from resumable.image.wheels import declared_requirements, filename_parts, public_requirements, write_wheel

from .conftest import cli, profile_text, write

DOCKERFILE = ROOT / "images" / "runtime" / "Dockerfile"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def image_profile(tmp: Path, wheels: Dict[str, Path], sums: bool = True, base: str = "localhost/base:1") -> Path:
    for path in wheels.values():
        (tmp / "wheels").mkdir(parents=True, exist_ok=True)
        (tmp / "wheels" / path.name).write_bytes(path.read_bytes())
    lines = ["    image:", "      base: %s" % base] if base else ["    image:"]
    text = profile_text(taskd=True).replace("    image:\n", "\n".join(lines) + "\n")
    text = text.replace('      mindio_ttp: "7.3.0"\n', '      mindio_ttp: "7.3.0"\n      wheels:\n')
    for name, path in wheels.items():
        extra = ", sha256: %s" % sha(path) if sums else ""
        text = text.replace(
            "      wheels:\n", "      wheels:\n        %s: {file: wheels/%s%s}\n" % (name, path.name, extra)
        )
    return write(tmp / "profile.yaml", text)


def test_context_holds_what_the_recipe_reads(tmp_path: Path, wheels: Dict[str, Path]) -> None:
    profile = image_profile(tmp_path / "p", wheels)
    ctx = prepare_context(load_plan(str(profile)), None, str(tmp_path / "ctx"))
    root = Path(ctx.path)
    assert ctx.dockerfile == str(root / "Dockerfile")
    assert (root / "Dockerfile").read_text() == DOCKERFILE.read_text()
    assert sorted(ctx.wheels) == sorted(p.name for p in wheels.values())
    assert ctx.build_args == {
        "BASE_IMAGE": "localhost/base:1",
        "RESUMABLE_JOB": "cpu-job",
        "RUN_USER": "HwHiAiUser",
        "RUN_UID": "1000",
    }
    sums = (root / "wheels" / "SHA256SUMS").read_text().splitlines()
    assert sorted(sums) == sorted("%s  %s" % (sha(p), p.name) for p in wheels.values())
    assert (root / "profile.yaml").read_bytes() == profile.read_bytes()
    (own,) = (root / "resumable").glob("*.whl")
    assert own.name.startswith("ascend_resumable-")
    with zipfile.ZipFile(own) as z:
        names = z.namelist()
        meta = next(n for n in names if n.endswith("METADATA"))
        assert "Requires-Dist: PyYAML" in z.read(meta).decode()
        eps = z.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
        assert "resumable = resumable.cli:main" in eps
        assert "resumable/runtime/startup/sitecustomize.py" in names
        assert "resumable/image/Dockerfile" in names
        assert not any("__pycache__" in n for n in names)


def test_the_resumable_wheel_installs_and_runs(tmp_path: Path, wheels: Dict[str, Path]) -> None:
    ctx = prepare_context(load_plan(str(image_profile(tmp_path / "p", wheels))), None, str(tmp_path / "ctx"))
    (own,) = (Path(ctx.path) / "resumable").glob("*.whl")
    target = tmp_path / "target"
    pip = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-index",
            "--no-deps",
            "--target",
            str(target),
            str(own),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    assert pip.returncode == 0, pip.stdout
    import yaml

    # -S: no site-packages processing, so neither the editable install's finder nor anything but the
    # unpacked wheel and PyYAML (its one dependency) can provide resumable
    check = subprocess.run(
        [sys.executable, "-S", "-c", "import resumable.runtime.launch as m; print(m.__file__)"],
        env={"PYTHONPATH": "%s:%s" % (target, Path(yaml.__file__).parent.parent), "PATH": "/usr/bin:/bin"},
        cwd=str(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert check.stdout.startswith(str(target))


def test_rerun_replaces_its_own_files_and_is_reproducible(tmp_path: Path, wheels: Dict[str, Path]) -> None:
    plan = load_plan(str(image_profile(tmp_path / "p", wheels)))
    out = tmp_path / "ctx"
    prepare_context(plan, None, str(out))
    first = {p.relative_to(out): sha(p) for p in out.rglob("*") if p.is_file()}
    (out / "wheels" / "stale.whl").write_bytes(b"")  # not ours: not in the manifest, left alone
    prepare_context(plan, None, str(out))
    second = {p.relative_to(out): sha(p) for p in out.rglob("*") if p.is_file()}
    assert {k: v for k, v in second.items() if k.name != "stale.whl"} == first
    assert (out / "wheels" / "stale.whl").exists()
    manifest = json.loads((out / ctxmod.MANIFEST).read_text())
    assert manifest["job"] == "cpu-job" and "Dockerfile" in manifest["files"]


def test_refuses_a_directory_it_did_not_write(tmp_path: Path, wheels: Dict[str, Path]) -> None:
    plan = load_plan(str(image_profile(tmp_path / "p", wheels)))
    out = tmp_path / "mine"
    write(out / "keep.txt", "precious")
    with pytest.raises(ResumableError, match=r"not empty and was not written"):
        prepare_context(plan, None, str(out))
    assert (out / "keep.txt").read_text() == "precious" and len(list(out.iterdir())) == 1


def test_a_wrong_checksum_stops_and_leaves_nothing(tmp_path: Path, wheels: Dict[str, Path]) -> None:
    profile = image_profile(tmp_path / "p", wheels)
    text = profile.read_text().replace(sha(wheels["taskd"]), "a" * 64)
    profile.write_text(text)
    out = tmp_path / "ctx"
    with pytest.raises(ResumableError, match=r"has sha256 [0-9a-f]{64}, but the profile says a{64}"):
        prepare_context(load_plan(str(profile)), None, str(out))
    assert [p for p in out.rglob("*") if p.is_file()] == []


def test_vendor_wheel_mistakes_are_user_errors(tmp_path: Path, wheels: Dict[str, Path]) -> None:
    # the file names are checked when the profile is planned (rule wheel-declaration), the files here
    def prepare(profile: Path, out: str) -> None:
        prepare_context(load_plan(str(profile)), None, str(tmp_path / out))

    # a TaskD file given as the MindIO wheel
    profile = image_profile(tmp_path / "a", {"taskd": wheels["taskd"], "mindio_ttp": wheels["taskd"]}, sums=False)
    with pytest.raises(ResumableError, match=r"is a wheel of taskd, not of mindio_ttp"):
        prepare(profile, "a-ctx")
    # the wheel's version differs from what the profile says
    other = Path(write_wheel(str(tmp_path / "w"), "taskd", "7.2.0", {"taskd/__init__.py": b""}))
    profile = image_profile(tmp_path / "b", {"taskd": other, "mindio_ttp": wheels["mindio_ttp"]}, sums=False)
    with pytest.raises(ResumableError, match=r"is version 7\.2\.0, image\.taskd says 7\.3\.0"):
        prepare(profile, "b-ctx")
    # no file at all for a wheel the plan installs
    profile = image_profile(tmp_path / "c", {"taskd": wheels["taskd"]})
    with pytest.raises(ResumableError, match=r"never installed from a package index by name"):
        prepare(profile, "c-ctx")
    # the declared file is not there: named with where it goes and its release zip (issue 24)
    profile = image_profile(tmp_path / "e", wheels)
    (tmp_path / "e" / "wheels" / wheels["taskd"].name).unlink()
    with pytest.raises(
        ResumableError, match=r"not there: place .*/e/wheels/taskd-.*\(taskd 7\.3\.0, from Ascend-mindxdl-taskd_"
    ):
        prepare(profile, "e-ctx")
    # no base image
    profile = image_profile(tmp_path / "d", wheels, base="")
    with pytest.raises(ResumableError, match=r"image.base is not set"):
        prepare(profile, "d-ctx")


def test_a_url_needs_a_checksum(tmp_path: Path, wheels: Dict[str, Path]) -> None:
    profile = image_profile(tmp_path / "p", wheels, sums=False)
    text = profile.read_text().replace(
        "{file: wheels/%s}" % wheels["taskd"].name, "{url: https://example.invalid/%s}" % wheels["taskd"].name
    )
    profile.write_text(text)
    # the gate refuses it first ...
    with pytest.raises(ResumableError, match=r"\[wheel-declaration\].*without a sha256"):
        load_plan(str(profile))
    # ... and the build refuses it on a plan that did not come through the gate
    from resumable.plan import build_plan
    from resumable.profile import load_profile

    with pytest.raises(ResumableError, match=r"has a url but no sha256"):
        prepare_context(build_plan(load_profile(str(profile)), str(profile)), None, str(tmp_path / "ctx"))


def test_cli_prints_the_build_line(tmp_path: Path, wheels: Dict[str, Path]) -> None:
    profile = image_profile(tmp_path / "p", wheels)
    proc = cli(["image", "context", str(profile), "--out", str(tmp_path / "ctx")])
    assert proc.returncode == 0, proc.stderr
    build = proc.stdout.splitlines()[-1]
    # the image is for the cluster's CPU, whatever builds it (issue 16: the line had no --platform)
    assert build.startswith("podman build --platform linux/arm64 -f %s/Dockerfile" % (tmp_path / "ctx"))
    for arg in ("BASE_IMAGE=localhost/base:1", "RESUMABLE_JOB=cpu-job", "RUN_USER=HwHiAiUser", "RUN_UID=1000"):
        assert "--build-arg %s" % arg in build
    bad = cli(["image", "context", str(profile), "--out", str(profile)])
    assert bad.returncode == 2 and "is not a directory" in bad.stderr


def test_wheel_requirements(tmp_path: Path, wheels: Dict[str, Path]) -> None:
    assert filename_parts(wheels["taskd"].name) == ("taskd", "7.3.0")
    assert filename_parts("mindio_ttp-1.0.0-1-cp311-cp311-linux_aarch64.whl") == ("mindio_ttp", "1.0.0")
    assert filename_parts("taskd.tar.gz") is None
    assert declared_requirements(str(wheels["taskd"])) == ["grpcio>=1.62.2", "protobuf>=4.24.4"]
    assert public_requirements([str(wheels["taskd"]), str(wheels["mindio_ttp"])]) == [
        "grpcio>=1.62.2",
        "protobuf>=4.24.4",
    ]
    needy = write_wheel(
        str(tmp_path),
        "mindio_acp",
        "1.0",
        {"mindio_acp/__init__.py": b""},
        requires=["mindio-ttp>=1.0", 'pytest; extra == "test"'],
    )
    with pytest.raises(ResumableError, match=r"requires mindio-ttp, a vendor package that must come from a file"):
        public_requirements([needy])
    assert public_requirements([needy, str(wheels["mindio_ttp"])]) == []
    (tmp_path / "dir").mkdir()
    for p in (wheels["taskd"], Path(needy)):
        (tmp_path / "dir" / p.name).write_bytes(p.read_bytes())
    proc = cli(["image", "wheel-deps", str(tmp_path / "dir")])
    assert proc.returncode == 2 and "image.wheels.mindio_ttp" in proc.stderr


def test_dockerfile_installs_vendor_wheels_only_from_files() -> None:
    text = DOCKERFILE.read_text()
    installs = [line for line in text.splitlines() if "pip install" in line]
    vendor = [line for line in installs if "*.whl" in line or '"$@"' in line]
    assert vendor and all("--no-index" in line and "--no-deps" in line for line in vendor if '"$@"' in line)
    for name in ("taskd", "mindio", "mindx"):
        assert not re.search(r"pip3? install[^\n]*\b%s" % name, text), "a vendor name is installed by name"
    assert "sha256sum --check --strict SHA256SUMS" in text
    assert 'ENTRYPOINT ["resumable", "launch"]' in text
    # the names the recipe types are the project's constants
    assert "ENV %s=%s" % (C.ENV_RESUMABLE_PROFILE, C.PROFILE_PATH) in text
    assert "%s=${RESUMABLE_JOB}" % C.ENV_RESUMABLE_JOB in text
    job = job_plan(load_plan(str(EXAMPLES / "pytorch-process-recovery.yaml")))
    assert set(re.findall(r"^ARG (\w+)", text, re.M)) == set(ctxmod.build_args(job)) | {"PYTHON"}
    assert (ROOT / "resumable" / "image" / "Dockerfile").resolve() == DOCKERFILE.resolve()


# --- hostile output places and markers (issue 25) -----------------------------------------------------


def tree(root: Path) -> Dict[str, bytes]:
    """Every file under ``root`` with its bytes, and every directory (value b"<dir>")."""
    out: Dict[str, bytes] = {}
    for p in sorted(root.rglob("*")):
        key = str(p.relative_to(root))
        out[key] = b"<link>" if p.is_symlink() else b"<dir>" if p.is_dir() else p.read_bytes()
    return out


def one_paragraph(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "internal error" not in proc.stderr, proc.stderr
    for fragment in fragments:
        assert fragment in proc.stderr, (fragment, proc.stderr)


def in_dir(cwd: Path, argv: List[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "resumable", *argv], cwd=str(cwd), capture_output=True, text=True, timeout=120
    )


def _dangling(tmp: Path) -> str:
    (tmp / "dangling").symlink_to(tmp / "gone")
    return "dangling"


def _notes(tmp: Path, out: str) -> str:
    (tmp / "notes").write_text("mine")
    return out


@pytest.mark.parametrize(
    "make, fragments",
    [
        (lambda tmp: "", ["--out ''", "empty"]),
        (_dangling, ["dangling", "symbolic link"]),
        (lambda tmp: "/proc/resumable-test/ctx", ["/proc/resumable-test/ctx", "cannot be created"]),
        (lambda tmp: _notes(tmp, "notes/ctx"), ["notes", "Not a directory"]),
        (lambda tmp: _notes(tmp, "notes"), ["notes", "not a directory"]),
        (lambda tmp: "ctx\nrm -rf ~", ["--out 'ctx\\nrm -rf ~'", "control character"]),
    ],
    ids=["empty", "dangling-symlink", "under-proc", "under-a-file", "a-file", "newline"],
)
def test_an_out_it_cannot_write_is_a_user_error(
    tmp_path: Path, wheels: Dict[str, Path], make: Any, fragments: List[str]
) -> None:
    """(was: exit 3 for the dangling link and /proc; ``--out ''`` wrote into the current directory)"""
    profile = image_profile(tmp_path / "p", wheels)
    work = tmp_path / "work"
    work.mkdir()
    out = make(work)
    before = tree(tmp_path)
    one_paragraph(in_dir(work, ["image", "context", str(profile), "--out", out]), *fragments)
    assert tree(tmp_path) == before


def test_a_read_only_out_is_a_user_error(tmp_path: Path, wheels: Dict[str, Path]) -> None:
    """A read-only file system (root writes regardless of mode bits, so a read-only tmpfs is mounted)."""
    profile = image_profile(tmp_path / "p", wheels)
    ro = tmp_path / "ro"
    ro.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(ro)], capture_output=True).returncode:
        pytest.skip("cannot mount a read-only tmpfs here")
    try:
        proc = cli(["image", "context", str(profile), "--out", str(ro / "ctx")])
        one_paragraph(proc, str(ro / "ctx"), "Read-only file system")
        proc = cli(["image", "context", str(profile), "--out", str(ro)])
        one_paragraph(proc, str(ro), "Read-only file system")
    finally:
        subprocess.run(["umount", "-l", str(ro)], capture_output=True)


def test_a_refused_run_leaves_no_directory_behind(tmp_path: Path, wheels: Dict[str, Path]) -> None:
    """A wheel the plan installs is missing: exit 2, and neither the output directory nor the parents
    it would have created exist afterwards (was: an empty directory stayed)."""
    profile = image_profile(tmp_path / "p", {"taskd": wheels["taskd"]})
    proc = cli(["image", "context", str(profile), "--out", str(tmp_path / "deep" / "er" / "ctx")])
    one_paragraph(proc, "never installed from a package index by name")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p"]


def _marked(tmp_path: Path, wheels: Dict[str, Path], files: Any) -> Path:
    """A context directory written by a run, whose marker then names ``files``."""
    plan = load_plan(str(image_profile(tmp_path / "p", wheels)))
    out = tmp_path / "ctx"
    prepare_context(plan, None, str(out))
    marker = json.loads((out / ctxmod.MANIFEST).read_text())
    marker["files"] = files(marker["files"])
    (out / ctxmod.MANIFEST).write_text(json.dumps(marker))
    return out


def _add(files: Any, name: str) -> Any:
    return [*files, name] if isinstance(files, list) else dict(files, **{name: "0" * 64})


@pytest.mark.parametrize(
    "files",
    [
        lambda f, victim: _add(f, "../victim.txt"),
        lambda f, victim: _add(f, "wheels/../../victim.txt"),
        lambda f, victim: _add(f, str(victim)),
        lambda f, victim: "../victim.txt",
        lambda f, victim: {"Dockerfile": 5},
    ],
    ids=["dotdot", "dotdot-inside", "absolute", "a-string", "digest-not-a-string"],
)
def test_the_marker_is_data_to_check_never_a_list_to_delete(
    tmp_path: Path, wheels: Dict[str, Path], files: Any
) -> None:
    """The marker's list of files is checked: a name the command never writes (``..``, absolute) makes
    the directory not provably ours, and nothing outside it is touched (was: the file was deleted)."""
    victim = tmp_path / "victim.txt"
    victim.write_text("not yours")
    out = _marked(tmp_path, wheels, lambda f: files(f, victim))
    before = tree(tmp_path)
    proc = cli(["image", "context", str(tmp_path / "p" / "profile.yaml"), "--out", str(out)])
    one_paragraph(proc, str(out), ctxmod.MANIFEST)
    assert tree(tmp_path) == before and victim.read_text() == "not yours"


def test_a_file_changed_since_it_was_written_is_not_replaced(tmp_path: Path, wheels: Dict[str, Path]) -> None:
    """A file of the marker whose bytes changed since (an edited Dockerfile) is not provably ours: the
    rerun stops and names it instead of replacing it. An unchanged context is rewritten as before."""
    out = _marked(tmp_path, wheels, lambda f: f)
    profile = str(tmp_path / "p" / "profile.yaml")
    assert cli(["image", "context", profile, "--out", str(out)]).returncode == 0
    (out / "Dockerfile").write_text("FROM scratch\n# my edit\n")
    before = tree(tmp_path)
    one_paragraph(cli(["image", "context", profile, "--out", str(out)]), str(out / "Dockerfile"), "changed")
    assert tree(tmp_path) == before


def test_no_write_through_a_link_in_the_context(tmp_path: Path, wheels: Dict[str, Path]) -> None:
    """wheels/ replaced by a symbolic link to another directory: the rerun refuses instead of
    writing the wheels there."""
    out = _marked(tmp_path, wheels, lambda f: f)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for p in (out / "wheels").iterdir():
        p.rename(elsewhere / p.name)
    (out / "wheels").rmdir()
    (out / "wheels").symlink_to(elsewhere)
    before = tree(tmp_path)
    one_paragraph(cli(["image", "context", str(tmp_path / "p" / "profile.yaml"), "--out", str(out)]), "wheels")
    assert tree(tmp_path) == before


def test_special_files_as_wheels_or_marker_are_refused_at_once(tmp_path: Path, wheels: Dict[str, Path]) -> None:
    profile = image_profile(tmp_path / "p", wheels, sums=False)
    taskd = tmp_path / "p" / "wheels" / wheels["taskd"].name
    taskd.unlink()
    os.mkfifo(str(taskd))
    one_paragraph(cli(["image", "context", str(profile), "--out", str(tmp_path / "a")], timeout=30), "FIFO")
    taskd.unlink()
    taskd.symlink_to("/dev/zero")
    one_paragraph(cli(["image", "context", str(profile), "--out", str(tmp_path / "a")], timeout=30), "character device")
    assert not (tmp_path / "a").exists()
    out = tmp_path / "b"
    out.mkdir()
    os.mkfifo(str(out / ctxmod.MANIFEST))
    one_paragraph(cli(["image", "context", str(profile), "--out", str(out)], timeout=30), "FIFO")
