"""The preflight playbook (ascend_resumable.npu.preflight) takes the profile from the inventory
group_vars, the way users set it (play vars used to override it, so a profile in group_vars was "not
set, skipped"), or from --extra-vars, validates it with the real `resumable plan` (an invalid profile
stops the play with the rule) and hands its nodes part to the roles."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import List, Optional

import pytest
import yaml
from conftest import EXAMPLES, ROOT
from role_code import BIN, PLAYBOOK

CHECKSUM = "sha256:" + "ab" * 32

pytestmark = pytest.mark.skipif(PLAYBOOK is None, reason="ansible-playbook is not installed (make test-venv)")


def _preflight(inventory: Path, extra: Optional[List[str]] = None) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        # `resumable` of this checkout, as the inventory names it (ascend_preflight_resumable_cmd: resumable)
        PATH="%s:%s" % (BIN, os.environ.get("PATH", "")),
    )
    return subprocess.run(
        # the collection's playbook by name, as users run it (ansible.cfg: the repository on collections_path)
        [str(PLAYBOOK), "-i", str(inventory), "ascend_resumable.npu.preflight", *(extra or [])],
        cwd=str(ROOT),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _copy_example(tmp_path: Path) -> Path:
    """inventory/example with real-looking checksums, in a directory that keeps its relative profile path."""
    inventory = tmp_path / "inventory" / "example"
    shutil.copytree(ROOT / "inventory" / "example", inventory)
    (tmp_path / "examples").symlink_to(EXAMPLES)
    compute = inventory / "group_vars" / "ascend_compute.yml"
    data = yaml.safe_load(compute.read_text())
    for key in ("ascend_driver_driver_package", "ascend_driver_firmware_package"):
        data[key]["checksum"] = CHECKSUM
    compute.write_text(yaml.safe_dump(data))
    return inventory / "hosts.yml"


def test_example_inventory_validates_the_profile_from_group_vars() -> None:
    """The example inventory as shipped: the profile is planned, then its placeholder checksums are refused."""
    result = _preflight(ROOT / "inventory" / "example" / "hosts.yml")
    out = " ".join(result.stdout.split())  # the yaml callback wraps long messages
    assert "examples/pytorch-process-recovery.yaml: ascend-910b / module-910b-8 /" in out, out
    assert "aarch64, HDK 25.0.rc1.1, driver run user HwHiAiUser 1000:1000" in out, out
    assert result.returncode != 0
    assert "sha256:REPLACE-with-the-sha256-of-the-package" in out


def test_example_inventory_with_checksums_passes(tmp_path: Path) -> None:
    result = _preflight(_copy_example(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "driver run user HwHiAiUser 1000:1000" in " ".join(result.stdout.split())


@pytest.mark.parametrize("where", ["group_vars", "extra_vars"])
def test_invalid_profile_stops_the_play_with_the_rule(tmp_path: Path, where: str) -> None:
    hosts = _copy_example(tmp_path)
    doc = yaml.safe_load((EXAMPLES / "pytorch-process-recovery.yaml").read_text())
    doc["jobs"][0]["recovery"]["watchdog"] = "on"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc))
    extra = ["-e", "ascend_preflight_profile=%s" % bad]
    if where == "group_vars":
        all_vars = hosts.parent / "group_vars" / "all.yml"
        data = yaml.safe_load(all_vars.read_text())
        data["ascend_preflight_profile"] = str(bad)
        all_vars.write_text(yaml.safe_dump(data))
        extra = []
    result = _preflight(hosts, extra)
    assert result.returncode != 0
    assert "exited 2 (profile invalid)" in result.stdout
    assert "[watchdog-process-level]" in result.stdout


def test_a_missing_profile_is_an_error_not_a_skip(tmp_path: Path) -> None:
    hosts = _copy_example(tmp_path)
    all_vars = hosts.parent / "group_vars" / "all.yml"
    data = yaml.safe_load(all_vars.read_text())
    del data["ascend_preflight_profile"]
    all_vars.write_text(yaml.safe_dump(data))
    result = _preflight(hosts)
    assert result.returncode != 0
    assert "ascend_preflight_profile is not set" in result.stdout
