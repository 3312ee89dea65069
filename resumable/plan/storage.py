"""The shared-storage part of the plan: volumes Pulumi provisions (PV/PVC) and the jobs mount."""

from __future__ import annotations

from typing import List

from .. import constants as C
from ..facts import JobFacts
from ..profile import Profile
from .model import SharedVolumePlan


def uses_cache_volume(f: JobFacts) -> bool:
    """The operator compile cache (ASCEND_CACHE_PATH, seed 表10) and the MindSpore graph cache
    (MS_COMPILER_CACHE_PATH under the same path, RT05) both live on the shared cache volume."""
    c = f.job.compile
    return c.mode == "cache" or (c.mindspore_graph_cache and not f.is_pytorch)


def build_storage(profile: Profile, facts: List[JobFacts]) -> List[SharedVolumePlan]:
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
    cache_paths = sorted({f.job.compile.cache_path for f in facts if uses_cache_volume(f)})
    for i, path in enumerate(cache_paths):
        out.append(
            vol(
                "operator compile cache (ASCEND_CACHE_PATH)",
                "op-cache" + ("-%d" % i if i else ""),
                path,
                s.cache_size,
                [f for f in facts if uses_cache_volume(f) and f.job.compile.cache_path == path],
            )
        )
    ckpt_paths = sorted({f.job.checkpoint.path for f in facts})
    for i, path in enumerate(ckpt_paths):
        users = [f for f in facts if f.job.checkpoint.path == path]
        out.append(vol("checkpoints", "checkpoints" + ("-%d" % i if i else ""), path, s.checkpoint_size, users))
    if s.nfs is not None and any(f.job.ranktable for f in facts):
        # The operator writes <ns>.<job>/hccl.json under its hostPath /user/mindx-dl/ranktable, which the
        # nodes mount from <export>/ranktable (plan.nodes.shared_mounts); the jobs mount the same export.
        users = [f for f in facts if f.job.ranktable]
        out.append(vol("ranktable (hccl.json)", "ranktable", C.RANKTABLE_MOUNT, s.ranktable_size, users))
    return out
