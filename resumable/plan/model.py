"""The plan: everything a profile implies, as plain data for Pulumi, Ansible and the launcher.

Every consumer reads these dataclasses (or their ``to_dict()`` form, which is what
``resumable plan --format json|yaml`` prints); none of them recomputes a decision.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class PlanPart:
    def to_dict(self) -> Dict[str, Any]:
        result = _plain(self)
        assert isinstance(result, dict)
        return result


@dataclasses.dataclass
class Note(PlanPart):
    """A fact the plan applied or a decision a person must know about, with its source."""

    text: str
    source: str


@dataclasses.dataclass
class SchedulerPlan(PlanPart):
    """Settings of the MindCluster scheduling stack (consumed by ``resumable.stack``)."""

    release: str
    stack_release: Optional[str]  # the release whose manifests are deployed; None: not deployable
    arch: str  # aarch64 | x86_64
    kubernetes: str
    container_runtime: str  # containerd | docker
    volcano_version: str
    volcano_plugin_name: str
    image_registry: str
    image_pull_policy: Optional[str]
    image_pull_secrets: List[str]
    #: device plugin arguments the resilience settings require, e.g. {"-hotReset": "2"}
    device_plugin_args: Dict[str, str]
    #: NodeD arguments, e.g. {"-reportInterval": "5"}
    noded_args: Dict[str, str]
    #: Volcano scheduler ``init-params`` overrides, e.g. {"grace-over-time": "900"}
    volcano_init_params: Dict[str, str]
    grace_over_time: int
    hot_reset: Optional[int]
    list_watch_period: int
    report_interval: int
    node_selector_master: Dict[str, str]
    node_selector_worker: Dict[str, str]
    resources: Dict[str, Dict[str, str]]  # component -> {"cpu": "...", "memory": "..."}
    notes: List[Note]


@dataclasses.dataclass
class EnvVar(PlanPart):
    name: str
    value: Optional[str] = None
    #: downward-API field path (e.g. "status.podIP") instead of a literal value
    field_path: Optional[str] = None
    #: who needs it and why (printed by the text plan, not rendered into YAML)
    reason: str = ""


@dataclasses.dataclass
class Port(PlanPart):
    name: str
    container_port: int
    protocol: str = "TCP"
    reason: str = ""


@dataclasses.dataclass
class Volume(PlanPart):
    """A pod volume and where the training container mounts it."""

    name: str
    mount_path: str
    #: one of: nfs, pvc, host_path, empty_dir_memory, config_map
    source: str
    server: Optional[str] = None
    path: Optional[str] = None
    claim_name: Optional[str] = None
    read_only: bool = False
    size_limit: Optional[str] = None
    reason: str = ""


@dataclasses.dataclass
class ReplicaPlan(PlanPart):
    """One AscendJob replica spec (Master/Worker for PyTorch, Scheduler/Worker for MindSpore)."""

    type: str
    replicas: int
    npus: int
    restart_policy: str
    host_network: bool
    termination_grace_period_seconds: int
    ports: List[Port]
    env: List[EnvVar]
    runs_taskd_manager: bool
    labels: Dict[str, str]
    annotations: Dict[str, str]


@dataclasses.dataclass
class SharedVolumePlan(PlanPart):
    """A volume on shared storage that Pulumi provisions (PV/PVC) and every pod mounts."""

    name: str
    purpose: str
    mount_path: str
    storage: str  # nfs | storage_class
    server: Optional[str]
    path: Optional[str]
    storage_class: Optional[str]
    size: str


@dataclasses.dataclass
class ImagePlan(PlanPart):
    """How the training image must be built for the chosen recovery features."""

    base: Optional[str]
    framework: str
    wheels: List[str]
    runpy_patch: Optional[str]  # the import line inserted before the anchor in torch/distributed/run.py
    runpy_anchor: Optional[str]  # "import os" (TaskD) or "import logging" (mindx_elastic)
    dockerfile: List[str]
    notes: List[Note]


@dataclasses.dataclass
class TaskdManagerPlan(PlanPart):
    """Where the TaskD Manager runs and the config it is started with (TASKDAPI 04)."""

    enabled: bool
    where: str  # "rank0" | "scheduler" | "none"
    condition: str  # the shell test the launcher uses
    job_id_env: str
    node_nums: int
    proc_per_node: int
    process_enable: Optional[str]  # value of TASKD_PROCESS_ENABLE, None = unset


@dataclasses.dataclass
class LauncherPlan(PlanPart):
    """What the in-image launcher (``resumable launch``) does."""

    launcher: str  # torchrun | torch_npu_run | msrun
    args: List[str]
    env: List[EnvVar]
    ld_preload: List[str]
    taskd_manager: TaskdManagerPlan
    compile_mode: str  # binaries | cache | default
    jit_compile: Optional[bool]
    notes: List[Note]


@dataclasses.dataclass
class BudgetTerm(PlanPart):
    name: str  # T0..T4 and detection
    seconds: float
    assumption: str
    source: str


@dataclasses.dataclass
class BudgetLine(PlanPart):
    level: str
    terms: List[BudgetTerm]
    total_seconds: float


@dataclasses.dataclass
class BudgetPlan(PlanPart):
    """Recovery time per fault for each level of the ladder, against plain job-level rescheduling."""

    ladder: List[BudgetLine]  # first tried first
    baseline: BudgetLine  # job-level rescheduling, collective timeout, no compile help
    best_saving_seconds: float
    worst_saving_seconds: float


@dataclasses.dataclass
class JobPlan(PlanPart):
    name: str
    namespace: str
    kind: str  # AscendJob | Job (Volcano)
    framework: str
    levels: List[str]  # the recovery ladder, first tried first
    strategies: List[str]
    labels: Dict[str, str]
    annotations: Dict[str, str]
    replicas: List[ReplicaPlan]
    volumes: List[Volume]
    image: ImagePlan
    launcher: LauncherPlan
    budget: BudgetPlan
    notes: List[Note]


@dataclasses.dataclass
class NodePlan(PlanPart):
    """What every compute node needs (consumed by the Ansible roles)."""

    labels: Dict[str, str]
    master_labels: Dict[str, str]
    users: List[Dict[str, Any]]
    log_dirs: List[Dict[str, Any]]
    reserved_ports: List[int]
    shared_mounts: List[Dict[str, Any]]
    ranktable_dirs: List[str]
    nofile_limit: Optional[int]
    notes: List[Note]
    #: cluster.hdk: the NPU driver/firmware (HDK) version the nodes must run; None = not managed
    hdk: Optional[str]
    chip: str  # cluster.chip: ascend-910 | ascend-910b | ascend-npu
    accelerator_type: str  # cluster.accelerator_type, e.g. module-910b-8
    arch: str  # cluster.arch: aarch64 | x86_64


@dataclasses.dataclass
class Violation(PlanPart):
    rule: str
    severity: str  # error | warning
    paths: List[str]
    message: str
    fix: str
    source: str


@dataclasses.dataclass
class Plan(PlanPart):
    profile: str
    cluster_name: str
    scheduler: SchedulerPlan
    nodes: NodePlan
    storage: List[SharedVolumePlan]
    jobs: List[JobPlan]
    violations: List[Violation]
