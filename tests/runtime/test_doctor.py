"""``resumable doctor``: the plan's needs against what a container has (torch's layout and the
fixture vendor wheels stand in for a training image)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
from conftest import EXAMPLES

from resumable import constants as C
from resumable.api import job_plan, load_plan
from resumable.runtime import doctor

from .conftest import GIB, RUN_PY, clean_env, cli, fake_torch_layout, python_path, write

PATCHED = RUN_PY.replace("import os\n", C.RUNPY_IMPORT_TASKD + "\nimport os\n")
PROFILE = EXAMPLES / "pytorch-process-recovery.yaml"


def cann_home(root: Path, version: str) -> Path:
    write(
        root / "aarch64-linux" / "ascend_toolkit_install.info",
        "package_name=Ascend-cann-toolkit\nversion=%s\n" % version,
    )
    return root


def statuses(checks: List[Dict[str, str]]) -> Dict[str, str]:
    return {c["name"]: c["status"] for c in checks}


@pytest.fixture()
def container(tmp_path: Path, vendor_site: Path) -> Dict[str, str]:
    torch = fake_torch_layout(tmp_path / "torch-site", PATCHED, version="2.7.1")
    return clean_env(
        PYTHONPATH=python_path(torch, vendor_site),
        ASCEND_TOOLKIT_HOME=str(cann_home(tmp_path / "cann", "8.5.0")),
        POD_IP="10.0.0.5",
        XDL_IP="192.0.2.1",
    )


def test_doctor_json_in_a_training_container(container: Dict[str, str]) -> None:
    proc = cli(["doctor", "--profile", str(PROFILE), "--format", "json"], container)
    assert proc.returncode == 1, proc.stderr  # torch_npu, the compile cache and HwHiAiUser are missing here
    data = json.loads(proc.stdout)
    assert data["ok"] is False and data["job"] == "llama-pretrain"
    got = statuses(data["checks"])
    assert got["python"] == "ok"
    assert got["torch"] == "ok" and got["CANN"] == "ok" and got["launcher"] in ("ok", "fail")
    assert got["taskd"] == "ok" and got["mindio_ttp"] == "ok"
    assert got["run.py patch"] == "ok" and got["libtaskd.so"] == "ok"
    assert got["torch_npu"] == "fail"
    assert got["env TASKD_PROCESS_ENABLE"] == "ok" and got["env POD_IP"] == "ok"
    assert got["compile cache"] == "fail"
    by_name = {c["name"]: c for c in data["checks"]}
    assert by_name["taskd"]["found"] == "taskd 7.3.0"
    assert by_name["compile cache"]["found"] == "missing"
    assert by_name["user HwHiAiUser"]["wanted"] == "uid=gid=1000"


def test_doctor_table_lists_fixes(container: Dict[str, str]) -> None:
    proc = cli(["doctor", "--profile", str(PROFILE)], container)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("resumable doctor: job llama-pretrain")
    assert lines[1].split()[:4] == ["CHECK", "STATUS", "WANTED", "FOUND"]
    assert any(line.startswith("FAIL compile cache: Mount the shared compile-cache volume") for line in lines)
    assert lines[-1].endswith("warnings") and "failed" in lines[-1]


def test_doctor_finds_what_is_wrong_with_the_image(tmp_path: Path, vendor_site: Path) -> None:
    twice = RUN_PY.replace("import os\n", (C.RUNPY_IMPORT_TASKD + "\n") * 2 + "import os\n")
    torch = fake_torch_layout(tmp_path / "torch-site", twice, version="2.6.0")
    env = clean_env(
        PYTHONPATH=python_path(torch, vendor_site),
        ASCEND_TOOLKIT_HOME=str(cann_home(tmp_path / "cann", "8.3.RC1")),
        HCCL_ASYNC_ERROR_HANDLING="1",
    )
    data = json.loads(cli(["doctor", "--profile", str(PROFILE), "--format", "json"], env).stdout)
    by_name = {c["name"]: c for c in data["checks"]}
    assert by_name["torch"]["status"] == "fail" and by_name["torch"]["found"] == "2.6.0"
    assert by_name["CANN"]["status"] == "fail" and by_name["CANN"]["found"].startswith("8.3.RC1")
    assert by_name["run.py patch"]["status"] == "fail" and "x2" in by_name["run.py patch"]["found"]
    assert by_name["env HCCL_ASYNC_ERROR_HANDLING"]["status"] == "fail"
    assert by_name["env POD_IP"]["status"] == "warn"


def test_doctor_without_taskd(tmp_path: Path) -> None:
    torch = fake_torch_layout(tmp_path / "torch-site", RUN_PY, version="2.7.1")
    data = json.loads(
        cli(["doctor", "--profile", str(PROFILE), "--format", "json"], clean_env(PYTHONPATH=str(torch))).stdout
    )
    got = statuses(data["checks"])
    assert got["taskd"] == "fail" and got["mindio_ttp"] == "fail" and got["libtaskd.so"] == "fail"
    assert got["run.py patch"] == "fail"


def test_an_elastic_agent_line_where_none_belongs_is_a_warning(tmp_path: Path) -> None:
    torch = fake_torch_layout(
        tmp_path / "t", RUN_PY.replace("import os\n", C.RUNPY_IMPORT_MINDX_ELASTIC + "\nimport os\n")
    )
    data = json.loads(
        cli(
            ["doctor", "--profile", str(EXAMPLES / "job-level-minimal.yaml"), "--format", "json"],
            clean_env(PYTHONPATH=str(torch)),
        ).stdout
    )
    by_name = {c["name"]: c for c in data["checks"]}
    assert by_name["run.py patch"]["status"] == "warn" and "--undo" in by_name["run.py patch"]["fix"]


def test_compile_cache_must_be_shared(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
        "40 22 0:50 / %s rw,relatime shared:30 - nfs4 192.0.2.10:/exports/ascend rw,vers=4.1\n" % cache,
        encoding="utf-8",
    )
    check = doctor._cache_check(str(cache), str(mountinfo))
    assert check.status == doctor.OK and "nfs4 at %s" % cache in check.found
    local = tmp_path / "local"
    local.mkdir()
    check = doctor._cache_check(str(local), str(mountinfo))
    assert check.status == doctor.FAIL and "ext4 at / is local" in check.found
    assert doctor._cache_check(str(tmp_path / "none"), str(mountinfo)).found == "missing"
    fuse = tmp_path / "mountinfo-fuse"
    fuse.write_text("41 22 0:51 / %s rw - fuse.juicefs jfs rw\n" % local, encoding="utf-8")
    assert doctor._cache_check(str(local), str(fuse)).status == doctor.OK


def test_the_run_user_needs_one_fixed_id() -> None:
    job = job_plan(load_plan(str(PROFILE)))
    root = dataclasses.replace(job, image=dataclasses.replace(job.image, user="root", uid=0))
    checks = {c.name: c for c in doctor.run_checks(root, {})}
    assert checks["user root"].status == doctor.OK
    other = dataclasses.replace(job, image=dataclasses.replace(job.image, user="root", uid=1000))
    checks = {c.name: c for c in doctor.run_checks(other, {})}
    assert checks["user root"].status == doctor.FAIL and checks["user root"].found == "uid=0 gid=0"
    absent = dataclasses.replace(job, image=dataclasses.replace(job.image, user="no-such-user-here"))
    checks = {c.name: c for c in doctor.run_checks(absent, {})}
    assert checks["user no-such-user-here"].found == "missing"


def test_python_version_is_checked() -> None:
    job = job_plan(load_plan(str(EXAMPLES / "mindspore-process-recovery.yaml")))
    checks = {c.name: c for c in doctor.run_checks(job, dict(os.environ))}
    assert checks["python"].status == doctor.OK and checks["python"].found.startswith("%d.%d" % sys.version_info[:2])
    assert checks["mindspore"].status == doctor.FAIL  # the plan names MindSpore 2.7.0, none is installed here
    assert "run.py patch" not in checks


# --- files and values it cannot trust (issue 25) ----------------------------------------------------------


def checks_of(proc: subprocess.CompletedProcess[str]) -> Dict[str, Dict[str, str]]:
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return {c["name"]: c for c in json.loads(proc.stdout)["checks"]}


def test_special_files_are_reported_not_read(container: Dict[str, str], tmp_path: Path) -> None:
    """The CANN install record and run.py through the bounded reader: a FIFO hung doctor, a run.py
    that is not UTF-8 was exit 3, one linked to /dev/zero was read for ever. Each is now a failed
    check naming what it is."""
    argv = ["doctor", "--profile", str(PROFILE), "--format", "json"]
    info = Path(container["ASCEND_TOOLKIT_HOME"]) / "aarch64-linux" / "ascend_toolkit_install.info"
    info.unlink()
    os.mkfifo(str(info))
    cann = checks_of(cli(argv, container, timeout=30, memory=GIB))["CANN"]
    assert cann["status"] == "fail" and "FIFO" in cann["found"], cann
    run_py = Path(container["PYTHONPATH"].split(":")[0]) / "torch" / "distributed" / "run.py"
    for kind, says in [("fifo", "FIFO"), ("dev-zero", "character device"), ("latin-1", "not UTF-8")]:
        run_py.unlink()
        if kind == "fifo":
            os.mkfifo(str(run_py))
        elif kind == "dev-zero":
            run_py.symlink_to("/dev/zero")
        else:
            run_py.write_bytes(b"import os\n# caf\xe9\n")
        patch = checks_of(cli(argv, container, timeout=30, memory=GIB))["run.py patch"]
        assert patch["status"] == "fail" and says in patch["found"], patch
    # the package metadata importlib would read whole (a FIFO named METADATA blocked it)
    metadata = Path(container["PYTHONPATH"].split(":")[0]) / "torch-2.7.1.dist-info" / "METADATA"
    metadata.unlink()
    os.mkfifo(str(metadata))
    torch = checks_of(cli(argv, container, timeout=30, memory=GIB))["torch"]
    assert torch["status"] == "fail" and torch["found"] == "not installed", torch


def test_values_it_prints_are_escaped(container: Dict[str, str]) -> None:
    """An environment value with a control character or undecodable bytes is shown escaped, in the
    table and in JSON (was: exit 3, UnicodeEncodeError, on a UTF-8 stdout)."""
    env = dict(container, PYTHONIOENCODING="utf-8", HCCL_ASYNC_ERROR_HANDLING="\x1b[2J\udcff")
    table = cli(["doctor", "--profile", str(PROFILE)], env)
    assert table.returncode == 1, table.stderr
    assert "\x1b" not in table.stdout and "\\x1b[2J\\udcff" in table.stdout
    got = checks_of(cli(["doctor", "--profile", str(PROFILE), "--format", "json"], env))
    assert got["env HCCL_ASYNC_ERROR_HANDLING"]["found"] == "\x1b[2J\udcff"
