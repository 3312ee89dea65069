"""Shared storage as Kubernetes objects: a PersistentVolumeClaim per planned volume and namespace,
bound to a static NFS PersistentVolume or provisioned from a ReadWriteMany StorageClass.

Every pod of every job mounts these claims (compile cache at ASCEND_CACHE_PATH, checkpoints, the
RankTable directory), so the access mode is ReadWriteMany (RT02; RTO 表10). NFS volumes
are created here with ``persistentVolumeReclaimPolicy: Retain`` and pre-bound to their claim
(``claimRef`` + ``volumeName``), so no other claim can take them and deleting a claim never deletes
checkpoints. Volumes provisioned from a StorageClass get that class's reclaim policy; the class must
say Retain (docs/pulumi.md).
"""

from __future__ import annotations

from typing import List

from ..plan.model import SharedVolumePlan
from .k8s import Obj, meta, recommended_labels

ACCESS_MODES = ["ReadWriteMany"]
#: The label every storage object carries (for ``kubectl get pv,pvc -l``).
PART_OF = {"app.kubernetes.io/part-of": "ascend-resumable"}


def pv_name(volume: SharedVolumePlan, namespace: str) -> str:
    """A PersistentVolume binds one claim, so an NFS volume shared by jobs in several namespaces
    gets one PV per namespace (all on the same export path)."""
    return "%s-%s" % (volume.name, namespace)


def persistent_volume(volume: SharedVolumePlan, namespace: str) -> Obj:
    labels = dict(PART_OF, **{"ascend-resumable/volume": volume.name})
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": meta(pv_name(volume, namespace), labels=labels),
        "spec": {
            "capacity": {"storage": volume.size},
            "accessModes": list(ACCESS_MODES),
            "persistentVolumeReclaimPolicy": volume.reclaim_policy,
            "storageClassName": "",
            "nfs": {"server": volume.server, "path": volume.path},
            "claimRef": {"namespace": namespace, "name": volume.name},
        },
    }


def claim(volume: SharedVolumePlan, namespace: str) -> Obj:
    spec: Obj = {
        "accessModes": list(ACCESS_MODES),
        "resources": {"requests": {"storage": volume.size}},
    }
    if volume.storage == "nfs":
        spec["storageClassName"] = ""
        spec["volumeName"] = pv_name(volume, namespace)
    else:
        spec["storageClassName"] = volume.storage_class
    labels = dict(PART_OF, **{"ascend-resumable/volume": volume.name})
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta(volume.name, namespace, labels=labels),
        "spec": spec,
    }


def objects(storage: List[SharedVolumePlan]) -> List[Obj]:
    """PersistentVolumes first (cluster-scoped), then the claims, in plan order."""
    volumes: List[Obj] = []
    claims: List[Obj] = []
    for v in storage:
        for ns in v.namespaces:
            if v.storage == "nfs":
                volumes.append(persistent_volume(v, ns))
            claims.append(claim(v, ns))
    return recommended_labels(volumes + claims, "shared-storage")
