"""The image build context (``prepare_context`` / ``resumable image context``), the wheel helpers and
the recipe's promises that can be read without building (the podman build is test_image.py)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Dict

import pytest
from conftest import EXAMPLES, ROOT

from resumable import constants as C
from resumable.api import job_plan, load_plan
from resumable.errors import ResumableError
from resumable.runtime import context as ctxmod
from resumable.runtime.context import prepare_context
from resumable.runtime.wheels import declared_requirements, filename_parts, public_requirements, write_wheel

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
        assert "resumable/runtime/Dockerfile" in names
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
    assert (ROOT / "resumable" / "runtime" / "Dockerfile").resolve() == DOCKERFILE.resolve()
