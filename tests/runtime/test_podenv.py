"""What ``resumable launch`` derives on a pod beyond the job controller's env (runtime.podenv):
the MindIO controller address per rank, msrun node ranks that cannot collide, a Volcano Job's
rendezvous from its RankTable, TaskD's 0750 log directory. Each case follows an upstream file, named
in its docstring."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml
from conftest import EXAMPLES

from resumable import constants as C
from resumable.api import job_plan, load_plan_text
from resumable.runtime import installed
from resumable.runtime.launch import LaunchSpec, build_spec, render_dry_run
from resumable.runtime.podenv import private_dir, wait_for_ranktable

from . import test_launch_spec as launch_tests
from .conftest import clean_env, cli

# the pod of the launcher tests: fixture TaskD, patched run.py, launchers on PATH; POD is what the Ascend
# Operator injects on a PyTorch pod (env.go setPytorchEnv: MASTER_ADDR = the Master service's IP)
pod = launch_tests.pod
POD, dry_run, exports = launch_tests.POD, launch_tests.dry_run, launch_tests.exports

MS = {"MS_SCHED_HOST": "10.96.0.20", "MS_SCHED_PORT": "2222", "MS_WORKER_NUM": "16", "MS_LOCAL_WORKER": "8"}


def launch_line(out: str) -> List[str]:
    return [line for line in out.splitlines() if line and not line.startswith(("#", "export"))][-1].split()


def variant(tmp_path: Path, example: str, **changes: Any) -> Path:
    """The example with job fields changed, next to the original (the wheel paths stay relative)."""
    doc = yaml.safe_load((EXAMPLES / f"{example}.yaml").read_text())
    doc["jobs"][0].update(changes)
    for wheel in doc["jobs"][0].get("image", {}).get("wheels", {}).values():
        wheel["file"] = str(EXAMPLES / wheel["file"])
    path = tmp_path / f"{example}-variant.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


# --- MindIO TTP controller address ------------------------------------------------------------------------


def test_pytorch_ttp_addr_rank0_is_the_pod_and_others_the_master(pod: Dict[str, str]) -> None:
    """MCD:samples/train/resumable-training/fault-tolerance/without-ranktable/pytorch/Qwen3/train_start.sh:
    RANK 0 exports TTP_ADDR=$POD_IP, the others TTP_ADDR=$MASTER_ADDR; MindSpeed-LLM
    mindspeed_llm/core/high_availability/tft_train_initialize.py connects to TTP_ADDR (default 127.0.0.1,
    where no controller runs under TaskD: taskd framework/manager/controller.py starts it on rank 0)."""
    profile = EXAMPLES / "pytorch-process-recovery.yaml"
    code, out, err = dry_run(profile, dict(pod, RANK="0", **POD))
    assert code == 0, out + err
    assert exports(out)["TTP_ADDR"] == "10.0.0.5"
    code, out, err = dry_run(profile, dict(pod, RANK="1", **POD))
    assert code == 0, out + err
    assert exports(out)["TTP_ADDR"] == "10.96.0.10"


def test_a_ttp_addr_the_profile_sets_is_kept(pod: Dict[str, str], tmp_path: Path) -> None:
    doc = yaml.safe_load((EXAMPLES / "pytorch-process-recovery.yaml").read_text())
    profile = variant(tmp_path, "pytorch-process-recovery", env={"TTP_ADDR": "10.1.1.1"})
    assert doc["jobs"][0].get("env") is None
    code, out, err = dry_run(profile, dict(pod, RANK="1", **POD))
    assert code == 0, out + err
    assert exports(out)["TTP_ADDR"] == "10.1.1.1"


def test_no_ttp_addr_without_mindio(pod: Dict[str, str]) -> None:
    code, out, err = dry_run(EXAMPLES / "job-level-minimal.yaml", dict(pod, RANK="1", **POD))
    assert code == 0, out + err
    assert "TTP_ADDR" not in exports(out)


def test_mindspore_tft_ip_and_port(pod: Dict[str, str]) -> None:
    """MCD:.../fault-tolerance/ranktable/mindspore/Qwen3/msrun_launcher.sh: MS_TFT_IP=$MS_SCHED_HOST,
    MS_TFT_PORT=the TTP port; MindSpore utils.py TftHandle.init reads both (int(MS_TFT_PORT): unset
    fails)."""
    env = dict(pod, MS_ROLE="MS_WORKER", MS_NODE_RANK="1", NPU_POD="true", **MS)
    code, out, err = dry_run(EXAMPLES / "mindspore-process-recovery.yaml", env)
    assert code == 0, out + err
    assert exports(out)["MS_TFT_IP"] == "10.96.0.20"
    assert exports(out)["MS_TFT_PORT"] == str(C.TTP_PORT_DEFAULT)


# --- msrun topology -------------------------------------------------------------------------------------


def test_the_scheduler_is_msrun_node_0(pod: Dict[str, str]) -> None:
    """With NPUs on the Scheduler the operator sets MS_NODE_RANK 0 there and 1.. on the Workers
    (ascend-operator pkg/controllers/v1/pod.go createPodSpec at 7.3.0 and 26.1.0)."""
    env = dict(pod, MS_ROLE="MS_SCHED", MS_NODE_RANK="0", NPU_POD="true", **dict(MS, MS_SCHED_HOST="10.0.0.5"))
    code, out, err = dry_run(EXAMPLES / "mindspore-process-recovery.yaml", env)
    assert code == 0, out + err
    assert "--node_rank=0" in launch_line(out) and "--local_worker_num=8" in launch_line(out)


@pytest.mark.parametrize(
    "role, rank, npu_pod, says",
    [
        ("MS_WORKER", "0", "true", "MS_NODE_RANK=0 on a Worker pod"),
        ("MS_SCHED", "0", "false", "NPU_POD=false: this pod (MS_ROLE=MS_SCHED) has no NPUs"),
        ("MS_WORKER", "2", "true", "MS_NODE_RANK=2 is outside 0..1"),
    ],
)
def test_a_colliding_msrun_layout_is_refused(
    pod: Dict[str, str], role: str, rank: str, npu_pod: str, says: str
) -> None:
    """The operator's layout when the Scheduler requests no NPUs: Scheduler and Worker-0 both
    MS_NODE_RANK=0, NPU_POD=false on the Scheduler (env.go setMindSporeEnv; pod.go createPodSpec;
    utils.go checkNonWorkerRplMountChips). The launch stops with exit 2 and one paragraph."""
    env = dict(pod, MS_ROLE=role, MS_NODE_RANK=rank, NPU_POD=npu_pod, **MS)
    profile = str(EXAMPLES / "mindspore-process-recovery.yaml")
    proc = cli(["launch", "--profile", profile, "--", "run.py"], env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert says in proc.stderr and "resumable render" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# --- Volcano Job ------------------------------------------------------------------------------------------


def ranktable(path: Path, status: str, ips: List[str]) -> Path:
    """hccl.json as the RankTable writer lays it out (ascend-operator pkg/ranktable/common/server.go:
    server_id, host_ip, container_ip, device[] with rank_id; common.go getDeviceList)."""
    servers = [
        {
            "server_id": "192.168.1.%d" % (i + 1),
            "host_ip": "192.168.1.%d" % (i + 1),
            "container_ip": ip,
            "device": [
                {"device_id": str(d), "device_ip": "10.9.%d.%d" % (i, d), "rank_id": str(i * 8 + d)} for d in range(8)
            ],
        }
        for i, ip in enumerate(ips)
    ]
    doc = {"status": status, "server_list": servers, "server_count": str(len(ips)), "version": "1.0"}
    path.write_text(json.dumps(doc))
    return path


def vcjob_spec(tmp_path: Path, table: Path, env: Dict[str, str], monkeypatch: pytest.MonkeyPatch) -> LaunchSpec:
    """The launch a pod of job-level-minimal as a Volcano Job would run, with the RankTable that the
    rings-config ConfigMap mounts at /user/serverid/devindex/config/hccl.json placed at ``table``."""
    monkeypatch.setattr(installed, "find_command", lambda name: "/usr/bin/" + name)
    doc = yaml.safe_load((EXAMPLES / "job-level-minimal.yaml").read_text())
    doc["jobs"][0]["kind"] = "vcjob"
    job = job_plan(load_plan_text(yaml.safe_dump(doc), "<vcjob>"))
    mounted = C.RANKTABLE_MOUNT + "/" + C.RANKTABLE_FILE
    for replica in job.replicas:
        for var in replica.env:
            if var.name == C.ENV_RANK_TABLE_FILE:
                assert var.value == mounted
                var.value = str(table)
    return build_spec(job, env, ["train.py"])


def test_a_volcano_job_launches_from_its_ranktable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No operator injects anything into a Volcano Job's pods; the upstream vcjob scripts wait for a
    completed RankTable, find their server in it and take node rank, master and world size from it
    (MCD:samples/train/resumable-training/fault-tolerance/ranktable/pytorch/gpt-3/rank_table.sh
    check_hccl_status, get_server_id, get_server_id_0_ip; train_start.sh MASTER_PORT 7123)."""
    table = ranktable(tmp_path / "hccl.json", "completed", ["10.0.0.4", "10.0.0.5"])
    spec = vcjob_spec(tmp_path, table, {"POD_IP": "10.0.0.5", "XDL_IP": "192.168.1.2"}, monkeypatch)
    assert spec.problems == []
    got = spec.env
    assert (got["RANK"], got["MASTER_ADDR"], got["MASTER_PORT"]) == ("1", "10.0.0.4", "7123")
    assert (got["WORLD_SIZE"], got["LOCAL_WORLD_SIZE"]) == ("16", "8")
    assert spec.command[1:6] == [
        "--nproc_per_node=8",
        "--nnodes=2",
        "--node_rank=1",
        "--master_addr=10.0.0.4",
        "--master_port=7123",
    ]
    assert spec.log_dir == "/job/ckpt/alllogs/bert-job-level/resumable", "named after the job: no MINDX_TASK_ID"
    out = render_dry_run(spec, "<vcjob>")
    assert "#   RANK_TABLE_FILE=" in out and "export RANK=1  # this pod's place in server_list" in out
    # hostNetwork: the pod is found by its host address (rank_table.sh get_server_id by XDL_IP)
    spec = vcjob_spec(tmp_path, table, {"POD_IP": "192.168.1.1", "XDL_IP": "192.168.1.1"}, monkeypatch)
    assert spec.problems == [] and spec.env["RANK"] == "0"


MS_VCJOB = """
cluster: {mindcluster: "7.3.0", chip: ascend-910b, accelerator_type: module-910b-8, arch: aarch64, kubernetes: "1.28"}
storage: {nfs: {server: 192.0.2.10, path: /exports/ascend}}
jobs:
  - name: ms-vc
    kind: vcjob
    image: {framework: mindspore, mindspore: "2.7.0", cann: "8.2.RC1"}
    nodes: 2
    npus_per_node: 8
    launcher: msrun
    script: run.py
    recovery: {fault_scheduling: grace}
"""


def test_a_mindspore_volcano_job_gets_msrun_ranks_from_its_ranktable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same derivation for msrun: node 0 (the first server) hosts msrun's scheduler."""
    monkeypatch.setattr(installed, "find_command", lambda name: "/usr/bin/" + name)
    job = job_plan(load_plan_text(MS_VCJOB, "<ms-vcjob>"))
    table = ranktable(tmp_path / "hccl.json", "completed", ["10.0.0.4", "10.0.0.5"])
    spec = build_spec(job, {"RANK_TABLE_FILE": str(table), "POD_IP": "10.0.0.4"}, ["run.py"])
    # the plan's RANK_TABLE_FILE is the mount path; outside a pod the test's file stands in for it
    assert spec.env["RANK_TABLE_FILE"] == C.RANKTABLE_MOUNT + "/" + C.RANKTABLE_FILE
    for replica in job.replicas:
        for var in replica.env:
            if var.name == C.ENV_RANK_TABLE_FILE:
                var.value = str(table)
    spec = build_spec(job, {"POD_IP": "10.0.0.4"}, ["run.py"])
    assert spec.problems == []
    assert spec.command[1:7] == [
        "--worker_num=16",
        "--local_worker_num=8",
        "--master_addr=10.0.0.4",
        "--master_port=7123",
        "--node_rank=0",
        "--join=True",
    ]


def test_an_unfinished_ranktable_or_a_stranger_pod_is_a_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = ranktable(tmp_path / "hccl.json", "initializing", [])
    spec = vcjob_spec(tmp_path, table, {"POD_IP": "10.0.0.5"}, monkeypatch)
    assert any("has status 'initializing', not 'completed'" in p for p in spec.problems)
    table = ranktable(tmp_path / "hccl.json", "completed", ["10.0.0.4", "10.0.0.6"])
    spec = vcjob_spec(tmp_path, table, {"POD_IP": "10.0.0.5", "XDL_IP": "192.168.9.9"}, monkeypatch)
    assert any("is not in the server_list of the RankTable" in p for p in spec.problems)
    table = ranktable(tmp_path / "hccl.json", "completed", ["10.0.0.4", "10.0.0.5", "10.0.0.6"])
    spec = vcjob_spec(tmp_path, table, {"POD_IP": "10.0.0.5"}, monkeypatch)
    assert any("lists 3 servers" in p and "the plan has 2 nodes" in p for p in spec.problems)


def test_a_volcano_job_with_the_taskd_manager_is_refused_by_validate(tmp_path: Path) -> None:
    """The TaskD Manager registers MINDX_TASK_ID, the job UID only the Ascend Operator injects
    (ascend-operator env.go setCommonEnv): the Pod-level example as a Volcano Job cannot recover."""
    profile = variant(tmp_path, "pytorch-pod-rescheduling", kind="vcjob")
    proc = cli(["validate", str(profile)], clean_env())
    assert proc.returncode == 2
    assert "vcjob-launch" in proc.stderr and "MINDX_TASK_ID" in proc.stderr


# --- TaskD log directory ----------------------------------------------------------------------------------


def test_taskd_log_dir_is_created_0750_whatever_the_umask(tmp_path: Path) -> None:
    """TaskD's logger raises at import unless TASKD_LOG_PATH has exactly mode 0750
    (MC:component/taskd/taskd/python/utils/log/logger.py build_log_path;
    utils/validator/validators.py check_directory_permissions: mode == 0o750)."""
    old = os.umask(0o077)
    try:
        assert private_dir(str(tmp_path / "a" / "taskd")) is None
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "a" / "taskd").st_mode) == 0o750
    wide = tmp_path / "wide"
    wide.mkdir(mode=0o755)
    os.chmod(wide, 0o755)
    problem = private_dir(str(wide))
    assert problem is not None and "needs exactly 0750" in problem
    assert stat.S_IMODE(os.stat(wide).st_mode) == 0o755, "a directory we did not create is not changed"
    os.symlink(tmp_path / "a" / "taskd", tmp_path / "link")
    assert "symlink" in (private_dir(str(tmp_path / "link")) or "")


def test_the_dry_run_names_the_taskd_log_dir(pod: Dict[str, str]) -> None:
    code, out, err = dry_run(EXAMPLES / "pytorch-process-recovery.yaml", dict(pod, RANK="1", **POD))
    assert code == 0, out + err
    assert exports(out)["TASKD_LOG_PATH"] == "/job/ckpt/alllogs/3f0c-uid/taskd"
    assert "# created with mode 0750 before the start (TaskD's logger needs exactly that): /job/ckpt/alllogs/" in out


def test_a_real_launch_waits_for_the_ranktable_bounded(tmp_path: Path) -> None:
    """rank_table.sh check_hccl_status: up to 60 polls 5 s apart until status is completed (MCD vcjob
    sample); the launcher waits the same bounded time, then build_spec names what is missing."""
    doc = yaml.safe_load((EXAMPLES / "job-level-minimal.yaml").read_text())
    doc["jobs"][0]["kind"] = "vcjob"
    job = job_plan(load_plan_text(yaml.safe_dump(doc), "<vcjob>"))
    table = ranktable(tmp_path / "hccl.json", "initializing", [])
    env = {"RANK_TABLE_FILE": str(table)}
    now = [0.0]
    polls: List[float] = []

    def sleep(seconds: float) -> None:
        polls.append(seconds)
        now[0] += seconds
        if len(polls) == 3:
            ranktable(table, "completed", ["10.0.0.4", "10.0.0.5"])

    assert wait_for_ranktable(job, env, sleep=sleep, clock=lambda: now[0]) is True
    assert polls == [5.0, 5.0, 5.0]
    ranktable(table, "initializing", [])
    now[0], polls[:] = 0.0, []
    assert (
        wait_for_ranktable(job, env, timeout=300, sleep=lambda s: now.__setitem__(0, now[0] + s), clock=lambda: now[0])
        is False
    )
    assert now[0] == 300.0
    ascendjob = job_plan(load_plan_text((EXAMPLES / "job-level-minimal.yaml").read_text(), "<acjob>"))
    assert wait_for_ranktable(ascendjob, env, sleep=lambda s: pytest.fail("an AscendJob does not wait")) is False


def test_log_dir_moves_taskds_logs_too(pod: Dict[str, str], tmp_path: Path) -> None:
    """--log-dir (outside a job) keeps every file the launch makes under it, TaskD's directory too."""
    proc = cli(
        [
            "launch",
            "--profile",
            str(EXAMPLES / "pytorch-process-recovery.yaml"),
            "--dry-run",
            "--log-dir",
            str(tmp_path),
        ],
        dict(pod, RANK="1", **POD),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert exports(proc.stdout)["TASKD_LOG_PATH"] == str(tmp_path / "taskd")
    assert "(TaskD's logger needs exactly that): %s" % (tmp_path / "taskd") in proc.stdout
