"""Cluster-wide consistency: releases, Volcano, Kubernetes, storage, names."""

from __future__ import annotations

from typing import Dict, Iterable, List, Tuple

from .. import releases as R
from ..facts import JobFacts, version_or_none
from ..profile import Profile
from ..versions import Version
from .base import WARNING, Finding, profile_rule


@profile_rule(
    "stack-release",
    "The scheduling stack can be deployed for this MindCluster release",
    "shared/upstream/mindcluster (releases with manifests); RN Version Compatibility",
    severity=WARNING,
)
def stack_release(profile: Profile, facts: List[JobFacts]) -> Iterable[Finding]:
    """The profile can still be validated and planned for other releases, but `resumable render` and
    `pulumi up` deploy only releases whose manifests the project reproduces."""
    release = version_or_none(profile.cluster.mindcluster)
    if release is not None and R.stack_release(release) is None:
        yield Finding(
            ["cluster.mindcluster"],
            "the scheduling stack of MindCluster %s cannot be deployed by this project (supported: %s)"
            % (release, ", ".join(R.STACK_RELEASES)),
            "Deploy the stack yourself, or use a supported release.",
        )


@profile_rule(
    "volcano-version",
    "The Volcano build exists for the release and supports the Kubernetes version",
    "build.sh; INST00; INST05; Helm values 26.1",
)
def volcano_version(profile: Profile, facts: List[JobFacts]) -> Iterable[Finding]:
    """MindCluster ships its Volcano builds per release (1.7.0/1.9.0, plus 1.12.0 from 26.1), each
    for a Kubernetes range; an unsupported pair fails at scheduler start."""
    release = version_or_none(profile.cluster.mindcluster)
    kube = version_or_none(profile.cluster.kubernetes)
    stack = R.stack_release(release) if release is not None else None
    chosen = profile.scheduler.volcano
    if chosen is not None:
        v = Version(chosen)
        key = "%d.%d.%d" % v.release[:3]
        allowed = stack.volcano if stack is not None else tuple(R.VOLCANO_BUILDS)
        if key not in allowed:
            yield Finding(
                ["scheduler.volcano", "cluster.mindcluster"],
                "Volcano %s is not shipped with MindCluster %s (available: %s)"
                % (chosen, profile.cluster.mindcluster, ", ".join(allowed)),
                "Set scheduler.volcano to one of %s, or remove it." % ", ".join(allowed),
            )
            return
    else:
        key = stack.default_volcano if stack is not None else "1.9.0"
    build = R.VOLCANO_BUILDS.get(key)
    if kube is None or build is None:
        return
    if not R.kubernetes_in_range(kube, build):
        yield Finding(
            ["cluster.kubernetes", "scheduler.volcano"],
            "Kubernetes %s is outside Volcano %s's range %s to %s"
            % (profile.cluster.kubernetes, key, build.kubernetes_min, build.kubernetes_max),
            "Choose a Volcano build whose range includes the cluster's Kubernetes.",
        )


@profile_rule(
    "kubernetes-version",
    "Kubernetes is within MindCluster's supported range",
    "APPX Preparing the Installation Environment (Kubernetes 1.17 to 1.34)",
)
def kubernetes_version(profile: Profile, facts: List[JobFacts]) -> Iterable[Finding]:
    """MindCluster documents its components for Kubernetes 1.17 to 1.34."""
    kube = version_or_none(profile.cluster.kubernetes)
    if kube is None:
        return
    mm = kube.major_minor
    if not Version(R.KUBERNETES_MIN).major_minor <= mm <= Version(R.KUBERNETES_MAX).major_minor:
        yield Finding(
            ["cluster.kubernetes"],
            "Kubernetes %s is outside MindCluster's range %s to %s"
            % (profile.cluster.kubernetes, R.KUBERNETES_MIN, R.KUBERNETES_MAX),
            "Use a supported Kubernetes version.",
        )


@profile_rule("storage-choice", "Shared storage is either NFS or a storage class", "RT02; RT05")
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


@profile_rule("unique-job-names", "Job names are unique per namespace", "Kubernetes object naming")
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
