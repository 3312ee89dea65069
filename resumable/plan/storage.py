"""The shared-storage part of the plan: volumes Pulumi provisions (PV/PVC) and the jobs mount."""

from __future__ import annotations

from typing import List

from ..facts import JobFacts, uses_compile_cache
from ..profile import Profile
from .model import SharedVolumePlan


def build_storage(profile: Profile, facts: List[JobFacts]) -> List[SharedVolumePlan]:
    """Volumes for the compile caches and the checkpoints. The ranktable needs none: the operator
    writes hccl.json to its host directory /user/mindx-dl/ranktable and the training pods read it
    through a hostPath volume; both hosts mount <nfs export>/ranktable there (plan.nodes
    shared_mounts), so there is no claim to provision or size."""
    s = profile.storage
    if s.nfs is None and s.storage_class is None:
        return []
    kind = "nfs" if s.nfs is not None else "storage_class"
    base = profile.cluster.name

    def vol(purpose: str, sub: str, mount: str, size: str, users: List[JobFacts]) -> SharedVolumePlan:
        return SharedVolumePlan(
            name="%s-%s" % (base, sub),
            purpose=purpose,
            mount_path=mount,
            storage=kind,
            server=s.nfs.server if s.nfs is not None else None,
            path=("%s/%s" % (s.nfs.path.rstrip("/"), sub)) if s.nfs is not None else None,
            storage_class=s.storage_class,
            size=size,
            namespaces=sorted({f.job.namespace for f in users}),
        )

    out: List[SharedVolumePlan] = []
    cache_paths = sorted({f.job.compile.cache_path for f in facts if uses_compile_cache(f)})
    for i, path in enumerate(cache_paths):
        out.append(
            vol(
                "compile cache (ASCEND_CACHE_PATH, MindSpore graph cache)",
                "op-cache" + ("-%d" % i if i else ""),
                path,
                s.cache_size,
                [f for f in facts if uses_compile_cache(f) and f.job.compile.cache_path == path],
            )
        )
    ckpt_paths = sorted({f.job.checkpoint.path for f in facts})
    for i, path in enumerate(ckpt_paths):
        users = [f for f in facts if f.job.checkpoint.path == path]
        out.append(vol("checkpoints", "checkpoints" + ("-%d" % i if i else ""), path, s.checkpoint_size, users))
    return out
