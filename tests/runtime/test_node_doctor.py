"""``resumable doctor --node``: the node checks against the plan's nodes part, on this host's real
accounts and a temporary tree for paths, ports and the runtime/driver records."""

from __future__ import annotations

import dataclasses
import json
import os
import pwd
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
from conftest import FIXTURES

from resumable.api import load_plan
from resumable.plan.model import NodePlan
from resumable.runtime import node_doctor as nd
from resumable.runtime.doctor import Check

PROFILE = FIXTURES / "profiles" / "site.yaml"


@pytest.fixture()
def nodes() -> NodePlan:
    return load_plan(str(PROFILE)).nodes


def statuses(checks: List[Check]) -> Dict[str, str]:
    return {c.name: c.status for c in checks}


def test_accounts_against_the_plan() -> None:
    me = pwd.getpwuid(os.getuid())
    good = {"name": me.pw_name, "uid": me.pw_uid, "gid": me.pw_gid}
    assert statuses(nd.user_checks([good])) == {"user " + me.pw_name: "ok"}
    other = nd.user_checks([dict(good, uid=me.pw_uid + 4242)])[0]
    assert other.status == "fail" and "FAQ 337" in other.fix and other.found.startswith("uid %d" % me.pw_uid)
    assert nd.user_checks([{"name": "no-such-user-xyz", "uid": 1, "gid": 1}])[0].found == "missing"
    grouped = nd.user_checks([dict(good, groups=["no-such-group-xyz"])])[0]
    assert grouped.status == "fail" and "not in no-such-group-xyz" in grouped.found


def test_directories_files_ports_runtime_driver(tmp_path: Path, nodes: NodePlan) -> None:
    me = pwd.getpwuid(os.getuid())
    owner = {"owner": me.pw_name, "group": __import__("grp").getgrgid(me.pw_gid).gr_name}
    d = tmp_path / "logs"
    d.mkdir(mode=0o750)
    os.chmod(d, 0o750)
    assert nd.path_checks([dict(owner, path=str(d), mode="0750")], "dir")[0].status == "ok"
    assert nd.path_checks([dict(owner, path=str(d), mode="0755")], "dir")[0].status == "fail"
    assert nd.path_checks([dict(owner, path=str(tmp_path / "none"), mode="0750")], "dir")[0].found == "missing"
    assert nd.path_checks([{"path": str(d)}], "file")[0].status == "fail"

    sysctl = tmp_path / "ports"
    sysctl.write_text("30000-30005,9601-9602\n")
    assert nd.reserved_ports_check([9601, 9602], str(sysctl)).status == "ok"
    sysctl.write_text("9601\n")
    assert nd.reserved_ports_check([9601, 9602], str(sysctl)).status == "fail"

    binary = tmp_path / "rt" / "ascend-docker-runtime"
    binary.parent.mkdir()
    runtime = dict(nodes.docker_runtime, binary=str(binary))
    assert nd.runtime_check(runtime).found == "missing"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    (binary.parent / nd.RUNTIME_INFO_NAME).write_text("version=v%s\n" % runtime["version"])
    assert nd.runtime_check(runtime).status == "ok"
    (binary.parent / nd.RUNTIME_INFO_NAME).write_text("version=v26.0.0\n")
    assert nd.runtime_check(runtime).status == "fail"

    info = tmp_path / "version.info"
    assert nd.driver_check("25.2.0", str(info)).found == "not installed"
    info.write_text("Version=25.2.0\nInnerversion=V100R001C25\n")
    assert nd.driver_check("25.2.0", str(info)).status == "ok"
    assert nd.driver_check("25.3.0", str(info)).status == "fail"


def test_shared_mounts_need_a_shared_file_system(tmp_path: Path, nodes: NodePlan) -> None:
    point = tmp_path / "ranktable"
    point.mkdir()
    mount = dict(nodes.shared_mounts[0], path=str(point))
    info = tmp_path / "mountinfo"
    info.write_text("22 1 0:21 / / rw - overlay overlay rw\n")
    assert nd.mount_checks([mount], str(info))[0].found.startswith("not mounted")
    info.write_text(info.read_text() + "40 22 0:50 / %s rw - nfs4 srv:/x rw\n" % point)
    assert nd.mount_checks([mount], str(info))[0].status == "ok"


def test_roles_select_the_checks(nodes: NodePlan) -> None:
    compute = [c.name for c in nd.run_node_checks(nodes, ["compute"])]
    management = [c.name for c in nd.run_node_checks(nodes, ["management"])]
    assert {"reserved ports", "ascend-docker-runtime", "NPU driver", "/etc/vnpu.cfg"} <= set(compute)
    assert not {"reserved ports", "ascend-docker-runtime", "NPU driver", "/etc/vnpu.cfg"} & set(management)
    assert "/var/log/mindx-dl/clusterd" in management and "/var/log/mindx-dl/clusterd" not in compute
    no_hdk = dataclasses.replace(nodes, hdk=None)
    assert "NPU driver" not in [c.name for c in nd.run_node_checks(no_hdk, ["compute"])]


def test_cli_node_mode_needs_no_job_and_exits_1_on_a_failure() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "resumable",
            "doctor",
            "--profile",
            str(PROFILE),
            "--node",
            "management",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    doc = json.loads(out.stdout)
    assert doc["job"] == "node (management)" and doc["checks"][0]["name"] == "python"
    assert out.returncode == (0 if doc["ok"] else 1)
    bad = subprocess.run(
        [sys.executable, "-m", "resumable", "doctor", "--profile", str(PROFILE), "--node", "worker"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2


CHECK_IN_A_CHILD = """
import sys
from resumable.runtime import node_doctor as nd
fifo, binary, sysctl = sys.argv[1:4]
print(nd.driver_check("25.2.0", fifo).found)
print(nd.runtime_check({"version": "7.3.0", "binary": binary}).found)
print(nd.reserved_ports_check([9601], sysctl).found)
"""


def test_records_that_are_special_files_never_hang_the_node_check(tmp_path: Path) -> None:
    """The driver's version.info, the runtime's install.info and the reserved-ports sysctl are read
    through the bounded reader: a FIFO there hung ``doctor --node`` (run in a child with a timeout)."""
    fifo = tmp_path / "version.info"
    os.mkfifo(str(fifo))
    binary = tmp_path / "ascend-docker-runtime"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    os.mkfifo(str(tmp_path / nd.RUNTIME_INFO_NAME))
    proc = subprocess.run(
        [sys.executable, "-c", CHECK_IN_A_CHILD, str(fifo), str(binary), str(fifo)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "not installed",
        "no install.info",
        "unreadable (is a FIFO (named pipe); resumable reads a sysctl only from a regular file)",
    ]
