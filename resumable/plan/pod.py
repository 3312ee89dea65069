"""The pod part of the plan: what the profile adds to the training pods beside the recovery plan
(``jobs[].pod``), in Kubernetes form. Rule pod-settings has already refused anything here that would
override what the plan owns; this module only lays it out."""

from __future__ import annotations

from typing import Any, Dict, Tuple

from ..profile import Pod, SecurityContext, Toleration
from .model import PodSettingsPlan


def toleration(t: Toleration) -> Dict[str, Any]:
    return {
        "operator": t.operator,
        **_given(("key", t.key), ("value", t.value), ("effect", t.effect), ("tolerationSeconds", t.toleration_seconds)),
    }


def _given(*pairs: Tuple[str, Any]) -> Dict[str, Any]:
    """The Kubernetes fields the profile gives (None: left to Kubernetes)."""
    return {key: value for key, value in pairs if value is not None}


def pod_security(sc: SecurityContext) -> Dict[str, Any]:
    out = _given(
        ("runAsUser", sc.run_as_user),
        ("runAsGroup", sc.run_as_group),
        ("runAsNonRoot", sc.run_as_non_root),
        ("fsGroup", sc.fs_group),
    )
    if sc.supplemental_groups:
        out["supplementalGroups"] = list(sc.supplemental_groups)
    if sc.seccomp_profile is not None:
        out["seccompProfile"] = {"type": sc.seccomp_profile}
    return out


def container_security(sc: SecurityContext) -> Dict[str, Any]:
    out = _given(
        ("privileged", sc.privileged),
        ("allowPrivilegeEscalation", sc.allow_privilege_escalation),
        ("readOnlyRootFilesystem", sc.read_only_root_filesystem),
    )
    caps = _given(("add", list(sc.capabilities_add) or None), ("drop", list(sc.capabilities_drop) or None))
    if caps:
        out["capabilities"] = caps
    return out


def build_pod(pod: Pod) -> PodSettingsPlan:
    return PodSettingsPlan(
        requests={str(k): v for k, v in pod.requests.items()},
        limits={str(k): v for k, v in pod.limits.items()},
        tolerations=[toleration(t) for t in pod.tolerations],
        priority_class=pod.priority_class,
        pod_security=pod_security(pod.security_context),
        container_security=container_security(pod.security_context),
    )
