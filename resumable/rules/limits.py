"""The documented limits of process-level rescheduling (进程级别重调度 使用约束) a profile can break.

The constraints page (HA73-025 for 7.3.0, HA72-025 for 7.2.RC1; the 26.x guide's 01_fault_handling.md)
lists, besides what other rules check (graceful fault tolerance, MindIO and ClusterD, the device
plugin's hot reset, the watchdog, AscendJob only): no RankTable from a ConfigMap; the versions it is
documented with; single-container migration, not migration by affinity; on Atlas A3 a card drop or an
OS disconnect can make it fail. A limit the vendor states as "may" (可能, 可导致) is a warning, and so is
one whose effect depends on what the cluster offers (each rule says why). What the profile cannot
express (multimodal models, Megatron-based models in PyTorch single-operator mode, a fault during HCCL
link setup or a checkpoint save) and a known small chance of failure (MindSpore on 26.x, like gloo on
26.1) are plan notes (plan/job.py, plan/budget.py).
"""

from __future__ import annotations

import posixpath
from typing import Iterable, List

from .. import constants as C
from .. import hardware as H
from .. import releases as R
from ..facts import JobFacts, version_or_none
from ..profile import Profile
from ..versions import Version
from .base import WARNING, Finding, job_rule

#: the strategies of process-level rescheduling (the page's recover and recover-in-place)
RESCHEDULING_STRATEGIES = ("recover", "recover-in-place")
#: the 26.x page of process-level rescheduling, where its constraints are
GUIDE_26 = R.GUIDE_26_CONSTRAINTS


def _rescheduling(f: JobFacts) -> List[str]:
    """The job's process-level rescheduling strategies, in profile order."""
    return [s for s in f.strategies if s in RESCHEDULING_STRATEGIES]


def _under(path: str, mount: str) -> bool:
    return path == mount or path.startswith(mount.rstrip("/") + "/")


@job_rule(
    "ranktable-configmap",
    "Pod- and process-level rescheduling do not read the RankTable from a ConfigMap",
    "HA73-025 使用约束; HA73-024 Restrictions; %s; RT06" % GUIDE_26,
    severity=WARNING,
)
def ranktable_configmap(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """ "请勿使用ConfigMap挂载RankTable文件，否则可能会导致任务重调度失败" (do not mount the RankTable file from
    a ConfigMap, or rescheduling may fail): a constraint of Pod-level rescheduling, process-level
    rescheduling and online recovery alike. A Volcano Job gets its RankTable from the ConfigMap
    rings-config-<job> (RT06); a user volume from a ConfigMap at the RankTable's path, or RANK_TABLE_FILE
    pointing into one, does the same for an AscendJob. An AscendJob in file mode (jobs[].ranktable) has the
    operator write hccl.json to shared storage instead (RT05 Table 4). The vendor says "may": a warning."""
    if not (f.pod_level or f.process_level):
        return
    what = "Pod-level rescheduling" if f.pod_level else "process-level recovery"
    if f.job.kind == "vcjob" and f.pod_level:
        yield Finding(
            ["%s.kind" % f.path, "%s.recovery.pod_rescheduling" % f.path],
            "a Volcano Job reads its RankTable from the ConfigMap %s%s, which the constraints of %s advise against "
            "(rescheduling may fail)" % (C.RINGS_CONFIG_PREFIX, f.job.name, what),
            "Use kind: ascendjob (jobs[].ranktable: true puts the RankTable on shared storage), or acknowledge "
            "ranktable-configmap.",
        )
    table_file = f.job.env.get(C.ENV_RANK_TABLE_FILE)
    for i, v in enumerate(f.job.volumes):
        if v.config_map is None or not posixpath.isabs(v.mount_path):
            continue
        mount = v.mount_path.rstrip("/") or "/"
        holds = _under(C.RANKTABLE_MOUNT, mount) or (table_file is not None and _under(table_file, mount))
        if holds:
            yield Finding(
                ["%s.volumes[%d]" % (f.path, i)],
                "volume %r mounts the ConfigMap %s where the RankTable is read (%s), which the constraints of %s "
                "advise against (rescheduling may fail)"
                % (v.name, v.config_map, table_file or C.RANKTABLE_MOUNT, what),
                "Take the RankTable from shared storage (jobs[].ranktable: true), or acknowledge ranktable-configmap.",
            )


@job_rule(
    "process-level-versions",
    "Process-level rescheduling of PyTorch uses the torch and MindSpeed-LLM versions it is documented with",
    "HA71-025 使用约束; HA72-025 使用约束; HA73-025 使用约束; %s" % GUIDE_26,
    severity=WARNING,
)
def process_level_versions(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """ "进程级重调度支持的版本配套关系" (the versions process-level rescheduling supports): PyTorch 2.1.0 on
    7.1.RC1; PyTorch 2.7.1 on 7.2.RC1 (MindSpeed-LLM master); PyTorch 2.7.1 with MindSpeed-LLM 2.3.0 on
    7.3.0; MindSpeed-LLM 2.3.0 (by its own version table) in the 26.x guide. It is the combination the
    vendor tested; TaskD itself runs on torch 2.1.0 to 2.7.1 (RT07 Table 1) and nothing documents another
    version failing, so a declared version that differs is a warning. Undeclared versions are not judged."""
    if not f.is_pytorch or not _rescheduling(f):
        return
    row = R.process_level_versions(f.release)
    if row is None:
        return
    mindspeed = version_or_none(f.job.image.mindspeed_llm)
    checks = (
        ("torch", row.torch, f.torch, "%s.image.torch" % f.path),
        ("MindSpeed-LLM", row.mindspeed_llm, mindspeed, "%s.image.mindspeed_llm" % f.path),
    )
    for name, documented, declared, where in checks:
        if documented is None or declared is None:
            continue
        if declared.release != Version(documented).release:
            yield Finding(
                [where, "%s.recovery.strategies" % f.path, "cluster.mindcluster"],
                "process-level rescheduling on MindCluster %s is documented with %s %s, the image has %s (%s)"
                % (f.release, name, documented, declared, row.source),
                "Use %s %s, or acknowledge process-level-versions after testing this combination." % (name, documented),
            )


@job_rule(
    "process-level-affinity",
    "Process-level rescheduling moves one container, not a group kept together by affinity",
    "HA73-025 使用约束; %s; MC:@v7.3.0 component/ascend-for-volcano/internal/rescheduling/job.go:239-257" % GUIDE_26,
    severity=WARNING,
)
def process_level_affinity(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """ "只支持单容器迁移，不支持按照亲和性迁移" (only single-container migration, no migration by affinity). A
    job placed by switch affinity (tor-affinity) or in logical SuperPoDs (sp-block) keeps that placement
    when a pod moves: the scheduler first places the faulty pod alone and, when it stays pending (6
    sessions for a SuperPoD job, 12 for switch affinity), moves the whole logical SuperPoD or the job
    (ascend-for-volcano rescheduling/job.go). Those moves are not process-level rescheduling: the fault
    then takes a slower level. Whether a free node fits depends on the cluster: a warning."""
    strategies = _rescheduling(f)
    if not strategies:
        return
    placed = [(field_, value) for field_, value in (("tor_affinity", f.job.tor_affinity), ("sp_block", f.job.sp_block))]
    for field_, value in placed:
        if value is None:
            continue
        yield Finding(
            ["%s.%s" % (f.path, field_), "%s.recovery.strategies" % f.path],
            "%s %s keeps the job's pods together, but process-level rescheduling (%s) moves a single container: "
            "where no single free node keeps the placement, the scheduler moves a group of pods or the whole job "
            "instead, a slower level" % (field_, value, ", ".join(strategies)),
            "Keep a spare node in each %s, or acknowledge process-level-affinity."
            % ("switch" if field_ == "tor_affinity" else "logical SuperPoD"),
        )


@job_rule(
    "process-level-a3-faults",
    "On Atlas A3 an NPU card drop or an OS disconnect can make process-level rescheduling fail",
    "HA70-025 使用约束; HA73-025 使用约束; %s" % GUIDE_26,
    severity=WARNING,
)
def process_level_a3_faults(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """ "Atlas A3 训练系列产品场景下，若发生NPU掉卡类、OS断连类的故障，可导致进程级别重调度失败" (on Atlas A3, NPU
    card-drop and OS-disconnect faults can make process-level rescheduling fail): such a fault falls back to
    Pod- or Job-level rescheduling (the fallback of 表6 恢复策略决策), so the job needs one. The vendor says
    "can": a warning."""
    strategies = _rescheduling(f)
    if not strategies or f.cluster.accelerator_type not in H.A3_TYPES:
        return
    fallback = "Pod-level" if f.pod_level else ("Job-level" if f.job_level else "no")
    yield Finding(
        ["cluster.accelerator_type", "%s.recovery.strategies" % f.path],
        "on Atlas A3 (%s) an NPU card drop or an OS disconnect can make process-level rescheduling (%s) fail; "
        "such faults then take %s rescheduling" % (f.cluster.accelerator_type, ", ".join(strategies), fallback),
        "Keep Pod- or Job-level rescheduling as the fallback (recovery.fault_scheduling), and acknowledge "
        "process-level-a3-faults.",
    )
