"""Job- and Pod-level rescheduling, unconditional retry."""

from __future__ import annotations

from typing import Iterable, List

from .. import releases as R
from ..facts import JobFacts
from ..profile import Profile
from .base import WARNING, Finding, job_rule


@job_rule(
    "fault-scheduling-required",
    "Rescheduling, retry and process-level recovery need the fault-scheduling label",
    "YAMLCFG fault-scheduling; RT04 Table 1",
)
def fault_scheduling_required(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """Without fault-scheduling (grace or force) MindCluster does no resumable training at all:
    pod-rescheduling, fault-retry-times and recover-strategy are then ignored."""
    r = f.job.recovery
    if r.fault_scheduling != "off":
        return
    asked: List[str] = []
    if r.pod_rescheduling:
        asked.append("%s.recovery.pod_rescheduling" % f.path)
    if f.strategies:
        asked.append("%s.recovery.strategies" % f.path)
    if r.fault_retry_times is not None:
        asked.append("%s.recovery.fault_retry_times" % f.path)
    if asked:
        yield Finding(
            ["%s.recovery.fault_scheduling" % f.path, *asked],
            "fault_scheduling is off, so the recovery settings at %s have no effect" % ", ".join(asked),
            "Set recovery.fault_scheduling: grace.",
        )


@job_rule(
    "pod-rescheduling-release",
    "Pod-level rescheduling needs cluster components 6.0.RC2 or later",
    R.POD_RESCHEDULING.source,
)
def pod_rescheduling_release(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """Pod-level rescheduling is supported only by 6.0.RC2 and later cluster-scheduling components."""
    if f.pod_level and not f.at_least(R.POD_RESCHEDULING):
        yield Finding(
            ["cluster.mindcluster", "%s.recovery.pod_rescheduling" % f.path],
            "pod_rescheduling needs MindCluster %s or later, the cluster runs %s"
            % (R.POD_RESCHEDULING.since, f.release),
            "Upgrade MindCluster or use job-level rescheduling (pod_rescheduling: false).",
        )


@job_rule(
    "runpy-patch-package",
    "The torch run.py patch comes from mindx_elastic up to 7.2 and from TaskD from 7.3",
    "RTO 表2 Dockerfile; PLR 构建镜像; INST00 (Elastic Agent EOL 7.3.0)",
)
def runpy_patch_package(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """Graceful fault tolerance, Pod-level and process-level recovery in PyTorch need torch's
    distributed/run.py patched by the in-container agent: `import mindx_elastic.api` up to 7.2,
    `import taskd.python.adaptor.patch` from 7.3.0, where the Elastic Agent reached end of life."""
    if not f.is_pytorch:
        return
    versions = f.wheel_versions
    needs_agent = f.uses_taskd or f.uses_mindx_elastic
    if f.uses_mindx_elastic and versions.get("mindx_elastic") is None:
        yield Finding(
            ["%s.image.mindx_elastic" % f.path, "cluster.mindcluster"],
            "MindCluster %s patches torch run.py with the Elastic Agent, but the image has no mindx_elastic "
            "wheel" % f.release,
            "Declare image.mindx_elastic (the wheel matching the cluster release) or upgrade to 7.3.0+ and use TaskD.",
        )
    if f.at_least(R.TASKD_RUNPY_PATCH) and needs_agent and versions.get("taskd") is None:
        yield Finding(
            ["%s.image.taskd" % f.path, "cluster.mindcluster"],
            "from MindCluster 7.3.0 torch run.py is patched by TaskD, but the image has no taskd wheel",
            "Declare image.taskd (the TaskD wheel of release %s)." % f.release,
        )
    if f.at_least(R.TASKD_RUNPY_PATCH) and versions.get("mindx_elastic") is not None:
        yield Finding(
            ["%s.image.mindx_elastic" % f.path, "cluster.mindcluster"],
            "mindx_elastic reached end of life in MindCluster 7.3.0; the cluster runs %s" % f.release,
            "Remove image.mindx_elastic (pip uninstall mindx-elastic, drop its run.py line) and use TaskD.",
        )


@job_rule(
    "force-host-network",
    "fault-scheduling force and the host network do not go together, at any recovery level",
    "YAMLCFG fault-scheduling (force); RT01 Pod-level rescheduling constraints",
    severity=WARNING,
)
def force_host_network(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """With force, a faulty pod is deleted at once and its replacement scheduled immediately; on the
    host network the replacement can meet ports (HCCL, TaskD 9601/9602, ascendjob-port) that the
    old pod's processes still hold on the same node. The MindCluster documentation rules force out
    together with hostNetwork; official samples still combine them, so this is a warning for every
    recovery level (job-, Pod- and process-level) rather than an error."""
    if f.job.recovery.fault_scheduling == "force" and f.host_network:
        yield Finding(
            ["%s.recovery.fault_scheduling" % f.path, "cluster.host_network"],
            "fault_scheduling force on the host network: a replacement pod can meet ports the deleted one still holds",
            "Use fault_scheduling: grace, or turn cluster.host_network off, or acknowledge force-host-network.",
        )


@job_rule(
    "retry-restart-policy",
    "fault-retry-times needs restartPolicy Never",
    "YAMLCFG fault-retry-times; VCAPI; RT01 Service Plane Faults",
)
def retry_restart_policy(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """Unconditional retry reacts to a pod in phase Failed; with any other restart policy the kubelet
    restarts the container in place and the pod never fails."""
    r = f.job.recovery
    if r.fault_retry_times is not None and r.restart_policy != "Never":
        yield Finding(
            ["%s.recovery.fault_retry_times" % f.path, "%s.recovery.restart_policy" % f.path],
            "fault_retry_times is set but restart_policy is %s" % r.restart_policy,
            "Set recovery.restart_policy: Never.",
        )
