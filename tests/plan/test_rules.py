"""Every rule: a profile that breaks it (rule id and offending path reported) and a near one where it holds."""

from __future__ import annotations

import copy
import re
from typing import Any, Dict, List, Tuple

import pytest
import yaml

from resumable.cli import main
from resumable.profile import parse_profile
from resumable.rules import REGISTRY, evaluate, format_violation

BASE = """
cluster:
  name: t
  mindcluster: "7.3.0"
  chip: ascend-910b
  accelerator_type: module-910b-8
  arch: aarch64
  kubernetes: "1.28"
scheduler:
  volcano: "1.9.0"
storage:
  nfs: {server: 192.0.2.10, path: /exports/ascend}
jobs:
  - name: train
    image:
      framework: pytorch
      torch: "2.7.1"
      torch_npu: "2.7.1.post2"
      framework_pt_adapter: "7.3.0"
      cann: "8.5.0"
      mindspeed_llm: "2.3.0"
      taskd: "7.3.0"
      mindio_ttp: "7.3.0"
      wheels:
        taskd:
          file: wheels/taskd-7.3.0-py3-none-linux_aarch64.whl
          sha256: "abababababababababababababababababababababababababababababababab"
        mindio_ttp: {file: wheels/mindio_ttp-7.3.0-py3-none-linux_aarch64.whl}
    nodes: 4
    npus_per_node: 8
    recovery:
      fault_scheduling: grace
      fault_retry_times: 10
      strategies: [recover, recover-in-place, dump, exit]
    compile: {mode: cache}
    checkpoint: {dump: true}
"""

DELETE = object()
J = "jobs[0]."


def _set(doc: Any, path: str, value: Any) -> None:
    parts = re.findall(r"[^.\[\]]+|\[\d+\]", path)
    node = doc
    for part in parts[:-1]:
        node = node[int(part[1:-1])] if part.startswith("[") else node.setdefault(part, {})
    last = parts[-1]
    if last.startswith("["):
        index = int(last[1:-1])
        if index == len(node):
            node.append(value)
        else:
            node[index] = value
    elif value is DELETE:
        node.pop(last, None)
    else:
        node[last] = value


def profile_with(patch: Dict[str, Any]) -> Any:
    doc = yaml.safe_load(BASE)
    for path, value in patch.items():
        _set(doc, path, value if value is DELETE else copy.deepcopy(value))
    return parse_profile(yaml.safe_dump(doc), "test")


def ids(patch: Dict[str, Any]) -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = {}
    for v in evaluate(profile_with(patch)):
        out.setdefault(v.rule, []).extend(v.paths)
    return out


SECOND_JOB = yaml.safe_load(BASE)["jobs"][0]

# rule id -> list of (breaking patch, a path the violation must name), holding patch
CASES: Dict[str, Tuple[List[Tuple[Dict[str, Any], str]], Dict[str, Any]]] = {
    "stack-release": ([({"cluster.mindcluster": "7.2.RC1"}, "cluster.mindcluster")], {}),
    "volcano-version": (
        [
            ({"scheduler.volcano": "1.12.0"}, "scheduler.volcano"),
            ({"cluster.kubernetes": "1.30"}, "cluster.kubernetes"),
        ],
        {"scheduler.volcano": "1.7.0"},
    ),
    "kubernetes-version": ([({"cluster.kubernetes": "1.35"}, "cluster.kubernetes")], {"cluster.kubernetes": "1.21"}),
    "storage-choice": ([({"storage.storage_class": "cephfs"}, "storage.storage_class")], {}),
    "unique-job-names": ([({"jobs[1]": SECOND_JOB}, "jobs[1].name")], {"jobs[1]": dict(SECOND_JOB, name="other")}),
    "compile-exclusive": (
        [
            ({J + "compile.mode": "binaries", J + "env": {"ASCEND_CACHE_PATH": "/x"}}, J + "env.ASCEND_CACHE_PATH"),
            ({J + "compile.mode": "binaries", J + "compile.max_op_cache_size": -1}, J + "compile.max_op_cache_size"),
            (
                {J + "compile.mode": "binaries", J + "env": {"ASCEND_MAX_OP_CACHE_SIZE": "-1"}},
                J + "env.ASCEND_MAX_OP_CACHE_SIZE",
            ),
        ],
        {J + "compile.mode": "binaries"},
    ),
    "compile-cann": ([({J + "image.cann": "8.0.RC1"}, J + "image.cann")], {J + "image.cann": "8.0.RC2"}),
    "compile-cache-shared-storage": (
        [({"storage.nfs": DELETE}, J + "compile.mode")],
        {"storage.nfs": DELETE, "storage.storage_class": "cephfs"},
    ),
    "compile-cache-max-size": (
        [
            ({J + "compile.max_op_cache_size": 1024}, J + "compile.max_op_cache_size"),
            ({J + "env": {"ASCEND_MAX_OP_CACHE_SIZE": "10"}}, J + "env.ASCEND_MAX_OP_CACHE_SIZE"),
        ],
        {J + "compile.max_op_cache_size": -1},
    ),
    "watchdog-support": (
        [
            (
                {
                    J + "recovery.strategies": [],
                    J + "checkpoint.dump": False,
                    J + "recovery.watchdog": "on",
                    J + "image.torch": "2.0.1",
                },
                J + "recovery.watchdog",
            ),
            (
                {
                    J + "recovery.strategies": [],
                    J + "checkpoint.dump": False,
                    J + "recovery.watchdog": "on",
                    J + "image.framework_pt_adapter": "6.0.RC1",
                },
                J + "image.framework_pt_adapter",
            ),
        ],
        {J + "recovery.strategies": [], J + "checkpoint.dump": False, J + "recovery.watchdog": "on"},
    ),
    "watchdog-process-level": (
        [
            ({J + "recovery.watchdog": "on"}, J + "recovery.watchdog"),
            ({J + "env": {"HCCL_ASYNC_ERROR_HANDLING": "1"}}, J + "env.HCCL_ASYNC_ERROR_HANDLING"),
        ],
        {J + "recovery.watchdog": "off", J + "env": {"HCCL_ASYNC_ERROR_HANDLING": "0"}},
    ),
    "host-network": (
        [
            ({"cluster.host_network": True, "cluster.reserve_taskd_ports": False}, "cluster.reserve_taskd_ports"),
        ],
        {"cluster.host_network": True},
    ),
    "unknown-strategy": (
        [({J + "recovery.strategies": ["recover", "recovr", "dump"]}, J + "recovery.strategies")],
        {J + "recovery.strategies": ["recover", "dump"]},
    ),
    "process-level-wheels": (
        [
            ({J + "image.mindio_ttp": DELETE, J + "image.wheels": {}}, J + "image.mindio_ttp"),
            ({J + "image.taskd": DELETE, J + "image.wheels": {}}, J + "image.taskd"),
        ],
        {J + "image.taskd": DELETE, J + "image.mindio_ttp": DELETE},  # the wheel files name their versions
    ),
    "process-level-grace": ([({J + "recovery.fault_scheduling": "force"}, J + "recovery.fault_scheduling")], {}),
    "process-level-ascendjob": ([({J + "kind": "vcjob"}, J + "kind")], {J + "kind": "ascendjob"}),
    "process-level-hot-reset": ([({"scheduler.hot_reset": 1}, "scheduler.hot_reset")], {"scheduler.hot_reset": 2}),
    "taskd-manager-placement": (
        [
            ({J + "taskd_manager": "scheduler"}, J + "taskd_manager"),
            ({J + "taskd_manager": "off"}, J + "taskd_manager"),
        ],
        {J + "taskd_manager": "rank0"},
    ),
    "taskd-process-enable": (
        [
            ({J + "recovery.taskd_process_enable": "off"}, J + "recovery.taskd_process_enable"),
            ({J + "env": {"TASKD_PROCESS_ENABLE": "off"}}, J + "env.TASKD_PROCESS_ENABLE"),
        ],
        {J + "recovery.taskd_process_enable": "on", J + "env": {"TASKD_PROCESS_ENABLE": "on"}},
    ),
    "recover-in-place-release": (
        [({"cluster.mindcluster": "7.0.RC1"}, J + "recovery.strategies")],
        {"cluster.mindcluster": "7.1.RC1"},
    ),
    "elastic-training": (
        [
            (
                {"cluster.mindcluster": "7.1.RC1", J + "recovery.strategies": ["elastic-training", "dump"]},
                "cluster.mindcluster",
            ),
            (
                {J + "image.framework": "mindspore", J + "recovery.strategies": ["elastic-training"]},
                J + "image.framework",
            ),
        ],
        {J + "recovery.strategies": ["recover", "elastic-training", "dump"]},
    ),
    "graceful-exclusive": (
        [
            ({J + "recovery.graceful": True}, J + "recovery.graceful"),
            (
                {J + "recovery.graceful": True, J + "recovery.strategies": [], J + "checkpoint.dump": False},
                "cluster.mindcluster",
            ),
        ],
        {
            "cluster.mindcluster": "7.1.RC1",
            J + "recovery.graceful": True,
            J + "recovery.strategies": [],
            J + "checkpoint.dump": False,
        },
    ),
    "graceexit-needs-dump": (
        [
            (
                {
                    J + "recovery.sub_health": "graceExit",
                    J + "recovery.strategies": ["recover"],
                    J + "checkpoint.dump": False,
                },
                J + "recovery.sub_health",
            )
        ],
        {J + "recovery.sub_health": "graceExit"},
    ),
    "dump-ttp-port": (
        [
            ({J + "recovery.ttp_port": 9601}, J + "recovery.ttp_port"),
            ({J + "recovery.ttp_port": None}, J + "recovery.ttp_port"),
        ],
        {J + "recovery.ttp_port": 8000},
    ),
    "checkpoint-dump-strategy": (
        [({J + "recovery.strategies": ["recover"]}, J + "checkpoint.dump")],
        {J + "recovery.strategies": ["recover"], J + "checkpoint.dump": False},
    ),
    "process-level-retry-times": ([({J + "recovery.fault_retry_times": DELETE}, J + "recovery.fault_retry_times")], {}),
    "fault-scheduling-required": (
        [({J + "recovery.fault_scheduling": "off"}, J + "recovery.fault_scheduling")],
        {J + "recovery.fault_scheduling": "grace"},
    ),
    "pod-rescheduling-release": (
        [
            (
                {"cluster.mindcluster": "6.0.RC1", J + "recovery.pod_rescheduling": True},
                J + "recovery.pod_rescheduling",
            )
        ],
        {"cluster.mindcluster": "6.0.RC2", J + "recovery.pod_rescheduling": True},
    ),
    "runpy-patch-package": (
        [
            ({J + "image.taskd": DELETE, J + "image.wheels": {}}, J + "image.taskd"),
            ({J + "image.mindx_elastic": "7.3.0"}, J + "image.mindx_elastic"),
            (
                {
                    "cluster.mindcluster": "7.2.RC1",
                    J + "recovery.strategies": [],
                    J + "checkpoint.dump": False,
                    J + "recovery.pod_rescheduling": True,
                },
                J + "image.mindx_elastic",
            ),
        ],
        {},
    ),
    "force-host-network": (
        [
            (
                {
                    J + "recovery.pod_rescheduling": True,
                    J + "recovery.fault_scheduling": "force",
                    "cluster.host_network": True,
                },
                "cluster.host_network",
            ),
            (
                {
                    J + "recovery.strategies": [],
                    J + "checkpoint.dump": False,
                    J + "recovery.fault_scheduling": "force",
                    "cluster.host_network": True,
                },
                J + "recovery.fault_scheduling",
            ),
        ],
        {J + "recovery.pod_rescheduling": True, "cluster.host_network": True},
    ),
    "retry-restart-policy": (
        [({J + "recovery.restart_policy": "OnFailure"}, J + "recovery.restart_policy")],
        {J + "recovery.restart_policy": "Never"},
    ),
    "launcher-framework": ([({J + "launcher": "msrun"}, J + "launcher")], {J + "launcher": "torch_npu_run"}),
    "torch-npu-run-version": (
        [
            ({J + "launcher": "torch_npu_run", J + "image.framework_pt_adapter": "6.0.RC3"}, J + "launcher"),
            (
                {
                    J + "launcher": "torch_npu_run",
                    J + "image.framework_pt_adapter": DELETE,
                    J + "image.torch_npu": "2.13.0",
                    J + "image.torch": "2.13.0",
                },
                J + "image.framework_pt_adapter",
            ),
        ],
        {J + "launcher": "torch_npu_run", J + "image.framework_pt_adapter": "6.0.0"},
    ),
    "ranktable-adapter": (
        [({J + "ranktable": True, J + "image.framework_pt_adapter": "6.0.RC2"}, J + "ranktable")],
        {J + "ranktable": True},
    ),
    "wheel-release-match": (
        [
            ({J + "image.taskd": "7.2.0"}, J + "image.taskd"),
            ({J + "image.mindio_ttp": "26.0.0"}, J + "image.mindio_ttp"),
        ],
        {J + "image.taskd": "7.3.0"},
    ),
    "mindio-acp": (
        [
            ({J + "checkpoint.mindio_acp": True}, J + "image.mindio_acp"),
            ({J + "checkpoint.mindio_acp": True, J + "image.mindio_acp": "7.3.0"}, J + "recovery.strategies"),
        ],
        {J + "checkpoint.mindio_acp": True, J + "image.mindio_acp": "7.3.0", J + "image.mindspeed_llm": DELETE},
    ),
    "watchdog-unknown": (
        [
            (
                {
                    J + "recovery.strategies": [],
                    J + "checkpoint.dump": False,
                    J + "image.framework_pt_adapter": DELETE,
                    J + "image.torch_npu": "2.13.0",
                    J + "image.torch": "2.13.0",
                },
                J + "image.framework_pt_adapter",
            ),
            (
                {
                    J + "recovery.strategies": [],
                    J + "checkpoint.dump": False,
                    J + "image.framework_pt_adapter": DELETE,
                    J + "image.torch_npu": DELETE,
                },
                J + "image.torch_npu",
            ),
        ],
        {
            J + "recovery.strategies": [],
            J + "checkpoint.dump": False,
            J + "image.framework_pt_adapter": "26.1.0",
            J + "image.torch_npu": "2.13.0",
            J + "image.torch": "2.13.0",
        },
    ),
    "env-contradicts-profile": (
        [
            (
                {
                    J + "recovery.strategies": [],
                    J + "checkpoint.dump": False,
                    J + "recovery.watchdog": "on",
                    J + "env": {"HCCL_ASYNC_ERROR_HANDLING": "0"},
                },
                J + "recovery.watchdog",
            ),
            ({J + "env": {"ASCEND_CACHE_PATH": "/elsewhere"}}, J + "compile.cache_path"),
            ({J + "compile.mode": "default", J + "env": {"ASCEND_CACHE_PATH": "/job/op_cache"}}, J + "compile.mode"),
            (
                {J + "hccl.connect_timeout": 600, J + "env": {"HCCL_CONNECT_TIMEOUT": "1800"}},
                J + "hccl.connect_timeout",
            ),
            ({J + "env": {"POD_IP": "10.0.0.1"}}, J + "env.POD_IP"),
            ({"cluster.host_network": True, J + "env": {"HCCL_IF_IP": "10.0.0.1"}}, J + "env.HCCL_IF_IP"),
            ({J + "env": {"RESUME_MODE_ENABLE": "0"}}, J + "recovery.fault_scheduling"),
            (
                {J + "recovery.strategies": [], J + "checkpoint.dump": False, J + "env": {"PROCESS_RECOVER": "on"}},
                J + "recovery.strategies",
            ),
            ({J + "env": {"TASKD_PROCESS_ENABLE": "maybe"}}, J + "env.TASKD_PROCESS_ENABLE"),
            ({J + "env": {"TTP_PORT": "8001"}}, J + "recovery.ttp_port"),
            ({J + "env": {"RANK_TABLE_FILE": "/x/hccl.json"}}, J + "ranktable"),
        ],
        {
            J + "env": {
                "HCCL_ASYNC_ERROR_HANDLING": "0",
                "ASCEND_CACHE_PATH": "/job/op_cache/",
                "ASCEND_MAX_OP_CACHE_SIZE": "-1",
                "RESUME_MODE_ENABLE": "1",
                "TASKD_PROCESS_ENABLE": "on",
                "TTP_PORT": "8000",
                "HCCL_CONNECT_TIMEOUT": "1800",
                "FOO": "bar",
            }
        },
    ),
    "env-operator-injects": (
        [
            ({J + "env": {"HIGH_AVAILABILITY": "recover"}}, J + "env.HIGH_AVAILABILITY"),
            ({J + "env": {"PROCESS_RECOVER": "off"}}, J + "recovery.strategies"),
            ({J + "recovery.sub_health": "hotSwitch", J + "env": {"PROCESS_RECOVER": "1"}}, J + "recovery.sub_health"),
            (
                {
                    J + "image.framework": "mindspore",
                    J + "image.mindspore": "2.7.0",
                    J + "launcher": "msrun",
                    J + "env": {"MS_ENABLE_TFT": "{ARF:1,TTP:1}"},
                },
                J + "env.MS_ENABLE_TFT",
            ),
        ],
        {
            J + "env": {
                "HIGH_AVAILABILITY": "recover,dump",
                "PROCESS_RECOVER": "on",
                "ELASTIC_PROCESS_RECOVER_ENABLE": "1",
                "ENABLE_RESTART_FAULT_PROCESS": "on",
                "HCCL_ASYNC_ERROR_HANDLING": "0",
            }
        },
    ),
    "msrun-options": (
        [
            (
                {
                    J + "image.framework": "mindspore",
                    J + "image.mindspore": "2.7.0",
                    J + "launcher": "msrun",
                    J + "recovery.max_restarts": 5,
                },
                J + "recovery.max_restarts",
            ),
            (
                {
                    J + "image.framework": "mindspore",
                    J + "image.mindspore": "2.7.0",
                    J + "launcher": "msrun",
                    J + "recovery.monitor_interval": 1,
                },
                J + "recovery.monitor_interval",
            ),
        ],
        {
            J + "image.framework": "mindspore",
            J + "image.mindspore": "2.7.0",
            J + "launcher": "msrun",
            J + "recovery.monitor_interval": DELETE,
        },
    ),
    # issue 34: TaskD's patch_launch_agent takes no health_check_server, which torch 2.13 passes
    "taskd-torch-patch": (
        [({J + "image.torch": "2.13.0"}, J + "image.torch")],
        {J + "image.torch": "2.12.1"},
    ),
    # issue 31: torchrun's own default (0.1 s from torch 2.4) is the fastest; TaskD's loop reads no option
    "monitor-interval": (
        [
            ({J + "recovery.monitor_interval": 1}, J + "recovery.monitor_interval"),  # TaskD's loop: not read
            (
                {J + "recovery.strategies": [], J + "checkpoint.dump": False, J + "recovery.monitor_interval": 1},
                J + "image.torch",
            ),
            (
                {
                    J + "recovery.strategies": [],
                    J + "checkpoint.dump": False,
                    J + "image.torch": "2.1.0",
                    J + "recovery.monitor_interval": 10,
                },
                J + "recovery.monitor_interval",
            ),
        ],
        {J + "recovery.strategies": [], J + "checkpoint.dump": False, J + "recovery.monitor_interval": 0.1},
    ),
    "msrun-compile-mode": (
        [
            (
                {J + "image.framework": "mindspore", J + "image.mindspore": "2.4.0", J + "launcher": "msrun"},
                J + "compile.mode",
            ),
            ({J + "image.framework": "mindspore", J + "launcher": "msrun"}, J + "image.mindspore"),
        ],
        {J + "image.framework": "mindspore", J + "image.mindspore": "2.5.0", J + "launcher": "msrun"},
    ),
    "torch-npu-version": (
        [
            ({J + "image.framework_pt_adapter": "6.0.0"}, J + "image.framework_pt_adapter"),
            ({J + "image.torch": "2.6.0"}, J + "image.torch"),
            (
                {J + "image.torch_npu": "2.7.1.post3", J + "image.framework_pt_adapter": "7.2.0"},
                J + "image.framework_pt_adapter",
            ),
            (
                {J + "image.torch_npu": "7.3.0", J + "image.framework_pt_adapter": "7.2.0"},
                J + "image.torch_npu",
            ),
        ],
        {J + "image.framework_pt_adapter": DELETE, J + "image.torch_npu": "2.7.1.post3"},
    ),
    "wheel-declaration": (
        [
            (
                {
                    J + "image.wheels.taskd": {
                        "url": "http://example.com/taskd-7.3.0-py3-none-linux_aarch64.whl",
                        "sha256": "ab" * 32,
                    }
                },
                J + "image.wheels.taskd.url",
            ),
            (
                {J + "image.wheels.taskd": {"file": "wheels/taskd-7.3.0-py3-none-linux_aarch64.whl", "sha256": "abc"}},
                J + "image.wheels.taskd.sha256",
            ),
            (
                {J + "image.wheels.taskd": {"file": "wheels/taskd-7.2.0-py3-none-linux_aarch64.whl"}},
                J + "image.wheels.taskd.file",
            ),
            (
                {J + "image.wheels.taskd": {"file": "wheels/mindio_ttp-7.3.0-py3-none-linux_aarch64.whl"}},
                J + "image.wheels.taskd.file",
            ),
            ({J + "image.wheels.taskd": {"file": "wheels/taskd.tar.gz"}}, J + "image.wheels.taskd.file"),
            ({J + "image.wheels.taskd": {"sha256": "ab" * 32}}, J + "image.wheels.taskd"),
            (
                {J + "image.wheels.taskd": {"url": "https://example.com/taskd-7.3.0-py3-none-linux_aarch64.whl"}},
                J + "image.wheels.taskd.sha256",
            ),
        ],
        {
            J + "image.wheels.taskd": {
                "url": "https://example.com/dl/Taskd-7.3.0-py3-none-linux_aarch64.whl",
                "sha256": ("ab" * 32).upper(),
            }
        },
    ),
    "wheel-file": ([({J + "image.wheels": {}}, J + "image.wheels.taskd")], {}),
    "mindio-ttp-agent": (
        [
            (
                {
                    J + "recovery.strategies": [],
                    J + "checkpoint.dump": False,
                    J + "recovery.pod_rescheduling": True,
                    J + "image.mindio_ttp": DELETE,
                    J + "image.wheels": {},
                },
                J + "image.mindio_ttp",
            )
        ],
        {J + "recovery.strategies": [], J + "checkpoint.dump": False, J + "recovery.pod_rescheduling": True},
    ),
    "ranktable-nfs": (
        [({"storage.nfs": DELETE, "storage.storage_class": "cephfs", J + "ranktable": True}, J + "ranktable")],
        {J + "ranktable": True},
    ),
    "acknowledge": (
        [
            ({"acknowledge": ["wheel-fil"]}, "acknowledge[0]"),
            ({"acknowledge": ["wheel-file", "compile-exclusive"]}, "acknowledge[1]"),
        ],
        {"acknowledge": ["wheel-file", "storage-choice"]},
    ),
    "grace-period-below-volcano": (
        [
            ({J + "recovery.termination_grace_period": 900}, J + "recovery.termination_grace_period"),
            (
                {"scheduler.grace_over_time": 300, J + "recovery.termination_grace_period": 600},
                "scheduler.grace_over_time",
            ),
        ],
        {J + "recovery.termination_grace_period": 899},
    ),
    "job-volumes": (
        [
            ({J + "volumes": [{"name": "code", "mount_path": "/job/code"}]}, J + "volumes[0]"),
            (
                {J + "volumes": [{"name": "code", "mount_path": "/job", "host_path": "/data/code"}]},
                J + "volumes[0].mount_path",
            ),
            (
                {J + "volumes": [{"name": "code", "mount_path": "/job/code/../x", "claim": "code"}]},
                J + "volumes[0].mount_path",
            ),
            (
                {J + "volumes": [{"name": "code", "mount_path": "/job/code", "host_path": "data/code"}]},
                J + "volumes[0].host_path",
            ),
            (
                {J + "volumes": [{"name": "code", "mount_path": "/job/code", "host_path": "/data/../etc"}]},
                J + "volumes[0].host_path",
            ),
        ],
        {
            J + "volumes": [
                {"name": "code", "mount_path": "/job/code", "host_path": "/data/code", "read_only": True},
                {"name": "data", "mount_path": "/job/data", "claim": "datasets"},
            ]
        },
    ),
    "schedule-policy": (
        [
            ({J + "schedule_policy": "chip9-node9"}, J + "schedule_policy"),
            ({J + "schedule_policy": "chip8-node8-ra64-sp"}, J + "schedule_policy"),  # 26.1.0's, not 7.3.0's
            ({"cluster.mindcluster": "7.3.1", J + "schedule_policy": "multilevel"}, J + "schedule_policy"),
        ],
        {J + "schedule_policy": "chip8-node8"},
    ),
    "topology-release": (
        [
            (
                {"cluster.mindcluster": "5.0.1", J + "tor_affinity": "normal-schema"},
                J + "tor_affinity",
            ),
            ({"cluster.mindcluster": "5.0.1", J + "sp_block": 16}, J + "sp_block"),
        ],
        {J + "tor_affinity": "large-model-schema", J + "sp_block": 16},
    ),
    "vcjob-restart-policy": (
        [
            (
                {J + "kind": "vcjob", J + "recovery.restart_policy": "ExitCode", J + "recovery.strategies": []},
                J + "recovery.restart_policy",
            )
        ],
        {J + "recovery.restart_policy": "ExitCode", J + "recovery.fault_retry_times": None},
    ),
    "vcjob-launch": (
        [({J + "kind": "vcjob", J + "recovery.restart_policy": "Never"}, J + "kind")],
        {J + "kind": "vcjob", J + "recovery.restart_policy": "Never", J + "recovery.strategies": []},
    ),
    "sp-block-size": (
        [({J + "sp_block": 12}, J + "sp_block"), ({J + "sp_block": 64}, J + "sp_block")],
        {J + "sp_block": 32},
    ),
    "value-range": (
        [
            ({J + "recovery.monitor_interval": 0}, J + "recovery.monitor_interval"),
            ({J + "recovery.max_restarts": 40000}, J + "recovery.max_restarts"),
            ({J + "recovery.fault_retry_times": 101}, J + "recovery.fault_retry_times"),
            ({J + "recovery.wait_reschedule_timeout": 20}, J + "recovery.wait_reschedule_timeout"),
            ({J + "recovery.wait_reschedule_timeout": 271}, J + "recovery.wait_reschedule_timeout"),
            ({J + "hccl.connect_timeout": 60}, J + "hccl.connect_timeout"),
            ({J + "hccl.connect_timeout": 7201}, J + "hccl.connect_timeout"),
            ({J + "hccl.exec_timeout": -1}, J + "hccl.exec_timeout"),
            ({J + "env": {"HCCL_CONNECT_TIMEOUT": "60"}}, J + "env.HCCL_CONNECT_TIMEOUT"),
            ({"scheduler.grace_over_time": 1}, "scheduler.grace_over_time"),
            ({"scheduler.list_watch_period": 2}, "scheduler.list_watch_period"),
            ({"scheduler.report_interval": 301}, "scheduler.report_interval"),
            ({J + "nodes": 0}, J + "nodes"),
        ],
        {
            J + "recovery.monitor_interval": 1,
            J + "recovery.max_restarts": 32767,
            J + "recovery.fault_retry_times": 100,
            J + "recovery.wait_reschedule_timeout": 30,
            J + "hccl.connect_timeout": 7200,
            J + "hccl.exec_timeout": 0,
        },
    ),
    # issue 16: hardware that cannot exist, releases that do not
    "mindcluster-release": (
        [
            ({"cluster.mindcluster": "7.3.RC1"}, "cluster.mindcluster"),
            ({"cluster.mindcluster": "8.0.0"}, "cluster.mindcluster"),
        ],
        {"cluster.mindcluster": "7.3.0.SPC1"},
    ),
    "accelerator-type-chip": (
        [
            (
                {"cluster.chip": "ascend-910", "cluster.accelerator_type": "module-a3-16-super-pod"},
                "cluster.accelerator_type",
            ),
            ({"cluster.accelerator_type": "module-910c-16"}, "cluster.accelerator_type"),
        ],
        {"cluster.accelerator_type": "module-a3-16-super-pod", J + "npus_per_node": 16},
    ),
    "npus-per-node-hardware": (
        [
            ({J + "npus_per_node": 16}, J + "npus_per_node"),
            ({"cluster.accelerator_type": "module-a3-16", J + "npus_per_node": 3}, J + "npus_per_node"),
        ],
        {"cluster.accelerator_type": "module-910b-16", J + "npus_per_node": 16},
    ),
    "sp-block-super-pod": (
        [({J + "sp_block": 32}, J + "sp_block")],
        {"cluster.accelerator_type": "module-a3-16-super-pod", J + "npus_per_node": 16, J + "sp_block": 32},
    ),
    "wheel-platform": (
        [({"cluster.arch": "x86_64"}, J + "image.wheels.taskd")],
        {
            "cluster.arch": "x86_64",
            J + "image.wheels.taskd.file": "wheels/taskd-7.3.0-py3-none-manylinux2014_x86_64.whl",
            J + "image.wheels.mindio_ttp.file": "wheels/mindio_ttp-7.3.0-py3-none-any.whl",
        },
    ),
    "pod-settings": (
        [
            ({J + "pod.labels": {"fault-scheduling": "off"}}, J + "pod.labels.fault-scheduling"),
            ({J + "pod.annotations": {"huawei.com/x": "1"}}, J + "pod.annotations.huawei.com/x"),
            ({J + "pod.node_selector": {"host-arch": "x"}}, J + "pod.node_selector.host-arch"),
            ({J + "pod.tolerations": [{"operator": "Exists", "value": "x"}]}, J + "pod.tolerations[0].value"),
            ({J + "pod.requests": {"memory": "2Gi"}, J + "pod.limits": {"memory": "1Gi"}}, J + "pod.limits.memory"),
        ],
        {
            J + "pod.labels": {"example.com/team": "llm"},
            J + "pod.node_selector": {"example.com/pool": "a"},
            J + "pod.requests": {"memory": "1Gi"},
            J + "pod.limits": {"memory": "1024Mi"},
        },
    ),
    # issue 31: the documented limits of process-level rescheduling (rules/limits.py)
    "ranktable-configmap": (
        [
            (
                {
                    J + "kind": "vcjob",
                    J + "recovery.strategies": [],
                    J + "checkpoint.dump": False,
                    J + "recovery.pod_rescheduling": True,
                },
                J + "kind",
            ),
            (
                {J + "volumes": [{"name": "rt", "mount_path": "/user/serverid/devindex/config", "config_map": "rt"}]},
                J + "volumes[0]",
            ),
            (
                {
                    J + "volumes": [{"name": "rt", "mount_path": "/etc/rt", "config_map": "rt"}],
                    J + "env": {"RANK_TABLE_FILE": "/etc/rt/hccl.json"},
                },
                J + "volumes[0]",
            ),
        ],
        {J + "volumes": [{"name": "code", "mount_path": "/job/code", "config_map": "code"}], J + "ranktable": True},
    ),
    "process-level-versions": (
        [
            ({J + "image.torch": "2.6.0"}, J + "image.torch"),
            ({J + "image.mindspeed_llm": "2.2.0"}, J + "image.mindspeed_llm"),
            ({"cluster.mindcluster": "7.2.RC1", J + "image.torch": "2.6.0"}, J + "image.torch"),
        ],
        # 7.2.RC1 names MindSpeed-LLM "master", no version: a declared one is not judged
        {"cluster.mindcluster": "7.2.RC1", J + "image.mindspeed_llm": "2.2.0"},
    ),
    "process-level-affinity": (
        [
            ({J + "tor_affinity": "normal-schema"}, J + "tor_affinity"),
            (
                {
                    "cluster.accelerator_type": "module-a3-16-super-pod",
                    J + "npus_per_node": 16,
                    J + "sp_block": 32,
                },
                J + "sp_block",
            ),
        ],
        {J + "tor_affinity": "normal-schema", J + "recovery.strategies": [], J + "checkpoint.dump": False},
    ),
    "process-level-a3-faults": (
        [({"cluster.accelerator_type": "module-a3-16", J + "npus_per_node": 16}, "cluster.accelerator_type")],
        {"cluster.accelerator_type": "module-910b-16", J + "npus_per_node": 16},
    ),
    "hccl-exec-timeout-atlas800": (
        [({"cluster.chip": "ascend-910", J + "hccl.exec_timeout": 100}, J + "hccl.exec_timeout")],
        {"cluster.chip": "ascend-910", J + "hccl.exec_timeout": 136},
    ),
}


def test_every_rule_has_cases() -> None:
    assert sorted(CASES) == sorted(REGISTRY), "add a breaking and a holding case for every rule"


def test_base_profile_is_clean() -> None:
    found = {v.rule for v in evaluate(profile_with({})) if v.severity == "error"}
    assert found == set()


BREAKING = [(rule, i, patch, path) for rule, (breaks, _) in CASES.items() for i, (patch, path) in enumerate(breaks)]


@pytest.mark.parametrize("rule,index,patch,path", BREAKING, ids=["%s-%d" % (r, i) for r, i, _, _ in BREAKING])
def test_rule_breaks(rule: str, index: int, patch: Dict[str, Any], path: str) -> None:
    found = ids(patch)
    assert rule in found, "expected %s, got %s" % (rule, sorted(found))
    assert path in found[rule], "expected %s to name %s, it named %s" % (rule, path, found[rule])


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_holds(rule: str) -> None:
    found = ids(CASES[rule][1])
    assert rule not in found, found.get(rule)


def test_violation_text_names_rule_path_fix_and_source() -> None:
    violations = [
        v for v in evaluate(profile_with({J + "recovery.watchdog": "on"})) if v.rule == "watchdog-process-level"
    ]
    assert violations
    text = format_violation(violations[0])
    assert text.startswith("ERROR [watchdog-process-level] jobs[0].recovery.watchdog")
    assert "Fix: " in text and "source: " in text


def test_cli_prints_rule_id_and_exits_2(tmp_path: Any, capsys: Any) -> None:
    doc = yaml.safe_load(BASE)
    doc["jobs"][0]["recovery"]["watchdog"] = "on"
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["validate", str(path)]) == 2
    captured = capsys.readouterr()
    assert "[watchdog-process-level]" in captured.err and "INVALID" in captured.err
    assert captured.out == ""


def test_warnings_fail_only_with_strict_and_can_be_acknowledged(tmp_path: Any, capsys: Any) -> None:
    doc = yaml.safe_load(BASE)
    doc["jobs"][0]["recovery"]["fault_scheduling"] = "force"  # process-level-grace is a warning
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["validate", str(path)]) == 0
    assert main(["validate", "--strict", str(path)]) == 2
    assert "WARNING [process-level-grace]" in capsys.readouterr().err
    doc["acknowledge"] = ["process-level-grace"]
    path.write_text(yaml.safe_dump(doc))
    assert main(["validate", "--strict", str(path)]) == 0
    err = capsys.readouterr().err
    assert "NOTE acknowledged warning [process-level-grace]" in err and "WARNING" not in err


def test_a_download_without_sha256_is_an_error_as_the_image_build_refuses_it() -> None:
    url = "https://example.com/taskd-7.3.0-py3-none-linux_aarch64.whl"
    found = [
        v for v in evaluate(profile_with({J + "image.wheels.taskd": {"url": url}})) if v.rule == "wheel-declaration"
    ]
    assert [(v.severity, v.paths) for v in found] == [("error", [J + "image.wheels.taskd.sha256"])]
    with_sum = evaluate(profile_with({J + "image.wheels.taskd": {"url": url, "sha256": "ab" * 32}}))
    assert not [v for v in with_sum if v.rule == "wheel-declaration"]


def _monitor_warnings(patch: Dict[str, Any]) -> List[Any]:
    return [v for v in evaluate(profile_with(patch)) if v.rule == "monitor-interval"]


def test_the_monitor_interval_warning_names_both_figures() -> None:
    """issue 31: a monitor interval above torchrun's own default says by how much, naming both figures."""
    plain = {J + "recovery.strategies": [], J + "checkpoint.dump": False}
    (v,) = _monitor_warnings({**plain, J + "recovery.monitor_interval": 1})
    assert v.severity == "warning"
    assert "every 1 s instead of its own default 0.1 s (torch 2.7.1)" in v.message
    assert "up to 0.9 s longer" in v.message
    # an older torch's default is 5 s: 5 is no slower, 10 is
    old = {**plain, J + "image.torch": "2.1.0"}
    assert not _monitor_warnings({**old, J + "recovery.monitor_interval": 5})
    (v,) = _monitor_warnings({**old, J + "recovery.monitor_interval": 10})
    assert "its own default 5 s (torch 2.1.0, before 2.4.0)" in v.message
    # under TaskD's loop (PyTorch process-level on 7.3.0) the option is not read at all
    (v,) = _monitor_warnings({J + "recovery.monitor_interval": 0.5})
    assert "is not read" in v.message and "every 1 s" in v.message
