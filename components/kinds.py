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
