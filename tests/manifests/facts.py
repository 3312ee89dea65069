"""Reduce a Kubernetes object to the facts the parity tests compare.

The upstream release manifests (``../shared/upstream/mindcluster/<release>/``) and the objects
``resumable.manifests.build_stack`` returns both go through :func:`facts`, so a parity test compares
like with like: RBAC rules as sets of (apiGroup, resource, verb), container args as token lists
(the shell wrappers ``umask 027;`` and ``2>&1`` removed), host paths, ports and scheduling fields.
"""

from __future__ import annotations

import functools
import shlex
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

import yaml

Key = Tuple[str, str, str]  # kind, namespace, name
_SHELL_NOISE = {"umask", "027", "2>&1", "027;"}


def key_of(obj: Dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (obj["kind"], meta.get("namespace") or "", meta["name"])


def rule_triples(rules: List[Dict[str, Any]]) -> FrozenSet[Tuple[str, str, str]]:
    return frozenset(
        (group, resource, verb)
        for rule in rules
        for group in rule.get("apiGroups") or [""]
        for resource in rule.get("resources") or []
        for verb in rule.get("verbs") or []
    )


def arg_tokens(container: Dict[str, Any]) -> List[str]:
    """The program and its flags: ``bash -c "<line>"`` / ``ash -c "<line>"`` unwrapped."""
    command = list(container.get("command") or [])
    args = list(container.get("args") or [])
    words = command + args
    shells = {"/bin/bash", "/bin/ash", "/bin/sh", "sh", "bash"}
    if words and words[0] in shells:
        line = " ".join(w for w in words[1:] if w not in ("-c", "--"))
        tokens = []
        for tok in shlex.split(line.replace(";", " ; ")):
            if tok in _SHELL_NOISE or tok == ";":
                continue
            tokens.append(tok)
        return tokens
    return words


def effective_args(tokens: List[str]) -> Tuple[List[str], Dict[str, str]]:
    """Positional words and ``-flag=value`` flags (the last occurrence wins, as with Go flags)."""
    words: List[str] = []
    flags: Dict[str, str] = {}
    for tok in tokens:
        if tok.startswith("-"):
            name, _, value = tok.partition("=")
            flags[name] = value
        else:
            words.append(tok)
    return words, flags


def _container_facts(c: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "args": effective_args(arg_tokens(c)),
        "ports": sorted((p.get("name", ""), p["containerPort"]) for p in c.get("ports") or []),
        "mounts": sorted(
            (m["mountPath"], m.get("subPath", ""), bool(m.get("readOnly"))) for m in c.get("volumeMounts") or []
        ),
        "env": sorted(e["name"] for e in c.get("env") or []),
        "securityContext": c.get("securityContext") or {},
        "liveness_port": ((c.get("livenessProbe") or {}).get("httpGet") or {}).get("port"),
    }


def _pod_facts(spec: Dict[str, Any]) -> Dict[str, Any]:
    pod = spec["template"]["spec"]
    return {
        "serviceAccount": pod.get("serviceAccountName") or pod.get("serviceAccount"),
        "nodeSelector": pod.get("nodeSelector") or {},
        "tolerations": sorted(
            (t.get("key", ""), t.get("operator", ""), t.get("value", ""), t.get("effect", ""))
            for t in pod.get("tolerations") or []
        ),
        "priorityClassName": pod.get("priorityClassName"),
        "podSecurityContext": pod.get("securityContext") or {},
        "hostNetwork": bool(pod.get("hostNetwork")),
        "hostPID": bool(pod.get("hostPID")),
        "hostPaths": sorted(
            (v["hostPath"]["path"], v["hostPath"].get("type", "")) for v in pod.get("volumes") or [] if "hostPath" in v
        ),
        "containers": {c["name"]: _container_facts(c) for c in pod.get("containers") or []},
        "initContainers": sorted(c["name"] for c in pod.get("initContainers") or []),
        "automountServiceAccountToken": pod.get("automountServiceAccountToken"),
        "terminationGracePeriodSeconds": pod.get("terminationGracePeriodSeconds"),
        "selector": spec.get("selector"),
        "podLabels": spec["template"].get("metadata", {}).get("labels") or {},
    }


def scheduler_conf(text: str) -> Dict[str, Any]:
    conf = yaml.safe_load(text)
    tiers = [[p["name"] for p in tier["plugins"]] for tier in conf["tiers"]]
    init: Dict[str, str] = {}
    for c in conf.get("configurations") or []:
        if c.get("name") == "init-params":
            init = {str(k): str(v) for k, v in (c.get("arguments") or {}).items()}
    return {"actions": conf["actions"], "tiers": tiers, "init-params": init}


def facts(obj: Dict[str, Any]) -> Dict[str, Any]:
    kind = obj["kind"]
    if kind in ("ClusterRole", "Role"):
        return {"rules": rule_triples(obj.get("rules") or [])}
    if kind in ("ClusterRoleBinding", "RoleBinding"):
        return {
            "roleRef": obj["roleRef"]["name"],
            "subjects": sorted((s["kind"], s["name"], s.get("namespace", "")) for s in obj.get("subjects") or []),
        }
    if kind in ("Deployment", "DaemonSet"):
        return _pod_facts(obj["spec"])
    if kind == "Service":
        return {
            "ports": sorted((p["port"], p.get("targetPort"), p.get("protocol", "TCP")) for p in obj["spec"]["ports"]),
            "selector": obj["spec"].get("selector"),
        }
    if kind == "ConfigMap":
        data = obj.get("data") or {}
        out: Dict[str, Any] = {"keys": sorted(data)}
        if "volcano-scheduler.conf" in data:
            out["conf"] = scheduler_conf(data["volcano-scheduler.conf"])
        return out
    if kind == "CustomResourceDefinition":
        spec = obj["spec"]
        return {
            "group": spec["group"],
            "names": spec["names"],
            "scope": spec["scope"],
            "versions": [
                {
                    "name": v["name"],
                    "served": v["served"],
                    "storage": v["storage"],
                    "subresources": v.get("subresources") or None,
                    "printer": v.get("additionalPrinterColumns") or None,
                }
                for v in spec["versions"]
            ],
        }
    if kind == "NetworkPolicy":
        return {"spec": obj["spec"]}
    return {}


@functools.lru_cache(maxsize=None)
def _load(path: str) -> Tuple[Dict[str, Any], ...]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(path, encoding="utf-8") as handle:
        return tuple(d for d in yaml.load_all(handle, Loader=loader) if d)


def load_objects(path: Any) -> List[Dict[str, Any]]:
    """The documents of a YAML file (parsed once per test session; treat them as read-only)."""
    return list(_load(str(path)))


def first(objects: List[Dict[str, Any]], kind: str, name: Optional[str] = None) -> Dict[str, Any]:
    for o in objects:
        if o["kind"] == kind and (name is None or o["metadata"]["name"] == name):
            return o
    raise KeyError((kind, name))
