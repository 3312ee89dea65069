"""Training jobs as Kubernetes objects: an AscendJob (Ascend Operator) or a Volcano Job, and the
ConfigMaps their pods mount.

Everything comes from the job's plan (labels, annotations, ports, env, volumes, resources,
ConfigMaps, command); this module only lays it out in the two job APIs:

- AscendJob ``mindxdl.gitee.com/v1``: ``replicaSpecs`` Master/Worker (PyTorch) or
  Scheduler/Worker (MindSpore), container ``ascend`` (YAMLCFG; ``D:api/ascend_job.md``).
- Volcano Job ``batch.volcano.sh/v1alpha1``: one task with every NPU pod, ``minAvailable``,
  ``maxRetry`` and ``policies``; the RankTable comes from the ``rings-config-<job>`` ConfigMap
  (RT06; VCAPI; the vcjob sample ``plan.job.VCJOB_SAMPLE``).
"""

from __future__ import annotations

from typing import Dict, List, Optional

from .. import constants as C
from ..plan.model import ConfigMapPlan, EnvVar, JobPlan, Port, ReplicaPlan, Volume
from .k8s import Obj, host_path, meta, mount

#: Container image pull policy of the training container: the reference is a digest or a pinned tag.
PULL_POLICY = "IfNotPresent"


def env_entry(e: EnvVar) -> Obj:
    if e.field_path is not None:
        return {"name": e.name, "valueFrom": {"fieldRef": {"fieldPath": e.field_path}}}
    return {"name": e.name, "value": e.value if e.value is not None else ""}


def port_entry(p: Port) -> Obj:
    return {"name": p.name, "containerPort": p.container_port, "protocol": p.protocol}


def volume_entry(v: Volume) -> Obj:
    if v.source == "empty_dir_memory":
        empty: Obj = {"medium": "Memory"}
        if v.size_limit:
            empty["sizeLimit"] = v.size_limit
        return {"name": v.name, "emptyDir": empty}
    if v.source == "pvc":
        return {"name": v.name, "persistentVolumeClaim": {"claimName": v.claim_name}}
    if v.source == "host_path":
        return host_path(v.name, v.path or "", v.host_path_type or "")
    if v.source == "config_map":
        return {"name": v.name, "configMap": {"name": v.config_map}}
    if v.source == "secret":
        return {"name": v.name, "secret": {"secretName": v.secret}}
    if v.source == "empty_dir":
        return {"name": v.name, "emptyDir": {"sizeLimit": v.size_limit} if v.size_limit else {}}
    if v.source == "nfs":
        return {"name": v.name, "nfs": {"server": v.server, "path": v.path}}
    raise ValueError("volume %s: unknown source %r" % (v.name, v.source))


def mount_entry(v: Volume) -> Obj:
    return mount(v.name, v.mount_path, read_only=v.read_only)


def container(job: JobPlan, replica: ReplicaPlan, image: str) -> Obj:
    c: Obj = {
        "name": C.CONTAINER_NAME,
        "image": image,
        "imagePullPolicy": PULL_POLICY,
        "command": list(job.command),
        "env": [env_entry(e) for e in replica.env],
        "ports": [port_entry(p) for p in replica.ports],
    }
    requests = {**job.pod.requests, **replica.resources}
    limits = {**job.pod.limits, **replica.resources}
    if requests or limits:
        c["resources"] = {"requests": requests, "limits": limits}
    c["volumeMounts"] = [mount_entry(v) for v in job.volumes]
    if job.pod.container_security:
        c["securityContext"] = dict(job.pod.container_security)
    return c


def pod_template(job: JobPlan, replica: ReplicaPlan, image: str, restart_policy: Optional[str] = None) -> Obj:
    template_meta: Obj = {"labels": dict(replica.labels)}
    if replica.annotations:
        template_meta["annotations"] = dict(replica.annotations)
    spec: Obj = {
        # the training container talks to TaskD/ClusterD over the network, never to the API server
        "automountServiceAccountToken": False,
        "nodeSelector": dict(replica.node_selector),
    }
    if replica.host_network:
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    if replica.termination_grace_period_seconds is not None:
        spec["terminationGracePeriodSeconds"] = replica.termination_grace_period_seconds
    if restart_policy is not None:
        spec["restartPolicy"] = restart_policy
    pod = job.pod
    if pod.priority_class:
        spec["priorityClassName"] = pod.priority_class
    if pod.tolerations:
        spec["tolerations"] = [dict(t) for t in pod.tolerations]
    if pod.pod_security:
        spec["securityContext"] = dict(pod.pod_security)
    if job.image.pull_secrets:
        spec["imagePullSecrets"] = [{"name": name} for name in job.image.pull_secrets]
    spec["containers"] = [container(job, replica, image)]
    spec["volumes"] = [volume_entry(v) for v in job.volumes]
    return {"metadata": template_meta, "spec": spec}


def job_metadata(job: JobPlan) -> Obj:
    m = meta(job.name, job.namespace, labels=job.labels)
    if job.annotations:
        m["annotations"] = dict(job.annotations)
    return m


def ascend_job(job: JobPlan, image: str) -> Obj:
    # the operator with gang scheduling gets the queue by name and refuses the job without it
    # (MC:component/ascend-operator/pkg/controllers/v1/ascendjob_validate.go validateBasicInfo)
    run_policy: Obj = {"schedulingPolicy": {"minAvailable": job.min_available, "queue": job.queue}}
    if job.backoff_limit is not None:
        run_policy["backoffLimit"] = job.backoff_limit
    specs: Dict[str, Obj] = {
        r.type: {"replicas": r.replicas, "restartPolicy": r.restart_policy, "template": pod_template(job, r, image)}
        for r in job.replicas
    }
    return {
        "apiVersion": job.api_version,
        "kind": job.kind,
        "metadata": job_metadata(job),
        "spec": {"schedulerName": job.scheduler_name, "runPolicy": run_policy, "replicaSpecs": specs},
    }


def volcano_job(job: JobPlan, image: str) -> Obj:
    spec: Obj = {"schedulerName": job.scheduler_name, "minAvailable": job.min_available, "queue": job.queue}
    if job.backoff_limit is not None:
        spec["maxRetry"] = job.backoff_limit
    if job.policies:
        spec["policies"] = [{"event": p.event, "action": p.action} for p in job.policies]
    spec["tasks"] = [
        {"name": r.type, "replicas": r.replicas, "template": pod_template(job, r, image, r.restart_policy)}
        for r in job.replicas
    ]
    return {"apiVersion": job.api_version, "kind": job.kind, "metadata": job_metadata(job), "spec": spec}


def config_map(job: JobPlan, cm: ConfigMapPlan, profile_text: str) -> Obj:
    """``cm`` as a ConfigMap; the one that holds the profile gets ``profile_text``, the job's own
    profile (:func:`resumable.manifests.deployment.job_profile_texts`)."""
    data = {C.PROFILE_FILE_NAME: profile_text} if cm.holds_profile else dict(cm.data)
    obj: Obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(cm.name, job.namespace, labels=cm.labels)}
    obj["data"] = data
    return obj


def workload(job: JobPlan, image: str) -> Obj:
    """The job custom resource of the plan's kind."""
    if job.kind == C.ASCENDJOB_KIND:
        return ascend_job(job, image)
    return volcano_job(job, image)


def objects(job: JobPlan, image: str, profile_text: str) -> List[Obj]:
    """The job's ConfigMaps, then the job itself (its pods mount the ConfigMaps at start)."""
    return [config_map(job, cm, profile_text) for cm in job.config_maps] + [workload(job, image)]
