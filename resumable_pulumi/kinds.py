"""Kubernetes kind -> pulumi_kubernetes typed resource class, and dict -> constructor kwargs."""

from __future__ import annotations

import re
from typing import Any, Dict, Type

import pulumi
import pulumi_kubernetes as k8s

RESOURCE_CLASSES: Dict[str, Type[pulumi.CustomResource]] = {
    "Namespace": k8s.core.v1.Namespace,
    "ServiceAccount": k8s.core.v1.ServiceAccount,
    "ConfigMap": k8s.core.v1.ConfigMap,
    "Secret": k8s.core.v1.Secret,
    "Service": k8s.core.v1.Service,
    "ClusterRole": k8s.rbac.v1.ClusterRole,
    "ClusterRoleBinding": k8s.rbac.v1.ClusterRoleBinding,
    "Deployment": k8s.apps.v1.Deployment,
    "DaemonSet": k8s.apps.v1.DaemonSet,
    "NetworkPolicy": k8s.networking.v1.NetworkPolicy,
    "Lease": k8s.coordination.v1.Lease,
    "CustomResourceDefinition": k8s.apiextensions.v1.CustomResourceDefinition,
    "PersistentVolume": k8s.core.v1.PersistentVolume,
    "PersistentVolumeClaim": k8s.core.v1.PersistentVolumeClaim,
}


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def constructor_kwargs(obj: Dict[str, Any]) -> Dict[str, Any]:
    """Top-level manifest keys as the typed constructor's keyword arguments (``roleRef`` ->
    ``role_ref``). Nested values stay manifest dicts, which the SDK sends unchanged."""
    return {_snake(key): value for key, value in obj.items()}


def resource_class(kind: str) -> Type[pulumi.CustomResource]:
    try:
        return RESOURCE_CLASSES[kind]
    except KeyError:
        raise ValueError(f"no pulumi_kubernetes class mapped for kind {kind}") from None


def object_key(obj: Dict[str, Any]) -> str:
    """``Kind/namespace/name`` (``Kind/name`` for cluster-scoped objects)."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{obj['kind']}/{namespace}/{meta['name']}" if namespace else f"{obj['kind']}/{meta['name']}"


def logical_name(component: str, key: str) -> str:
    """The Pulumi name of a child: stable per Kubernetes object, so its URN survives upgrades
    unless upstream renames the object (then an alias carries it over)."""
    return f"{component}-{key.replace('/', '-').lower()}"


def pull_secret(name: str, namespace: str, content: pulumi.Input[str]) -> Dict[str, Any]:
    """A ``kubernetes.io/dockerconfigjson`` Secret whose content stays a Pulumi secret."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": pulumi.Output.secret(content)},
    }


def create(name: str, obj: Dict[str, Any], options: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """The typed resource for a built-in kind, or a CustomResource (AscendJob, Volcano Job)."""
    if obj["kind"] in RESOURCE_CLASSES:
        return resource_class(obj["kind"])(name, opts=options, **constructor_kwargs(obj))
    rest = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    return k8s.apiextensions.CustomResource(
        name, api_version=obj["apiVersion"], kind=obj["kind"], metadata=obj.get("metadata"), opts=options, **rest
    )
