"""The Ansible preflight play runs the real `resumable validate` and stops on an invalid profile."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PLAYBOOK = shutil.which("ansible-playbook", path=str(BIN)) or shutil.which("ansible-playbook")

pytestmark = pytest.mark.skipif(PLAYBOOK is None, reason="ansible-playbook is not installed (make test-venv)")


def run_preflight(tmp_path: Path, profile: Path) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        yaml.safe_dump(
            {
                "all": {
                    "children": {
                        "ascend_compute": {"hosts": {"npu-test": {"ansible_connection": "local"}}},
                    }
                }
            }
        )
    )
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    return subprocess.run(
        [
            str(PLAYBOOK),
            "-i",
            str(inventory),
            str(ROOT / "playbooks" / "preflight.yml"),
            "-e",
            "ascend_preflight_resumable_cmd=%s" % (BIN / "resumable"),
            "-e",
            "ascend_preflight_profile=%s" % profile,
            "-e",
            "ansible_python_interpreter=%s" % sys.executable,
        ],
        cwd=str(ROOT),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_valid_profile_passes_preflight(tmp_path: Path) -> None:
    result = run_preflight(tmp_path, ROOT / "examples" / "pytorch-process-recovery.yaml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_invalid_profile_stops_the_play_with_the_rule(tmp_path: Path) -> None:
    doc = yaml.safe_load((ROOT / "examples" / "pytorch-process-recovery.yaml").read_text())
    doc["jobs"][0]["recovery"]["watchdog"] = "on"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc))
    result = run_preflight(tmp_path, bad)
    assert result.returncode != 0
    assert "profile invalid" in result.stdout
    assert "[watchdog-process-level]" in result.stdout
