"""Shared storage as Kubernetes objects: a PersistentVolumeClaim per planned volume and namespace,
bound to a static NFS PersistentVolume or provisioned from a ReadWriteMany StorageClass.

Every pod of every job mounts these claims (compile cache at ASCEND_CACHE_PATH, checkpoints, the
RankTable directory), so the access mode is ReadWriteMany (RT02; RTO 表10). NFS volumes
are created here with ``persistentVolumeReclaimPolicy: Retain`` and pre-bound to their claim
(``claimRef`` + ``volumeName``), so no other claim can take them and deleting a claim never deletes
checkpoints. Volumes provisioned from a StorageClass get that class's reclaim policy; the class must
say Retain (docs/pulumi.md).

An NFS PersistentVolume names a directory of the export (``<export>/<namespace>/<job>/<purpose>``);
a pod whose volume's directory does not exist never starts (the kubelet's mount fails and the pod
stays in ContainerCreating). So per job a Kubernetes Job (:func:`prepare_job`) mounts the export
and creates the job's directories as ``storage.nfs.owner``:``group`` with ``mode`` before any pod of
the job mounts them, checks it can write there, and otherwise fails with the directory's name and
the fix in its log. Running as that uid (not as root) is what makes it work through root_squash:
root would be mapped to nobody and could not give the directories away.
"""

from __future__ import annotations

import hashlib
from typing import Dict, List

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
    """PersistentVolumes first (cluster-scoped), then the claims, in plan order, then the Jobs that
    prepare the volumes' directories (:func:`prepare_jobs`)."""
    volumes: List[Obj] = []
    claims: List[Obj] = []
    for v in storage:
        for ns in v.namespaces:
            if v.storage == "nfs":
                volumes.append(persistent_volume(v, ns))
            claims.append(claim(v, ns))
    return recommended_labels(volumes + claims, "shared-storage") + prepare_jobs(storage)


#: Label of the Jobs that prepare the job directories (``kubectl wait -l``, :mod:`.render`).
PREPARE_LABEL = "ascend-resumable/prepare"
PREPARE_VALUE = "storage"
#: Where the prepare Job mounts the export.
EXPORT_MOUNT = "/export"
#: A Job's name is at most 63 characters (it becomes a label value of its pods).
JOB_NAME_MAX = 63

#: The prepare Job's script: for each directory (relative to the export), create it, give it the mode
#: when this uid owns it, prove a file can be created and removed; report every failure with the fix.
PREPARE_SCRIPT = """set -u
failed=0
me="uid $(id -u) gid $(id -g)"
for rel in $DIRS; do
  dir="$EXPORT_MOUNT/$rel"
  err=$(mkdir -p "$dir" 2>&1) || {
    echo "cannot create $SERVER:$EXPORT/$rel as $me: $err"
    failed=1; continue; }
  if [ "$(stat -c %u "$dir")" = "$(id -u)" ]; then
    err=$(chmod "$MODE" "$dir" 2>&1) || { echo "cannot chmod $MODE $SERVER:$EXPORT/$rel: $err"; failed=1; continue; }
  fi
  probe="$dir/.resumable-write-test.$$"
  err=$( (: > "$probe" && rm -f "$probe") 2>&1) || {
    echo "$SERVER:$EXPORT/$rel is not writable as $me: $err"
    failed=1; continue; }
  echo "ready: $SERVER:$EXPORT/$rel ($(stat -c '%u:%g %a' "$dir"))"
done
if [ "$failed" != 0 ]; then
  echo "Fix: on the NFS server create the directories above and give them to $OWNER:$GROUP mode $MODE"
  echo "(mkdir -p DIR; chown $OWNER:$GROUP DIR; chmod $MODE DIR), or make $EXPORT writable by uid $OWNER;"
  echo "or set storage.nfs.owner and group to the uid and gid the export maps the training's root user to"
  echo "(root_squash: 65534; all_squash: anonuid and anongid)."
fi
exit $failed
"""


def prepare_job_name(job: str) -> str:
    """``<job>-prepare-storage``, shortened with a hash of the job name when it would pass 63 characters."""
    name = "%s-prepare-storage" % job
    if len(name) <= JOB_NAME_MAX:
        return name
    digest = hashlib.sha256(job.encode()).hexdigest()[:8]
    return "%s-%s-prepare-storage" % (job[: JOB_NAME_MAX - len("-prepare-storage") - 9].rstrip("-"), digest)


def prepare_job(volumes: List[SharedVolumePlan]) -> Obj:
    """The Job that creates the directories of ``volumes`` (NFS volumes of one job, one export)."""
    first = volumes[0]
    namespace = first.namespaces[0]
    labels = dict(PART_OF, **{PREPARE_LABEL: PREPARE_VALUE})
    env = {
        "DIRS": " ".join(v.directory or "" for v in volumes),
        "EXPORT_MOUNT": EXPORT_MOUNT,
        "SERVER": first.server or "",
        "EXPORT": first.export or "",
        "OWNER": str(first.owner),
        "GROUP": str(first.group),
        "MODE": first.mode or "",
    }
    security: Obj = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    pod_security: Obj = {
        "runAsUser": first.owner,
        "runAsGroup": first.group,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    if first.owner:
        pod_security["runAsNonRoot"] = True
    container: Obj = {
        "name": "prepare",
        "image": first.prepare_image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["sh", "-c", PREPARE_SCRIPT],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "volumeMounts": [{"name": "export", "mountPath": EXPORT_MOUNT}],
        "securityContext": security,
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta(prepare_job_name(first.job), namespace, labels=labels),
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "securityContext": pod_security,
                    "containers": [container],
                    "volumes": [{"name": "export", "nfs": {"server": first.server, "path": first.export}}],
                },
            },
        },
    }


def prepare_jobs(storage: List[SharedVolumePlan]) -> List[Obj]:
    """One prepare Job per job with NFS volumes, in plan order."""
    by_job: Dict[str, List[SharedVolumePlan]] = {}
    for v in storage:
        if v.storage == "nfs" and v.directory:
            by_job.setdefault(v.job, []).append(v)
    return [recommended_labels([prepare_job(vs)], "shared-storage", job)[0] for job, vs in by_job.items()]
