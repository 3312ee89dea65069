"""The smaller things a new user hit (issue 24, "Smaller things"), each fixed and kept fixed."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from conftest import EXAMPLES, ROOT

from resumable.api import load_plan
from resumable.cli import main

EXAMPLE = EXAMPLES / "pytorch-process-recovery.yaml"
NO_STORAGE = """cluster: {mindcluster: "7.3.0"}
jobs:
  - name: a
    image: {framework: pytorch, torch: "2.1.0", framework_pt_adapter: "6.0.0", cann: "8.0.0"}
    env:
      HCCL_CONNECT_TIMEOUT: 600
"""


def test_render_prints_the_warnings_validate_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(NO_STORAGE)
    assert main(["validate", str(profile)]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "WARNING" in line]
    assert warned
    assert main(["render", str(profile), "--out", str(tmp_path / "out")]) == 0
    assert [line for line in capsys.readouterr().err.splitlines() if "WARNING" in line] == warned


def test_a_number_in_env_passes_validate_and_the_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """HCCL_CONNECT_TIMEOUT: 600 passed validate, but `resumable schema` refused it."""
    profile = tmp_path / "p.yaml"
    profile.write_text(NO_STORAGE)
    assert main(["validate", str(profile)]) == 0
    capsys.readouterr()
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    jsonschema.validate(yaml.safe_load(NO_STORAGE), schema)
    with pytest.raises(jsonschema.ValidationError):  # a boolean is still refused by both
        jsonschema.validate({**yaml.safe_load(NO_STORAGE), "cluster": {"mindcluster": True}}, schema)


def test_the_log_and_timeline_location_is_one(tmp_path: Path) -> None:
    """It was given four ways (launch help, timeline help, the plan note, the dry run)."""
    plan = load_plan(str(EXAMPLE))
    log_dir = plan.jobs[0].launcher.log_dir
    note = next(n.text for n in plan.jobs[0].notes if n.text.startswith("logs under"))
    assert "%s/timeline-<host>.jsonl" % log_dir in note
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("MINDX_TASK_ID", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "resumable",
            "launch",
            "--dry-run",
            "--profile",
            str(EXAMPLE),
            "--job",
            "llama-pretrain",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert "# recovery timeline: %s/timeline-%s.jsonl" % (log_dir, socket.gethostname()) in done.stdout
    assert "None" not in done.stdout, "Python's None reached the output (RANK=None)"
    # the error names how many problems there are; it does not print each one a second time
    problems = [line for line in done.stdout.splitlines() if line.startswith("# problem:")]
    (error,) = done.stderr.strip().splitlines()
    assert "%d problems" % len(problems) in error
    assert not [p for p in problems if p[len("# problem: ") :] in error]
    helps = (
        subprocess.run(
            [sys.executable, "-m", "resumable", "launch", "--help"], capture_output=True, text=True, env=env
        ).stdout
        + subprocess.run(
            [sys.executable, "-m", "resumable", "timeline", "--help"], capture_output=True, text=True, env=env
        ).stdout
    )
    assert "launcher.log_dir" in " ".join(helps.split()) and "/job/code/alllogs/resumable-timeline" not in helps


def test_docs_outside_a_checkout_creates_nothing(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "resumable", "docs"], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert done.returncode == 2 and "has no docs/ directory" in done.stderr
    assert list(tmp_path.iterdir()) == []
    made = subprocess.run(
        [sys.executable, "-m", "resumable", "docs", "--out", "generated"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
    )
    assert made.returncode == 0 and made.stdout.startswith("created generated")


def test_errors_point_to_what_an_installed_package_has(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert main(["validate", str(empty)]) == 2
    err = capsys.readouterr().err
    assert "examples/" not in err and "resumable init" in err


def test_structural_problems_in_json_have_their_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text('cluster: {mindcluster: "7.3.0"}\njobs:\n  - name: a\n    nodes: two\n    npus_per_node: many\n')
    assert main(["validate", "--format", "json", str(bad)]) == 2
    (outcome,) = json.loads(capsys.readouterr().out)["profiles"]
    assert {p["path"] for p in outcome["problems"]} == {"jobs[0].nodes", "jobs[0].npus_per_node"}
    assert all(p["message"] and p["fix"] and p["text"].startswith(str(bad)) for p in outcome["problems"])


def test_jobs_are_named_one_way(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """jobs[0] in validate, jobs[llama-pretrain] in image context: now jobs[0] everywhere."""
    assert main(["image", "context", str(EXAMPLE), "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "jobs[0].image.wheels (job llama-pretrain)" in err and "jobs[llama-pretrain]" not in err
