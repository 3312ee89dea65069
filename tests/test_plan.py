"""The plan: what each example and each release implies for every layer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml

from resumable.plan import build_plan
from resumable.plan.model import JobPlan, Plan
from resumable.profile import load_profile, parse_profile

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def plan_of(name: str) -> Plan:
    path = EXAMPLES / name
    return build_plan(load_profile(str(path)), str(path))


def env_of(job: JobPlan, replica: int = 0) -> Dict[str, Any]:
    return {e.name: (e.value if e.field_path is None else "<%s>" % e.field_path) for e in job.replicas[replica].env}


def variant(name: str, **changes: Any) -> Plan:
    """The example ``name`` with dotted-path changes (``jobs.0.recovery.strategies=[...]``)."""
    doc = yaml.safe_load((EXAMPLES / name).read_text())
    for dotted, value in changes.items():
        node = doc
        parts = dotted.split("__")
        for part in parts[:-1]:
            node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
        node[parts[-1]] = value
    return build_plan(parse_profile(yaml.safe_dump(doc), name), name)


def test_process_recovery_json_has_every_acceptance_item() -> None:
    """The issue's acceptance list, read from `resumable plan ... --format json` itself."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "resumable",
            "plan",
            str(EXAMPLES / "pytorch-process-recovery.yaml"),
            "--format",
            "json",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    plan = json.loads(out)
    job = plan["jobs"][0]
    for replica in job["replicas"]:
        assert {"name": "taskd-port", "container_port": 9601} in [
            {"name": p["name"], "container_port": p["container_port"]} for p in replica["ports"]
        ]
        env = {e["name"]: e["value"] for e in replica["env"]}
        assert env["HCCL_ASYNC_ERROR_HANDLING"] == "0"
        assert env["ASCEND_CACHE_PATH"] == "/job/op_cache"
        assert env["ASCEND_MAX_OP_CACHE_SIZE"] == "-1"
    assert job["labels"]["fault-scheduling"] == "grace"
    assert job["annotations"]["recover-strategy"] == "recover,recover-in-place,dump,exit"
    managers = [r["type"] for r in job["replicas"] if r["runs_taskd_manager"]]
    assert managers == ["Master"]
    assert job["launcher"]["taskd_manager"]["where"] == "rank0"
    assert job["launcher"]["taskd_manager"]["condition"] == '[[ "${RANK}" == 0 ]]'
    assert any(p.endswith("taskd/python/cython_api/libs/libtaskd.so") for p in job["launcher"]["ld_preload"])
    assert "--monitor_interval=1" in job["launcher"]["args"]
    assert plan["scheduler"]["hot_reset"] == 2


def test_taskd_manager_config_comes_from_the_job() -> None:
    m = plan_of("pytorch-process-recovery.yaml").jobs[0].launcher.taskd_manager
    assert (m.job_id_env, m.node_nums, m.proc_per_node) == ("MINDX_TASK_ID", 4, 8)


def test_every_replica_of_a_taskd_job_declares_the_taskd_port() -> None:
    for name in ("pytorch-process-recovery.yaml", "pytorch-pod-rescheduling.yaml", "mindspore-process-recovery.yaml"):
        for replica in plan_of(name).jobs[0].replicas:
            assert ("taskd-port", 9601) in [(p.name, p.container_port) for p in replica.ports], (name, replica.type)


def test_pod_level_only_keeps_watchdog_and_turns_taskd_process_off() -> None:
    job = plan_of("pytorch-pod-rescheduling.yaml").jobs[0]
    env = env_of(job)
    assert env["HCCL_ASYNC_ERROR_HANDLING"] == "1"
    assert env["TASKD_PROCESS_ENABLE"] == "off"
    assert job.labels["pod-rescheduling"] == "on"
    assert "recover-strategy" not in job.annotations
    assert job.launcher.jit_compile is False
    assert "ASCEND_CACHE_PATH" not in env
    assert job.image.runpy_patch == "import taskd.python.adaptor.patch" and job.image.runpy_anchor == "import os"
    assert "--max_restarts=5" in job.launcher.args


def test_legacy_release_patches_runpy_with_mindx_elastic_before_import_logging() -> None:
    job = plan_of("legacy-6.0-pod-rescheduling.yaml").jobs[0]
    assert job.image.runpy_patch == "import mindx_elastic.api"
    assert job.image.runpy_anchor == "import logging"
    assert [w.name for w in job.image.wheels] == ["mindx_elastic", "mindio_ttp"]
    assert not job.launcher.taskd_manager.enabled
    assert "TASKD_PROCESS_ENABLE" not in env_of(job)


def test_mindspore_manager_runs_on_the_scheduler_pod() -> None:
    job = plan_of("mindspore-process-recovery.yaml").jobs[0]
    assert [r.type for r in job.replicas] == ["Scheduler", "Worker"]
    assert [r.runs_taskd_manager for r in job.replicas] == [True, False]
    assert job.launcher.taskd_manager.condition == '[[ "${MS_SCHED_HOST}" == "${POD_IP}" ]]'
    assert job.launcher.launcher == "msrun"
    env = env_of(job)
    assert env["MS_ENABLE_THM"] == "{HCCL_WATCHDOG:0}"
    assert "HCCL_ASYNC_ERROR_HANDLING" not in env
    assert job.image.runpy_patch is None


def test_job_level_minimal_has_no_taskd() -> None:
    job = plan_of("job-level-minimal.yaml").jobs[0]
    assert job.levels == ["job"]
    assert not any(p.name == "taskd-port" for p in job.replicas[0].ports)
    assert job.launcher.ld_preload == []
    assert env_of(job)["HCCL_ASYNC_ERROR_HANDLING"] == "1"
    assert job.labels["fault-retry-times"] == "5"


@pytest.mark.parametrize(
    "release,expected",
    [("7.2.RC1", "on"), ("7.3.0", "on"), ("26.0.0", "on")],
)
def test_taskd_process_enable_for_process_level_by_release(release: str, expected: str) -> None:
    plan = variant(
        "pytorch-process-recovery.yaml",
        cluster__mindcluster=release,
        jobs__0__image__taskd=release,
        jobs__0__image__mindio_ttp=release,
    )
    assert env_of(plan.jobs[0])["TASKD_PROCESS_ENABLE"] == expected


def test_before_7_2_the_job_carries_the_recovery_env_itself() -> None:
    plan = variant(
        "pytorch-process-recovery.yaml",
        cluster__mindcluster="7.1.RC1",
        jobs__0__image__taskd="7.1.RC1",
        jobs__0__image__mindio_ttp="7.1.RC1",
        jobs__0__image__mindx_elastic="7.1.RC1",
        jobs__0__image__wheels={},
    )
    job = plan.jobs[0]
    env = env_of(job)
    assert env["PROCESS_RECOVER"] == "on"
    assert env["ELASTIC_PROCESS_RECOVER_ENABLE"] == "1"
    assert env["ENABLE_RESTART_FAULT_PROCESS"] == "on"
    assert "TASKD_PROCESS_ENABLE" not in env
    assert job.labels["process-recover-enable"] == "on"
    assert job.image.runpy_patch == "import mindx_elastic.api"
    assert job.launcher.taskd_manager.where == "rank0"
    assert not [v for v in plan.violations if v.severity == "error"]


def test_from_7_2_the_operator_injects_it() -> None:
    job = plan_of("pytorch-process-recovery.yaml").jobs[0]
    env = env_of(job)
    assert "PROCESS_RECOVER" not in env and "process-recover-enable" not in job.labels
    assert any("injects" in n.text for n in job.notes)


def test_prefix_store_note_for_torch_2_6_on_7_2() -> None:
    plan = variant(
        "pytorch-process-recovery.yaml",
        cluster__mindcluster="7.2.RC1",
        jobs__0__image__taskd="7.2.RC1",
        jobs__0__image__mindio_ttp="7.2.RC1",
        jobs__0__image__mindx_elastic="7.2.RC1",
    )
    assert any("PrefixStore" in n.text for n in plan.jobs[0].image.notes)
    assert not any("PrefixStore" in n.text for n in plan_of("pytorch-process-recovery.yaml").jobs[0].image.notes)


def test_scheduler_plan() -> None:
    s = plan_of("pytorch-process-recovery.yaml").scheduler
    assert s.volcano_plugin_name == "volcano-npu_v7.3.0_linux-aarch64"
    assert (s.report_interval, s.list_watch_period, s.grace_over_time, s.hot_reset) == (5, 5, 900, 2)
    assert s.stack_release == "7.3.0"
    # no process-level job: no -hotReset at all (the plugin's default, off)
    assert plan_of("job-level-minimal.yaml").scheduler.hot_reset is None


def test_service_pack_release_deploys_its_base_stack() -> None:
    s = plan_of("legacy-6.0-pod-rescheduling.yaml").scheduler
    assert s.release == "6.0.0.SPC1" and s.stack_release == "6.0.0"


def test_node_plan() -> None:
    n = plan_of("pytorch-process-recovery.yaml").nodes
    assert n.labels["nodeDEnable"] == "on"
    assert n.labels["host-arch"] == "huawei-arm"
    assert n.labels["accelerator-type"] == "module-910b-8"
    assert {u["name"]: u["uid"] for u in n.users} == {"HwHiAiUser": 1000, "hwMindX": 9000}
    assert n.reserved_ports == []
    host = variant("pytorch-process-recovery.yaml", cluster__host_network=True)
    assert host.nodes.reserved_ports == [9601, 9602]
    assert env_of(host.jobs[0])["HCCL_IF_IP"] == "<status.hostIP>"


def test_shared_volumes_and_mounts() -> None:
    plan = plan_of("pytorch-process-recovery.yaml")
    by_purpose = {v.mount_path: v for v in plan.storage}
    assert by_purpose["/job/op_cache"].path == "/exports/ascend/op-cache"
    mounts = {v.name: v for v in plan.jobs[0].volumes}
    assert mounts["op-cache"].claim_name == by_purpose["/job/op_cache"].name
    assert mounts["op-cache"].mount_path == "/job/op_cache"
    assert "checkpoints" in mounts


def test_ranktable_volume_is_named_ranktable() -> None:
    job = variant("pytorch-process-recovery.yaml", jobs__0__ranktable=True).jobs[0]
    vol = [v for v in job.volumes if v.name == "ranktable"]
    assert vol and vol[0].mount_path == "/user/serverid/devindex/config"
    assert vol[0].path == "/user/mindx-dl/ranktable/training.llama-pretrain"
    assert env_of(job)["RANK_TABLE_FILE"] == "/user/serverid/devindex/config/hccl.json"


def test_profile_env_cannot_override_what_the_plan_owns() -> None:
    job = variant(
        "pytorch-process-recovery.yaml", jobs__0__env={"FOO": "1", "ASCEND_CACHE_PATH": "/job/op_cache"}
    ).jobs[0]
    names: List[str] = [e.name for e in job.replicas[0].env]
    assert names.count("ASCEND_CACHE_PATH") == 1 and "FOO" in names


def _total(line: Any) -> float:
    return float(sum(t.seconds for t in line.terms))


def test_budget_ladder_is_ordered_and_beats_the_baseline() -> None:
    b = plan_of("pytorch-process-recovery.yaml").jobs[0].budget
    assert [line.level for line in b.ladder] == ["recover-in-place", "recover", "dump", "job"]
    for line in [*b.ladder, b.baseline]:
        assert [t.name for t in line.terms] == [
            "detect",
            "T0 rollback",
            "T1 reschedule",
            "T2 comm init",
            "T3 ckpt load",
            "T4 compile",
        ]
        assert abs(line.total_seconds - _total(line)) < 0.2
        assert all(t.source and t.assumption for t in line.terms)
    assert all(line.total_seconds < b.baseline.total_seconds for line in b.ladder)
    assert b.best_saving_seconds >= b.worst_saving_seconds > 0


def test_budget_follows_the_profile() -> None:
    slow = variant("pytorch-process-recovery.yaml", jobs__0__checkpoint={"interval_minutes": 120, "dump": True})
    fast = plan_of("pytorch-process-recovery.yaml")
    rollback = {line.level: line.terms[1].seconds for line in slow.jobs[0].budget.ladder}
    assert slow.jobs[0].budget.baseline.terms[1].seconds == 3600
    assert fast.jobs[0].budget.baseline.terms[1].seconds == 900
    assert rollback["recover"] == 10  # one step, whatever the interval
    binaries = variant("pytorch-process-recovery.yaml", jobs__0__compile={"mode": "binaries"})
    assert all(line.terms[5].seconds == 0 for line in binaries.jobs[0].budget.ladder)
    watchdog = plan_of("job-level-minimal.yaml").jobs[0].budget
    assert watchdog.ladder[0].terms[0].seconds < watchdog.baseline.terms[0].seconds
