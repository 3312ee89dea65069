"""Cluster-wide consistency: releases, Volcano, Kubernetes, storage, names."""

from __future__ import annotations

from typing import Dict, Iterable, List, Tuple

from .. import releases as R
from ..facts import JobFacts, version_or_none
from ..profile import Profile
from .base import WARNING, Finding, profile_rule


def _problems(profile: Profile, kind: str) -> List[R.DeployProblem]:
    release = version_or_none(profile.cluster.mindcluster)
    if release is None:
        return []
    kube = version_or_none(profile.cluster.kubernetes)
    return [p for p in R.deployability(release, profile.scheduler.volcano, kube) if p.kind == kind]


@profile_rule(
    "stack-release",
    "The scheduling stack can be deployed for this MindCluster release",
    "RN Version Compatibility (releases with manifests this project reproduces)",
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
    "build.sh; INST00; INST05; Helm values 26.1",
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
