"""tests/manifests/check_rendered.py, the checker `make demo` runs: on a fresh clone (no upstream
manifests beside it) the AscendJob is checked against the CRD the render wrote, never skipped, and
the checker runs without pytest (the demo's virtualenv has none)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import EXAMPLES, ROOT

from resumable.cli import main as resumable_main

from . import check_rendered

SCRIPT = ROOT / "tests" / "manifests" / "check_rendered.py"
EXAMPLE = EXAMPLES / "pytorch-process-recovery.yaml"


@pytest.fixture()
def rendered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A render of the demo's example, with the upstream manifests out of reach (a fresh clone)."""
    monkeypatch.setenv("ASCEND_RESUMABLE_UPSTREAM", str(tmp_path / "no-upstream"))
    out = tmp_path / "out"
    assert resumable_main(["render", str(EXAMPLE), "--out", str(out)]) == 0
    return out


def _ascendjob(out: Path) -> Path:
    (path,) = out.rglob("*-ascendjob-*.yaml")
    return path


def test_the_ascendjob_is_checked_against_the_rendered_crd(rendered: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check_rendered.main(["check_rendered.py", str(rendered)]) == 0
    out = capsys.readouterr().out
    assert "SKIP" not in out
    assert (
        "AscendJob llama-pretrain: checked against 1-crds/007-customresourcedefinition-ascendjobs.mindxdl.gitee.com"
        in out
    )
    assert "Queue default: checked against 1-crds/" in out  # the scheduling stack's queue (D18)
    assert ", 2 custom resources" in out


def test_a_field_the_crd_does_not_have_is_invalid(rendered: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _ascendjob(rendered)
    job = yaml.safe_load(path.read_text())
    job["spec"]["runPolicy"]["notAField"] = 1
    path.write_text(yaml.safe_dump(job))
    assert check_rendered.main(["check_rendered.py", str(rendered)]) == 1
    err = capsys.readouterr().err
    assert "INVALID %s: against 1-crds/007-customresourcedefinition-ascendjobs" % path.relative_to(rendered) in err
    assert "notAField" in err


def test_a_custom_resource_without_its_crd_is_invalid(rendered: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (crd,) = rendered.rglob("*-customresourcedefinition-ascendjobs.*.yaml")
    crd.unlink()
    assert check_rendered.main(["check_rendered.py", str(rendered)]) == 1
    assert "the render has no CustomResourceDefinition for mindxdl.gitee.com/AscendJob" in capsys.readouterr().err


def test_not_a_render_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check_rendered.main(["check_rendered.py", str(tmp_path)]) == 2
    assert "holds no rendered YAML" in capsys.readouterr().err


def test_the_checker_runs_without_pytest(rendered: Path, tmp_path: Path) -> None:
    # pytest made unimportable, as in the demo's virtualenv
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['pytest'] = None\n")
    env = dict(os.environ, PYTHONPATH=str(blocker), ASCEND_RESUMABLE_UPSTREAM=str(tmp_path / "no-upstream"))
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(rendered)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "AscendJob llama-pretrain: checked against" in done.stdout
