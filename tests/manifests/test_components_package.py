"""The Pulumi components ship in the distribution under their own package name, so a user's own
Pulumi program can ``import resumable_pulumi`` after ``pip install 'ascend-resumable[pulumi]'``."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import resumable_pulumi

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_carries_the_components(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = tmp_path.glob("ascend_resumable-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    module_files = {p.name for p in (ROOT / "resumable_pulumi").glob("*.py")}
    assert {f"resumable_pulumi/{n}" for n in module_files} | {"resumable_pulumi/py.typed"} <= names
    assert not [n for n in names if n.startswith(("tests/", "components/"))]
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "Provides-Extra: pulumi" in text
    assert 'Requires-Dist: pulumi-kubernetes>=4.29; python_version >= "3.10" and extra == "pulumi"' in text


def test_a_program_of_ones_own_finds_the_public_names() -> None:
    for name in ("MindClusterScheduler", "SharedStorage", "RuntimeImage", "TrainingJobs", "deploy"):
        assert hasattr(resumable_pulumi, name), name
