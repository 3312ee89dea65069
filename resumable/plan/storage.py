"""The shared-storage part of the plan: volumes Pulumi provisions (PV/PVC) and the jobs mount.

Every volume belongs to one job and one purpose, and its names come from them alone: the claim is
``<job>-<purpose>`` in the job's namespace and the NFS directory ``<export>/<namespace>/<job>/<purpose>``.
Nothing is numbered, so adding, removing or reordering jobs never moves a job's checkpoints or its
compile cache to another directory (a claim named by position would be handed to whichever job
sorts first; Pulumi would update it in place and bind the running job to an empty directory).
"""

from __future__ import annotations

from typing import List, Optional

from ..facts import JobFacts, uses_compile_cache
from ..profile import Profile
from .model import SharedVolumePlan

#: the purposes a job's shared volumes serve, as they appear in the names
COMPILE_CACHE = "op-cache"
CHECKPOINTS = "checkpoints"


def volume_name(job: str, purpose: str) -> str:
    """The claim name of ``job``'s volume for ``purpose`` (unique in the job's namespace, since job
    names are: rule unique-job-names)."""
    return "%s-%s" % (job, purpose)


def volume_of(storage: List[SharedVolumePlan], job: str, namespace: str, purpose: str) -> Optional[SharedVolumePlan]:
    """The planned volume of ``job`` for ``purpose``, or None when the plan provisions none."""
    name = volume_name(job, purpose)
    return next((v for v in storage if v.name == name and v.namespaces == [namespace]), None)


def build_storage(profile: Profile, facts: List[JobFacts]) -> List[SharedVolumePlan]:
    """Per job a volume for its compile cache (when it uses one) and one for its checkpoints. The
    ranktable needs none: the operator writes hccl.json to its host directory /user/mindx-dl/ranktable
    and the training pods read it through a hostPath volume; both hosts mount <nfs export>/ranktable
    there (plan.nodes shared_mounts), so there is no claim to provision or size."""
    s = profile.storage
    if s.nfs is None and s.storage_class is None:
        return []
    kind = "nfs" if s.nfs is not None else "storage_class"

    def vol(f: JobFacts, purpose: str, what: str, mount: str, size: str) -> SharedVolumePlan:
        job = f.job
        nfs = s.nfs
        export = nfs.path.rstrip("/") if nfs is not None else None
        directory = "%s/%s/%s" % (job.namespace, job.name, purpose) if nfs is not None else None
        return SharedVolumePlan(
            name=volume_name(job.name, purpose),
            purpose=what,
            mount_path=mount,
            storage=kind,
            server=nfs.server if nfs is not None else None,
            path="%s/%s" % (export, directory) if nfs is not None else None,
            storage_class=s.storage_class,
            size=size,
            namespaces=[job.namespace],
            job=job.name,
            export=(export or "/") if nfs is not None else None,
            directory=directory,
            owner=nfs.owner if nfs is not None else None,
            group=nfs.group if nfs is not None else None,
            mode=nfs.mode if nfs is not None else None,
            prepare_image=nfs.prepare_image if nfs is not None else None,
        )

    out: List[SharedVolumePlan] = []
    for f in sorted(facts, key=lambda f: (f.job.namespace, f.job.name)):
        if uses_compile_cache(f):
            out.append(
                vol(
                    f,
                    COMPILE_CACHE,
                    "compile cache (ASCEND_CACHE_PATH, MindSpore graph cache)",
                    f.job.compile.cache_path,
                    s.cache_size,
                )
            )
        out.append(vol(f, CHECKPOINTS, "checkpoints", f.job.checkpoint.path, s.checkpoint_size))
    return out
