"""The Pulumi program installs and runs the way Pulumi's pip toolchain does it.

Pulumi.yaml says ``toolchain: pip, virtualenv: .venv``: Pulumi creates the virtualenv, upgrades
pip/setuptools/wheel in it and runs ``pip install -r requirements.txt`` in the project directory,
then runs the program with that Python. This test does the same in a fresh virtualenv (never the
test venv) and runs __main__.py there under mocks for an example stack. The virtualenv is kept
under out/ keyed by the requirement files' content, so a second run reuses it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

from conftest import ROOT


def fresh_venv() -> Path:
    digest = hashlib.sha256()
    for name in ("requirements.txt", "pyproject.toml"):
        digest.update((ROOT / name).read_bytes())
    venv = ROOT / "out" / "pulumi-venv" / digest.hexdigest()[:16]
    python = venv / "bin" / "python"
    if (venv / ".complete").exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "--upgrade", "pip", "setuptools", "wheel"], cwd=ROOT, env=env, check=True, timeout=900)
    subprocess.run([*pip, "-r", "requirements.txt"], cwd=ROOT, env=env, check=True, timeout=900)
    (venv / ".complete").write_text("ok\n")
    return python


def run_stack(python: Path, stack: str) -> Dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    done = subprocess.run(
        [str(python), "tests/stacks/venv_runner.py", stack],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary: Dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    for name, path in summary["modules"].items():
        where = str(Path(path).resolve())
        if name in ("resumable", "resumable_pulumi"):
            assert where.startswith(str(ROOT)), "the project is not installed from this checkout (-e .)"
        else:
            assert where.startswith(str(python.parent.parent.resolve())), f"{name} came from outside the venv"
    return summary


def test_program_runs_in_a_venv_built_from_requirements() -> None:
    python = fresh_venv()
    cluster = run_stack(python, "ascend-a2-cluster")["types"]  # the scheduling stack
    assert cluster["pulumi:providers:kubernetes"] == 1  # one provider, every create a server-side apply
    assert cluster["kubernetes:apps/v1:Deployment"] >= 4
    assert "kubernetes:mindxdl.gitee.com/v1:AscendJob" not in cluster
    summary = run_stack(python, "mindspore-process-recovery")  # a job stack on it: image and job
    assert "pulumi_docker_build" in summary["modules"]
    workload = summary["types"]
    assert workload["docker-build:index:Image"] == 1
    assert workload["kubernetes:mindxdl.gitee.com/v1:AscendJob"] == 1
    assert "kubernetes:apps/v1:Deployment" not in workload
