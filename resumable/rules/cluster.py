"""Cluster-wide consistency: releases, Volcano, Kubernetes, storage, names."""

from __future__ import annotations

import difflib
from typing import Dict, Iterable, List, Tuple

from .. import constants as C
from .. import releases as R
from ..facts import JobFacts, version_or_none
from ..profile import Profile
from .base import REGISTRY, WARNING, Finding, profile_rule


def _problems(profile: Profile, kind: str) -> List[R.DeployProblem]:
    release = version_or_none(profile.cluster.mindcluster)
    if release is None:
        return []
    kube = version_or_none(profile.cluster.kubernetes)
    return [p for p in R.deployability(release, profile.scheduler.volcano, kube) if p.kind == kind]


@profile_rule(
    "stack-release",
    "The scheduling stack can be deployed for this MindCluster release",
    "RN Version Compatibility; PROJECT (the releases whose manifests this project reproduces)",
    severity=WARNING,
)
def stack_release(profile: Profile, facts: List[JobFacts]) -> Iterable[Finding]:
    """The profile can still be validated and planned for other releases, but `resumable render` and
    `pulumi up` deploy only releases whose manifests the project reproduces."""
    for p in _problems(profile, "release"):
        yield Finding(["cluster.mindcluster"], p.message, p.fix + ".")


@profile_rule(
    "volcano-version",
    "The Volcano build exists for the release and supports the Kubernetes version",
    "MC:@v7.3.0 component/ascend-for-volcano/build/build.sh; INST00; INST05; HELM values.yaml",
)
def volcano_version(profile: Profile, facts: List[JobFacts]) -> Iterable[Finding]:
    """MindCluster ships its Volcano builds per release (1.7.0/1.9.0, plus 1.12.0 from 26.1), each
    for a Kubernetes range; an unsupported pair fails at scheduler start."""
    for p in _problems(profile, "volcano"):
        yield Finding(["scheduler.volcano", "cluster.mindcluster"], p.message, p.fix + ".")
    for p in _problems(profile, "kubernetes-volcano"):
        yield Finding(["cluster.kubernetes", "scheduler.volcano"], p.message, p.fix + ".")


@profile_rule(
    "kubernetes-version",
    "Kubernetes is within MindCluster's supported range",
    "APPX Preparing the Installation Environment (Kubernetes 1.17 to 1.34)",
)
def kubernetes_version(profile: Profile, facts: List[JobFacts]) -> Iterable[Finding]:
    """MindCluster documents its components for Kubernetes 1.17 to 1.34."""
    for p in _problems(profile, "kubernetes"):
        yield Finding(["cluster.kubernetes"], p.message, p.fix + ".")


@profile_rule("storage-choice", "Shared storage is either NFS or a storage class", "RT02; RT05", warns=True)
def storage_choice(profile: Profile, facts: List[JobFacts]) -> Iterable[Finding]:
    """One source of shared storage keeps every pod, and the ranktable the operator writes, on the
    same file system; checkpoints on a pod's own disk are lost with the pod."""
    s = profile.storage
    if s.nfs is not None and s.storage_class is not None:
        yield Finding(
            ["storage.nfs", "storage.storage_class"],
            "both nfs and storage_class are set",
            "Keep one of them.",
        )
    if s.nfs is None and s.storage_class is None:
        for f in facts:
            if f.job_level or f.job.ranktable:
                yield Finding(
                    ["storage", "%s.checkpoint.path" % f.path],
                    "no shared storage: checkpoints (and the ranktable) would not survive rescheduling",
                    "Add storage.nfs or storage.storage_class.",
                    severity=WARNING,
                )
                break


@profile_rule("unique-job-names", "Job names are unique per namespace", "KUBE object names")
def unique_job_names(profile: Profile, facts: List[JobFacts]) -> Iterable[Finding]:
    """Two templates with one name would render to the same AscendJob and overwrite each other."""
    seen: Dict[Tuple[str, str], int] = {}
    for i, job in enumerate(profile.jobs):
        key = (job.namespace, job.name)
        if key in seen:
            yield Finding(
                ["jobs[%d].name" % seen[key], "jobs[%d].name" % i],
                "two jobs are named %s in namespace %s" % (job.name, job.namespace),
                "Rename one of them.",
            )
        else:
            seen[key] = i


@profile_rule(
    "ranktable-nfs",
    "RankTable mode needs the NFS export the nodes mount for the operator's hccl.json",
    "INST08 step 4; RT05 Table 4; RT06; FAQ 323",
    severity=WARNING,
)
def ranktable_nfs(profile: Profile, facts: List[JobFacts]) -> Iterable[Finding]:
    """The Ascend Operator writes hccl.json under its host directory /user/mindx-dl/ranktable and
    the training pods read it from the same host path on their nodes, so that directory must be one
    shared file system on every node. The node plan mounts <storage.nfs.path>/ranktable there; with
    a storage class only, nothing does, and the pods find no hccl.json (FAQ 323) unless the nodes
    mount a shared directory there by other means."""
    if profile.storage.nfs is not None:
        return
    for f in facts:
        if f.job.ranktable:
            yield Finding(
                ["%s.ranktable" % f.path, "storage.nfs"],
                "ranktable mode needs %s shared by every node, and without storage.nfs the node plan mounts "
                "nothing there" % C.RANKTABLE_HOST_ROOT,
                "Use storage.nfs, or mount a shared directory at %s on every node yourself and acknowledge "
                "ranktable-nfs." % C.RANKTABLE_HOST_ROOT,
            )


@profile_rule(
    "acknowledge",
    "acknowledge names warning rules that exist",
    "PROJECT (acknowledge turns a rule's warnings into plan notes)",
)
def acknowledge(profile: Profile, facts: List[JobFacts]) -> Iterable[Finding]:
    """Acknowledging is for warnings a user has read and accepts; an unknown id (a typo, or a rule
    renamed in a later version) would silently acknowledge nothing, and an error cannot be
    acknowledged away."""
    for i, rule_id in enumerate(profile.acknowledge):
        where = ["acknowledge[%d]" % i]
        rule = REGISTRY.get(rule_id)
        if rule is None:
            close = difflib.get_close_matches(rule_id, list(REGISTRY), n=1)
            hint = ("Did you mean %r? " % close[0]) if close else ""
            yield Finding(
                where,
                "acknowledge[%d] names %r, which is not a rule" % (i, rule_id),
                "%sThe rule ids are listed in docs/rules.md." % hint,
            )
        elif not rule.acknowledgeable:
            yield Finding(
                where,
                "acknowledge[%d] names %r, a rule that only reports errors, which cannot be acknowledged"
                % (i, rule_id),
                "Remove %r from acknowledge and fix what the rule reports." % rule_id,
            )
