"""Small constructors for the Kubernetes structures every stack component repeats."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..constants import LOG_ROOT
from ..traits import Traits

Obj = Dict[str, Any]
#: (apiGroups, resources, verbs) as written in a ClusterRole rule.
Rule = Tuple[Sequence[str], Sequence[str], Sequence[str]]

#: Upstream seccomp is the pre-1.19 pod annotation; every Kubernetes this project supports (>= 1.19)
#: takes the field the upstream YAML comments recommend instead.
SECCOMP_RUNTIME_DEFAULT: Obj = {"seccompProfile": {"type": "RuntimeDefault"}}


#: Kubernetes recommended labels (KUBE common labels): every object the builders return carries
#: them, set by :func:`recommended_labels` (the one function) where objects leave the builders
#: for both render and Pulumi: :func:`resumable.manifests.scheduler.build_stages` (the stack),
#: ``deployment.workload_namespaces``, ``storage.objects`` and ``deployment.job_objects``.
LABEL_NAME = "app.kubernetes.io/name"
LABEL_INSTANCE = "app.kubernetes.io/instance"
LABEL_PART_OF = "app.kubernetes.io/part-of"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
PART_OF = "ascend-resumable"
MANAGED_BY = "resumable"


def recommended_labels(objects: Sequence[Obj], name: str, instance: Optional[str] = None) -> List[Obj]:
    """``objects`` with the recommended labels added to their metadata: ``name`` (the component:
    volcano, ascend-operator, clusterd, ..., training-job), ``part-of``, ``managed-by`` and, for the
    objects of one job, ``instance`` (the job's name). A label a builder set already is
    kept. The objects are copied down to their labels, so shared or verbatim sources stay as
    they were."""
    out: List[Obj] = []
    for obj in objects:
        metadata = dict(obj.get("metadata") or {})
        labels = dict(metadata.get("labels") or {})
        labels.setdefault(LABEL_NAME, name)
        if instance:
            labels.setdefault(LABEL_INSTANCE, instance)
        labels.setdefault(LABEL_PART_OF, PART_OF)
        labels.setdefault(LABEL_MANAGED_BY, MANAGED_BY)
        metadata["labels"] = labels
        out.append(dict(obj, metadata=metadata))
    return out


def meta(name: str, namespace: Optional[str] = None, labels: Optional[Dict[str, str]] = None) -> Obj:
    m: Obj = {"name": name}
    if namespace:
        m["namespace"] = namespace
    if labels:
        m["labels"] = dict(labels)
    return m


def namespace(name: str, labels: Optional[Dict[str, str]] = None) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(name, labels=labels)}


def service_account(name: str, ns: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(name, ns)}


def cluster_role(name: str, rules: Sequence[Rule]) -> Obj:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": meta(name),
        "rules": [
            {"apiGroups": list(groups), "resources": list(resources), "verbs": list(verbs)}
            for groups, resources, verbs in rules
        ],
    }


def cluster_role_binding(name: str, role: str, sa: str, ns: str) -> Obj:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": meta(name),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
    }


def rbac(sa: str, ns: str, role: str, binding: str, rules: Sequence[Rule]) -> List[Obj]:
    """ServiceAccount, ClusterRole and the binding between them, in that order."""
    return [service_account(sa, ns), cluster_role(role, rules), cluster_role_binding(binding, role, sa, ns)]


def fill_pod(pod: Obj, init_containers: List[Obj], container: Obj, volumes: List[Obj]) -> Obj:
    """Attach the containers and volumes in the order upstream writes them (initContainers first)."""
    if init_containers:
        pod["initContainers"] = init_containers
    pod["containers"] = [container]
    pod["volumes"] = volumes
    return pod


def daemonset(
    name: str,
    ns: str,
    labels: Dict[str, str],
    pod: Obj,
    template_annotations: Optional[Dict[str, str]] = None,
    update_strategy: Optional[str] = None,
) -> Obj:
    template: Obj = {"metadata": {"labels": dict(labels)}, "spec": pod}
    if template_annotations:
        template["metadata"]["annotations"] = dict(template_annotations)
    spec: Obj = {"selector": {"matchLabels": dict(labels)}}
    if update_strategy:
        spec["updateStrategy"] = {"type": update_strategy}
    spec["template"] = template
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta(name, ns), "spec": spec}


def host_path(name: str, path: str, type_: str = "") -> Obj:
    hp: Obj = {"path": path}
    if type_:
        hp["type"] = type_
    return {"name": name, "hostPath": hp}


def mount(name: str, path: str, read_only: bool = False, sub_path: str = "") -> Obj:
    m: Obj = {"name": name, "mountPath": path}
    if sub_path:
        m["subPath"] = sub_path
    if read_only:
        m["readOnly"] = True
    return m


def field_env(name: str, field_path: str) -> Obj:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}


def resources(cpu: str, memory: str, memory_limit: Optional[str] = None) -> Obj:
    return {
        "requests": {"cpu": cpu, "memory": memory},
        "limits": {"cpu": cpu, "memory": memory_limit or memory},
    }


def liveness(port: int, initial: int, period: int, timeout: int) -> Obj:
    """The HTTP liveness probe the 26.1 manifests put on each healthz port."""
    return {
        "httpGet": {"path": "/", "port": port, "scheme": "HTTP"},
        "initialDelaySeconds": initial,
        "periodSeconds": period,
        "timeoutSeconds": timeout,
        "failureThreshold": 3,
    }


def shell(line: str) -> Tuple[List[str], List[str]]:
    """command/args for ``/bin/bash -c -- "<line>"`` as the MindCluster manifests start binaries."""
    return ["/bin/bash", "-c", "--"], [line]


def flag_line(program: str, flags: Sequence[Tuple[str, str]]) -> str:
    return " ".join([program] + [f"{k}={v}" for k, v in flags])


class LogDir:
    """A component's log directory under ``/var/log/mindx-dl``.

    Up to 26.0 the manifests mount ``/var/log/mindx-dl/<dir>`` with ``type: Directory`` (the node
    must create it, with the owner INST01 prescribes, before the pod starts). From 26.1 they mount
    ``/var/log`` with a subPath and an ``init-log-setup`` initContainer running as root creates the
    directory and hands it to the component's user (``MC:@branch_v26.1.0 component/*/build/*.yaml``).
    """

    def __init__(self, t: Traits, volume: str, subdir: str, owner: str) -> None:
        self.t = t
        self.volume = volume
        self.subdir = subdir
        self.owner = owner
        self.path = f"{LOG_ROOT}/{subdir}"

    def host_volume(self) -> Obj:
        if self.t.log_init_containers:
            return host_path(self.volume, "/var/log", "Directory")
        return host_path(self.volume, self.path, "Directory")

    def mount(self) -> Obj:
        sub = f"{LOG_ROOT.rsplit('/', 1)[-1]}/{self.subdir}" if self.t.log_init_containers else ""
        return mount(self.volume, self.path, sub_path=sub)

    def init_containers(self, image: str, pull_policy: str) -> List[Obj]:
        if not self.t.log_init_containers:
            return []
        script = (
            f"mkdir -p {LOG_ROOT} && chmod 755 {LOG_ROOT} && chown root:root {LOG_ROOT} && "
            f"mkdir -p {self.path} && chmod 750 {self.path} && chown {self.owner} {self.path}"
        )
        return [
            {
                "name": "init-log-setup",
                "image": image,
                "imagePullPolicy": pull_policy,
                "command": ["sh", "-c", script],
                "securityContext": {"runAsUser": 0, "runAsNonRoot": False},
                "volumeMounts": [mount(self.volume, "/var/log")],
            }
        ]
