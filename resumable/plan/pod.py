"""The pod part of the plan: what the profile adds to the training pods beside the recovery plan
(``jobs[].pod``), in Kubernetes form. Rule pod-settings has already refused anything here that would
override what the plan owns; this module only lays it out."""

from __future__ import annotations

from typing import Any, Dict, List

from ..profile import Pod, SecurityContext, Toleration
from .model import PodSettingsPlan


def toleration(t: Toleration) -> Dict[str, Any]:
    out: Dict[str, Any] = {"operator": t.operator}
    if t.key is not None:
        out["key"] = t.key
    if t.value is not None:
        out["value"] = t.value
    if t.effect is not None:
        out["effect"] = t.effect
    if t.toleration_seconds is not None:
        out["tolerationSeconds"] = t.toleration_seconds
    return out


def pod_security(sc: SecurityContext) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for key, value in (
        ("runAsUser", sc.run_as_user),
        ("runAsGroup", sc.run_as_group),
        ("runAsNonRoot", sc.run_as_non_root),
        ("fsGroup", sc.fs_group),
    ):
        if value is not None:
            out[key] = value
    if sc.supplemental_groups:
        out["supplementalGroups"] = list(sc.supplemental_groups)
    if sc.seccomp_profile is not None:
        out["seccompProfile"] = {"type": sc.seccomp_profile}
    return out


def container_security(sc: SecurityContext) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for key, value in (
        ("privileged", sc.privileged),
        ("allowPrivilegeEscalation", sc.allow_privilege_escalation),
        ("readOnlyRootFilesystem", sc.read_only_root_filesystem),
    ):
        if value is not None:
            out[key] = value
    caps: Dict[str, List[str]] = {}
    if sc.capabilities_add:
        caps["add"] = list(sc.capabilities_add)
    if sc.capabilities_drop:
        caps["drop"] = list(sc.capabilities_drop)
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
