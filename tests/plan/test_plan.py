"""The plan: what each example and each release implies for every layer."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml
from conftest import EXAMPLE_FILES, EXAMPLES

from resumable.api import PlanError, load_plan
from resumable.errors import ProfileError
from resumable.plan import build_plan
from resumable.plan.model import JobPlan, Plan
from resumable.profile import Recovery, load_profile, parse_profile
from resumable.rules import REGISTRY


def plan_of(name: str) -> Plan:
    path = EXAMPLES / name
    return build_plan(load_profile(str(path)), str(path))


def plan_json(name: str) -> Dict[str, Any]:
    """`resumable plan EXAMPLE --format json`, as the Ansible roles and job templates read it."""
    out = subprocess.run(
        [sys.executable, "-m", "resumable", "plan", str(EXAMPLES / name), "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: Dict[str, Any] = json.loads(out)
    return result


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
    plan = plan_json("pytorch-process-recovery.yaml")
    job = plan["jobs"][0]
    for replica in job["replicas"]:
        assert {"name": "taskd-port", "container_port": 9601} in [
            {"name": p["name"], "container_port": p["container_port"]} for p in replica["ports"]
        ]
        env = {e["name"]: e["value"] for e in replica["env"]}
        assert "HCCL_ASYNC_ERROR_HANDLING" not in env  # the operator injects it (issue 30)
        assert env["ASCEND_CACHE_PATH"] == "/job/op_cache"
        assert env["ASCEND_MAX_OP_CACHE_SIZE"] == "-1"
    injected = {e["name"]: e["value"] for e in job["operator_env"]}
    assert injected["HCCL_ASYNC_ERROR_HANDLING"] == "0"
    assert {e["name"]: e["value"] for e in job["launcher"]["env"]}["HCCL_ASYNC_ERROR_HANDLING"] == "0"
    assert job["labels"]["fault-scheduling"] == "grace"
    assert job["annotations"]["recover-strategy"] == "recover,recover-in-place,dump,exit"
    managers = [r["type"] for r in job["replicas"] if r["runs_taskd_manager"]]
    assert managers == ["Master"]
    assert job["launcher"]["taskd_manager"]["where"] == "rank0"
    assert job["launcher"]["taskd_manager"]["condition"] == '[[ "${RANK}" == 0 ]]'
    assert any(p.endswith("taskd/python/cython_api/libs/libtaskd.so") for p in job["launcher"]["ld_preload"])
    # issue 31: TaskD's loop reads no --monitor_interval, so the example passes none
    assert not [a for a in job["launcher"]["args"] if a.startswith("--monitor_interval")]
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
    assert "MS_ENABLE_THM" not in env  # the operator injects it (issue 30)
    assert {e.name: e.value for e in job.operator_env}["MS_ENABLE_THM"] == "{HCCL_WATCHDOG:0}"
    assert {e.name: e.value for e in job.launcher.env}["MS_ENABLE_THM"] == "{HCCL_WATCHDOG:0}"
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
    assert any("store prefix" in n.text and "7.2" in n.text for n in plan.jobs[0].image.notes)
    assert plan.jobs[0].launcher.attempt_store_prefix
    assert not any("store prefix" in n.text for n in plan_of("pytorch-process-recovery.yaml").jobs[0].image.notes)


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
    assert by_purpose["/job/op_cache"].path == "/exports/ascend/training/llama-pretrain/op-cache"
    assert by_purpose["/job/op_cache"].name == "llama-pretrain-op-cache"
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


def test_profile_env_that_agrees_is_used_once_and_nothing_is_dropped() -> None:
    env_in = {"FOO": "1", "ASCEND_CACHE_PATH": "/job/op_cache/", "TASKD_LOG_PATH": "/logs/taskd"}
    job = variant("pytorch-process-recovery.yaml", jobs__0__env=env_in).jobs[0]
    names: List[str] = [e.name for e in job.replicas[0].env]
    assert names.count("ASCEND_CACHE_PATH") == 1 and "FOO" in names
    env = env_of(job)
    assert env["ASCEND_CACHE_PATH"] == "/job/op_cache/"  # the user's spelling, not replaced
    assert env["TASKD_LOG_PATH"] == "/logs/taskd"
    assert "TASKD_LOG_PATH" not in [e.name for e in job.launcher.env]  # the launcher does not override it


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


# --- issue 7 section 1 -------------------------------------------------------------------------------


def findings_of(plan: Plan, severity: str) -> Dict[str, List[str]]:
    """rule id -> the profile paths its findings of ``severity`` name."""
    out: Dict[str, List[str]] = {}
    for v in plan.violations:
        if v.severity == severity:
            out.setdefault(v.rule, []).extend(v.paths)
    return out


def errors_of(plan: Plan) -> Dict[str, List[str]]:
    return findings_of(plan, "error")


def warnings_of(plan: Plan) -> Dict[str, List[str]]:
    return findings_of(plan, "warning")


def job_level(**changes: Any) -> Plan:
    """The process-recovery example without process-level strategies (a job-level PyTorch job)."""
    base = {
        "jobs__0__recovery__strategies": [],
        "jobs__0__checkpoint": {"dump": False},
    }
    base.update(changes)
    return variant("pytorch-process-recovery.yaml", **base)


def test_item1_pip_torch_npu_reads_the_version_table_and_keeps_the_watchdog() -> None:
    """2.7.1.post2 is FrameworkPTAdapter 7.3.0 (PTA): the watchdog is supported and stays on."""
    plan = job_level()
    job = plan.jobs[0]
    assert "HCCL_ASYNC_ERROR_HANDLING" not in env_of(job)  # on by default: nothing to set
    assert job.budget.ladder[0].terms[0].seconds == 360  # the watchdog ends the job in 6 min
    assert not warnings_of(plan) and not errors_of(plan)


def test_item1_unknown_support_warns_and_leaves_the_vendor_default() -> None:
    plan = job_level(jobs__0__image__torch="2.13.0", jobs__0__image__torch_npu="2.13.0")
    job = plan.jobs[0]
    assert "HCCL_ASYNC_ERROR_HANDLING" not in env_of(job)  # never silently off
    assert "jobs[0].image.framework_pt_adapter" in warnings_of(plan)["watchdog-unknown"]
    assert job.budget.ladder[0].terms[0].seconds == 1800  # the budget does not count on it
    known = job_level(
        jobs__0__image__torch="2.13.0",
        jobs__0__image__torch_npu="2.13.0",
        jobs__0__image__framework_pt_adapter="26.1.1",
    )
    assert "watchdog-unknown" not in warnings_of(known)
    assert known.jobs[0].budget.ladder[0].terms[0].seconds == 360
    acknowledged = job_level(
        jobs__0__image__torch="2.13.0", jobs__0__image__torch_npu="2.13.0", acknowledge=["watchdog-unknown"]
    )
    assert not warnings_of(acknowledged)
    assert any("watchdog-unknown" in n.text for n in acknowledged.notes)


def test_item1_unsupported_image_is_not_switched_off_either() -> None:
    plan = job_level(jobs__0__image__torch="2.0.1", jobs__0__image__torch_npu="2.0.1.post1")
    job = plan.jobs[0]
    assert "HCCL_ASYNC_ERROR_HANDLING" not in env_of(job)
    assert any("has no watchdog" in n.text for n in job.notes)
    assert errors_of(plan) == {}


def test_item1_an_adapter_that_contradicts_the_table_is_an_error() -> None:
    plan = job_level(jobs__0__image__framework_pt_adapter="6.0.RC1")
    assert "jobs[0].image.framework_pt_adapter" in errors_of(plan)["torch-npu-version"]


def test_item2_env_is_read_as_the_field_it_belongs_to() -> None:
    """HCCL_ASYNC_ERROR_HANDLING=0 in env with watchdog auto is a watchdog the user turned off."""
    plan = job_level(jobs__0__env={"HCCL_ASYNC_ERROR_HANDLING": "0"})
    job = plan.jobs[0]
    assert env_of(job)["HCCL_ASYNC_ERROR_HANDLING"] == "0"
    assert job.budget.ladder[0].terms[0].seconds == 1800
    assert any("read as recovery.watchdog" in n.text for n in job.notes)
    assert errors_of(plan) == {}


def test_item2_env_that_turns_the_watchdog_on_is_checked_like_the_field() -> None:
    plan = variant("pytorch-process-recovery.yaml", jobs__0__env={"HCCL_ASYNC_ERROR_HANDLING": "1"})
    assert errors_of(plan)["watchdog-process-level"][0] == "jobs[0].env.HCCL_ASYNC_ERROR_HANDLING"


def test_item2_contradictions_name_both_places_and_exit_2(tmp_path: Path) -> None:
    doc = yaml.safe_load((EXAMPLES / "pytorch-process-recovery.yaml").read_text())
    doc["jobs"][0]["env"] = {"ASCEND_MAX_OP_CACHE_SIZE": "1024", "TTP_PORT": "8001"}
    doc["jobs"][0]["compile"]["max_op_cache_size"] = -1
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(PlanError) as err:
        load_plan(str(path))
    paths = {p for v in err.value.failing for p in v.paths}
    assert {"jobs[0].env.ASCEND_MAX_OP_CACHE_SIZE", "jobs[0].compile.max_op_cache_size"} <= paths
    assert {"jobs[0].env.TTP_PORT", "jobs[0].recovery.ttp_port"} <= paths
    assert err.value.exit_code == 2


def test_item2_a_cache_path_in_env_without_a_shared_volume_is_an_error() -> None:
    plan = job_level(jobs__0__compile={"mode": "default"}, jobs__0__env={"ASCEND_CACHE_PATH": "/job/cache"})
    assert "jobs[0].compile.mode" in errors_of(plan)["env-contradicts-profile"]
    assert "/job/cache" not in [v.mount_path for v in plan.storage]


def test_item3_the_recipe_installs_the_declared_wheel_files() -> None:
    job = plan_of("pytorch-pod-rescheduling.yaml").jobs[0]
    wheels = {w.name: w for w in job.image.wheels}
    assert list(wheels) == ["taskd", "mindio_ttp"]  # Pod-level PyTorch: TaskD and MindIO TTP (PLR 构建镜像)
    assert wheels["taskd"].file == str(EXAMPLES / "wheels" / "taskd-7.3.0-py3-none-linux_aarch64.whl")
    assert wheels["mindio_ttp"].version == "7.3.0" and wheels["mindio_ttp"].sha256 == "0" * 64
    assert job.image.runpy_patch == "import taskd.python.adaptor.patch"
    text = subprocess.run(
        [sys.executable, "-m", "resumable", "plan", str(EXAMPLES / "pytorch-pod-rescheduling.yaml")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "pip install" not in text and "taskd-7.3.0-py3-none-linux_aarch64.whl" in text


def test_item3_a_declared_mindio_wheel_never_disappears() -> None:
    """Before: MindIO TTP was only installed for process-level jobs."""
    plan = job_level(jobs__0__recovery={"pod_rescheduling": True, "fault_retry_times": 3})
    assert [w.name for w in plan.jobs[0].image.wheels] == ["taskd", "mindio_ttp"]
    plain = job_level(jobs__0__recovery={"fault_retry_times": 3})  # job-level: nothing needs it, still declared
    assert {w.name for w in plain.jobs[0].image.wheels} == {"taskd", "mindio_ttp"}
    assert all("declared in the profile" in w.reason for w in plain.jobs[0].image.wheels)


def test_item3_a_wheel_file_of_another_version_is_an_error() -> None:
    plan = variant(
        "pytorch-process-recovery.yaml",
        jobs__0__image__wheels={"taskd": {"file": "wheels/taskd-7.2.0-py3-none-linux_aarch64.whl"}},
    )
    assert "jobs[0].image.wheels.taskd.file" in errors_of(plan)["wheel-declaration"]
    missing = variant("pytorch-process-recovery.yaml", jobs__0__image__wheels={})
    assert set(warnings_of(missing)["wheel-file"]) == {"jobs[0].image.wheels.taskd", "jobs[0].image.wheels.mindio_ttp"}


def test_item4_msrun_maps_compile_mode_and_refuses_torchrun_options() -> None:
    plan = variant("mindspore-process-recovery.yaml", jobs__0__compile={"mode": "binaries"})
    lau = plan.jobs[0].launcher
    assert lau.jit_compile is False
    assert lau.compile_call == "mindspore.device_context.ascend.op_tuning.op_compile(False)"
    assert errors_of(plan) == {}
    refused = variant("mindspore-process-recovery.yaml", jobs__0__recovery={"max_restarts": 5, "monitor_interval": 2})
    assert set(errors_of(refused)["msrun-options"]) >= {
        "jobs[0].recovery.max_restarts",
        "jobs[0].recovery.monitor_interval",
    }
    old = variant(
        "mindspore-process-recovery.yaml", jobs__0__compile={"mode": "cache"}, jobs__0__image__mindspore="2.4.1"
    )
    assert "jobs[0].compile.mode" in errors_of(old)["msrun-compile-mode"]
    pt = plan_of("pytorch-pod-rescheduling.yaml").jobs[0].launcher
    assert pt.compile_call == "torch.npu.set_compile_mode(jit_compile=False)"


def test_item5_force_with_host_network_warns_at_every_level() -> None:
    pod = variant(
        "pytorch-pod-rescheduling.yaml", cluster__host_network=True, jobs__0__recovery__fault_scheduling="force"
    )
    assert "force-host-network" in warnings_of(pod) and errors_of(pod) == {}
    job = variant("job-level-minimal.yaml", cluster__host_network=True, jobs__0__recovery__fault_scheduling="force")
    assert "force-host-network" in warnings_of(job) and errors_of(job) == {}


def test_item6_acknowledge_names_warning_rules_only() -> None:
    unknown = variant("job-level-minimal.yaml", acknowledge=["wheel-fil"])
    assert errors_of(unknown)["acknowledge"] == ["acknowledge[0]"]
    error_rule = variant("job-level-minimal.yaml", acknowledge=["storage-choice", "compile-exclusive"])
    assert errors_of(error_rule)["acknowledge"] == ["acknowledge[1]"]


def test_item6_strict_passes_on_every_example() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "resumable", "validate", "--strict", *[str(p) for p in EXAMPLE_FILES]],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "0 errors, 0 warnings" in out.stdout


def test_item7_project_limits_say_so() -> None:
    fields = {f.name: f.metadata["doc"] for f in dataclasses.fields(Recovery)}
    for name in ("max_restarts", "monitor_interval"):
        assert "this project's limit (PROJECT)" in fields[name], name
    assert "PROJECT" in REGISTRY["value-range"].source


def test_item8_hdk_and_image_name_reach_the_plan_and_ranktable_needs_no_volume() -> None:
    plan = plan_json("pytorch-process-recovery.yaml")
    assert plan["nodes"]["hdk"] == "25.0.rc1.1"
    assert plan["jobs"][0]["image"]["name"] == "registry.example.com/ai/mindspeed-llm:2.3.0"
    ranktable = variant("pytorch-process-recovery.yaml", jobs__0__ranktable=True)
    assert [v.purpose for v in ranktable.storage] == [
        "compile cache (ASCEND_CACHE_PATH, MindSpore graph cache)",
        "checkpoints",
    ]
    assert ranktable.nodes.ranktable_dirs == ["/user/mindx-dl/ranktable/training.llama-pretrain"]
    assert ranktable.nodes.shared_mounts[0]["path"] == "/user/mindx-dl/ranktable"
    with pytest.raises(ProfileError) as err:
        variant("pytorch-process-recovery.yaml", storage__ranktable_size="1Gi")
    assert "ranktable_size" in str(err.value)


def test_mindspore_graph_cache_lives_on_shared_storage() -> None:
    plan = plan_of("mindspore-process-recovery.yaml")
    job = plan.jobs[0]
    assert env_of(job)["MS_COMPILER_CACHE_PATH"] == "/job/op_cache/ms"
    assert [v.mount_path for v in job.volumes if v.name == "op-cache"] == ["/job/op_cache"]


def _hang(plan: Plan) -> Any:
    launcher = plan.jobs[0].launcher
    (note,) = [n for n in launcher.notes if "heartbeat" in n.text]
    return launcher.hang_timeout, note.text


def test_hang_timeout_is_derived_from_the_floor_and_the_monitor_interval() -> None:
    # the example: TaskD's loop looks every 1 s, so the floor (60 s) decides; HCCL_EXEC_TIMEOUT is far above it
    seconds, text = _hang(plan_of("pytorch-process-recovery.yaml"))
    assert seconds == 60 and "HCCL_EXEC_TIMEOUT" not in text and "3 x the monitor interval (1 s" in text
    assert plan_of("pytorch-process-recovery.yaml").jobs[0].launcher.heartbeat_seconds == 2.0
    # under TaskD a monitor_interval is not read, so it does not move the hang timeout either
    seconds, _ = _hang(variant("pytorch-process-recovery.yaml", jobs__0__recovery__monitor_interval=40))
    assert seconds == 60
    # where torchrun's loop runs (no in-container agent), a slow tick raises it: three monitor intervals
    plain = {"jobs__0__recovery__strategies": [], "jobs__0__checkpoint": {"dump": False}}
    seconds, _ = _hang(variant("pytorch-process-recovery.yaml", jobs__0__recovery__monitor_interval=40, **plain))
    assert seconds == 120
    # unset (torch 2.7.1's 0.1 s default): the floor, the tick counted as at least 1 s
    seconds, text = _hang(variant("pytorch-process-recovery.yaml", **plain))
    assert seconds == 60 and "(0.1 s, counted as at least 1 s)" in text


def test_hang_timeout_from_the_profile_and_the_collective_timeout_note() -> None:
    seconds, text = _hang(variant("pytorch-process-recovery.yaml", jobs__0__recovery__hang_timeout=25))
    assert seconds == 25 and "recovery.hang_timeout" in text
    # a collective timeout at or below the hang timeout: the peers fail first, and the note says so
    _, text = _hang(variant("pytorch-process-recovery.yaml", jobs__0__hccl__exec_timeout=60))
    assert "HCCL_EXEC_TIMEOUT 60 s ends the peers' collective first" in text
    _, text = _hang(variant("pytorch-process-recovery.yaml", jobs__0__hccl__exec_timeout=0))
    assert "HCCL_EXEC_TIMEOUT" not in text  # 0 = never
    refused = variant("pytorch-process-recovery.yaml", jobs__0__recovery__hang_timeout=5)
    assert "jobs[0].recovery.hang_timeout" in errors_of(refused)["value-range"]


def _detect(job: JobPlan, level: str) -> float:
    line = next(line for line in job.budget.ladder if line.level == level)
    return next(t.seconds for t in line.terms if t.name == "detect")


@pytest.mark.parametrize("interval", [None, 1, 10, 0.5])
def test_the_budget_detects_within_the_monitor_interval(interval: Any) -> None:
    """Where torchrun's loop runs (the legacy Elastic Agent's Pod-level rescheduling) the detection term is
    the monitor interval; unset, torchrun's own default for the image's torch (5 s on its torch 2.1.0)."""
    doc = yaml.safe_load((EXAMPLES / "legacy-6.0-pod-rescheduling.yaml").read_text(encoding="utf-8"))
    doc["jobs"][0]["recovery"]["monitor_interval"] = interval
    job = build_plan(parse_profile(yaml.safe_dump(doc), "x"), "x").jobs[0]
    expected = 5.0 if interval is None else float(interval)
    assert _detect(job, "pod") == expected
    assert job.launcher.config.monitor_interval == interval  # type: ignore[union-attr]
    flags = [o for o in job.launcher.options if o.startswith("--monitor_interval")]
    assert flags == ([] if interval is None else ["--monitor_interval=%g" % interval])
    # torch 2.4 and later: 0.1 s; an image whose torch is not declared: the older default, the most it can be
    doc["jobs"][0]["recovery"]["monitor_interval"] = None
    for torch, seconds in (("2.4.0", 0.1), (None, 5.0)):
        doc["jobs"][0]["image"]["torch"] = torch
        job = build_plan(parse_profile(yaml.safe_dump(doc), "x"), "x").jobs[0]
        assert _detect(job, "pod") == seconds, torch


def test_under_taskd_the_budget_detects_at_taskds_own_tick_whatever_monitor_interval_says() -> None:
    """issue 31: TaskD's patch of torch elastic replaces torchrun's loop with one that looks every 1 s
    (MC:@v7.3.0 .../pt_agent.py:68-73); --monitor_interval is not read there."""
    for interval in (None, 10):
        job = variant("pytorch-process-recovery.yaml", jobs__0__recovery__monitor_interval=interval).jobs[0]
        assert {_detect(job, level) for level in job.levels} == {1.0}
        (note,) = [n for n in job.launcher.notes if n.text.startswith("the agent looks at the training processes")]
        assert "TaskD's agent loop" in note.text and "pt_agent.py:68-73" in note.source
        # both figures: TaskD's 1 s against what torchrun's own loop would do for this torch
        assert "torchrun's own loop would look every 0.1 s (torch 2.7.1)" in note.text
        assert ("passed as the profile asks but not read" in note.text) == (interval is not None)


def test_expected_time_per_fault_weighs_each_level_by_the_share_of_faults_it_takes() -> None:
    """issue 31: one fault in N pods is on the rank-0 pod, which skips Pod- and process-level rescheduling
    (HA73-025); recover-in-place takes an assumed half of what reaches it; the expectation is the weighted
    sum, printed by `resumable plan` and in its JSON."""
    b = plan_of("pytorch-process-recovery.yaml").jobs[0].budget  # 4 pods, 7.3.0
    totals = {line.level: line.total_seconds for line in b.ladder}
    shares = {s.level: s.share for s in b.shares}
    assert shares == pytest.approx({"recover-in-place": 0.375, "recover": 0.375, "job": 0.25})
    assert b.unrecovered_share == 0
    expected = 0.375 * totals["recover-in-place"] + 0.375 * totals["recover"] + 0.25 * totals["job"]
    assert b.expected_seconds is not None and b.expected_seconds == pytest.approx(expected, abs=0.1)
    assert b.expected_saving_seconds == pytest.approx(b.baseline.total_seconds - expected, abs=0.1)
    # far from the best level: the rank-0 share alone costs the job-level time
    assert b.expected_seconds > 2 * min(totals.values())
    (job_share,) = [s for s in b.shares if s.level == "job"]
    assert "rank-0 pod" in job_share.why and "HA73-025" in job_share.source
    (typed,) = [s for s in b.shares if s.level == "recover-in-place"]
    assert "assumed 50%" in typed.why and "PROJECT (assumption" in typed.source
    # the JSON and the text
    budget = plan_json("pytorch-process-recovery.yaml")["jobs"][0]["budget"]
    assert budget["expected_seconds"] == b.expected_seconds
    assert [s["level"] for s in budget["shares"]] == ["recover-in-place", "recover", "job"]
    text = subprocess.run(
        [sys.executable, "-m", "resumable", "plan", str(EXAMPLES / "pytorch-process-recovery.yaml")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "expected per fault: %.1f min = 37.5%% recover-in-place" % (b.expected_seconds / 60) in text


@pytest.mark.parametrize(
    "nodes,release,expected",
    [
        (1, "7.3.0", {"job": 1.0}),  # the only pod is the rank-0 pod
        (8, "7.3.0", {"recover-in-place": 0.4375, "recover": 0.4375, "job": 0.125}),
        # from the 26.x guide the rank-0 pod goes to job level only where its container must move
        (4, "26.0.0", {"recover-in-place": 0.5, "recover": 0.375, "job": 0.125}),
    ],
)
def test_the_rank0_share_follows_the_pods_and_the_release(nodes: int, release: str, expected: Dict[str, float]) -> None:
    plan = variant("pytorch-process-recovery.yaml", jobs__0__nodes=nodes, cluster__mindcluster=release)
    shares = {s.level: s.share for s in plan.jobs[0].budget.shares}
    assert shares == pytest.approx(expected)


def test_the_documented_fallback_share_of_2610_moves_faults_down_the_ladder() -> None:
    """MindCluster 26.1's release notes: about 0.00125 of process-level reschedules end in a gloo
    segmentation fault; that share falls to the next level (here dump)."""
    plan = variant("pytorch-process-recovery.yaml", cluster__mindcluster="26.1.0")
    shares = {s.level: s.share for s in plan.jobs[0].budget.shares}
    g = 0.00125
    # the other 3 pods' faults (0.75): in place takes half of them but g, recover the rest but g, dump the g of that
    assert shares["dump"] == pytest.approx(0.75 * (0.5 + 0.5 * g) * g, rel=1e-3)
    assert sum(shares.values()) == pytest.approx(1.0)


def test_without_job_level_rescheduling_some_faults_are_not_recovered() -> None:
    from resumable.facts import job_facts
    from resumable.plan.budget import budget, expected_level

    profile = parse_profile((EXAMPLES / "pytorch-process-recovery.yaml").read_text(encoding="utf-8"), "x")
    f = dataclasses.replace(job_facts(profile, 0), job_level=False)
    b = budget(f, f.job)
    assert b.unrecovered_share == pytest.approx(0.25)  # the rank-0 pod's faults
    assert b.expected_seconds is not None and all(s.level != "job" for s in b.shares)
    assert expected_level(["recover", "job"], rank0_pod=True) == "job"
    assert expected_level(["recover-in-place", "recover", "job"], rank0_pod=False) == "recover-in-place"
    assert expected_level(["retry", "recover", "pod", "job"], rank0_pod=False) == "recover"
    assert expected_level(["retry", "recover"], rank0_pod=True) is None


def test_the_plan_json_shows_the_typed_launcher_options_as_its_command_line() -> None:
    job = plan_of("pytorch-process-recovery.yaml").jobs[0]
    launcher = job.to_dict()["launcher"]
    assert "config" not in launcher
    assert launcher["options"] == job.launcher.config.argv()
    assert launcher["args"] == [*launcher["options"], launcher["script"], *launcher["script_args"]]
    assert job.to_dict()["command"] == ["resumable", "launch", "--", launcher["script"], *launcher["script_args"]]


def _notes(plan: Plan) -> List[Any]:
    job = plan.jobs[0]
    return [*job.notes, *job.image.notes, *job.launcher.notes]


def test_the_plan_recommends_hccl_link_setup_at_initialisation_where_the_guide_documents_it() -> None:
    """issue 31: a fault while HCCL links are set up makes process-level rescheduling fail; from 7.2.RC1 the
    guide's avoidance is to set every link up at initialisation (配置HCCL主动触发建链, HA73-120): the
    training script's job, so the plan recommends it with its source."""
    (note,) = [n for n in _notes(plan_of("pytorch-process-recovery.yaml")) if n.text.startswith("recommended: set")]
    assert "dispatch one collective" in note.text and "HA73-120" in note.source and "HA72-025" in note.source
    older = variant("pytorch-process-recovery.yaml", cluster__mindcluster="7.1.RC1")
    assert not [n for n in _notes(older) if n.text.startswith("recommended: set")]
    assert not [n for n in _notes(plan_of("pytorch-pod-rescheduling.yaml")) if n.text.startswith("recommended: set")]
    # what no profile field says (the model) is a note, with the constraints page as its source
    (models,) = [n for n in _notes(plan_of("pytorch-process-recovery.yaml")) if "no multimodal model" in n.text]
    assert "Megatron-based models in PyTorch single-operator mode" in models.text and "HA73-025" in models.source


def test_mindspore_process_level_on_26x_notes_its_documented_risk() -> None:
    on_26 = variant("mindspore-process-recovery.yaml", cluster__mindcluster="26.0.0")
    assert [n for n in _notes(on_26) if "very small chance of failing" in n.text]
    assert not [n for n in _notes(plan_of("mindspore-process-recovery.yaml")) if "very small chance" in n.text]
