"""Parity with the upstream release manifests (../shared/upstream/mindcluster/v<release>/).

Both sides go through :func:`facts.facts` (RBAC rules as sets, effective container args, host
paths, ports, scheduling fields, scheduler config). Each intended difference is applied to the
upstream side by a named normaliser below; the names (D1, D2, ...) are the rows of the parity
table in docs/scheduler.md, and ``test_docs_list_every_intended_difference`` keeps both in step.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest
from conftest import ROOT

from resumable.manifests import build_stack
from resumable.releases import STACK_RELEASES

from .facts import Key, facts, key_of, load_objects
from .plans import RESILIENCE_DEVICE_PLUGIN_ARGS, RESILIENCE_NODED_ARGS, scheduler_plan
from .upstream import release_dir

DOCS = ROOT / "docs" / "scheduler.md"
COMBINATIONS = [(r, v) for r, s in STACK_RELEASES.items() for v in s.volcano]
ARCH = "x86_64"  # the placeholder plugin name in the sources is ..._linux-x86_64
RUNTIME = "docker"  # the sources mount the docker sockets (plus containerd and iSula)
NPU_PLUGIN = re.compile(r"^volcano-npu_")

Facts = Dict[Key, Dict[str, Any]]


def upstream_files(release: str, volcano: str) -> List[Path]:
    """The upstream manifests of ``release``; a patch release's are its base release's (identical at the
    tags: releases.PATCH_RELEASES), so 7.3.1, 7.3.2 and 26.0.1 are compared with the 7.3.0 and 26.0.0 files."""
    root = release_dir(release)
    names = ["ascend-operator.yaml", "clusterd.yaml", "ascendplugin-volcano.yaml", "noded.yaml", "npu-exporter.yaml"]
    return [root / f"volcano-v{volcano}.yaml"] + [root / n for n in names]


def upstream_facts(release: str, volcano: str) -> Facts:
    out: Facts = {}
    for path in upstream_files(release, volcano):
        if not path.exists():
            pytest.fail(f"{path} missing from the upstream folder")
        for obj in load_objects(path):
            out[key_of(obj)] = copy.deepcopy(facts(obj))
    return out


def our_facts(release: str, volcano: str) -> Facts:
    plan = scheduler_plan(release, volcano, ARCH, container_runtime=RUNTIME)
    return {key_of(obj): facts(obj) for obj in build_stack(plan)}


def _workloads(f: Facts) -> List[Tuple[Key, Dict[str, Any]]]:
    return [(k, v) for k, v in f.items() if k[0] in ("Deployment", "DaemonSet")]


# --- intended differences (applied to the upstream side, or to ours where we add plan settings) ------


def d1_namespaces_created(up: Facts, ours: Facts) -> None:
    """D1: mindx-dl and cluster-system are created (upstream: created by hand, INST01)."""
    for ns in ("mindx-dl", "cluster-system"):
        up[("Namespace", "", ns)] = {}


def d2_plugin_name(up: Facts, ours: Facts) -> None:
    """D2: the sources carry a placeholder plugin name the release build rewrites; compare the
    position of the NPU plugin, not its name (its name is checked in test_builders)."""
    for f in (up, ours):
        conf = f[("ConfigMap", "volcano-system", "volcano-scheduler-configmap")]["conf"]
        conf["tiers"] = [["volcano-npu" if NPU_PLUGIN.match(p) else p for p in tier] for tier in conf["tiers"]]


def d5_resilience_args(up: Facts, ours: Facts) -> None:
    """D5: the plan's resilience flags are added to the device plugin and NodeD."""
    for _key, f in _workloads(up):
        for cname, c in f["containers"].items():
            if cname == "device-plugin-01":
                c["args"][1].update(RESILIENCE_DEVICE_PLUGIN_ARGS)
            if cname == "noded":
                c["args"][1].update(RESILIENCE_NODED_ARGS)


def d6_seccomp_field(up: Facts, ours: Facts) -> None:
    """D6: RuntimeDefault seccomp via the pod securityContext field (>= 1.19) instead of the
    deprecated annotation; the 1.12 files already use the field."""
    for _, f in _workloads(up):
        f["podSecurityContext"] = {**f["podSecurityContext"], "seccompProfile": {"type": "RuntimeDefault"}}


def d7_selinux_level(up: Facts, ours: Facts) -> None:
    """D7: no fixed SELinux MCS level on the Volcano 1.12 pods (a Helm-chart value, s0:c123,c456)."""
    for _, f in _workloads(up):
        f["podSecurityContext"].pop("seLinuxOptions", None)


def d8_capabilities_case(up: Facts, ours: Facts) -> None:
    """D8: the operator drops capability "ALL" (upstream writes "All")."""
    for _, f in _workloads(up):
        for c in f["containers"].values():
            caps = c["securityContext"].get("capabilities")
            if caps and "drop" in caps:
                caps["drop"] = [d.upper() for d in caps["drop"]]


def d9_runtime_sockets(up: Facts, ours: Facts) -> None:
    """D9: only the container runtime's own sockets are mounted (the sources say to delete the
    others); iSula is not a supported runtime."""
    f = up[("DaemonSet", "npu-exporter", "npu-exporter")]
    f["hostPaths"] = [hp for hp in f["hostPaths"] if hp[0] != "/run/isulad.sock"]
    for c in f["containers"].values():
        c["mounts"] = [m for m in c["mounts"] if m[0] != "/run/isulad.sock"]


def d10_container_mode(up: Facts, ours: Facts) -> None:
    """D10: npu-exporter -containerMode follows the plan's runtime (sources: docker)."""
    for c in up[("DaemonSet", "npu-exporter", "npu-exporter")]["containers"].values():
        c["args"][1]["-containerMode"] = RUNTIME


def d11_service_port_names(up: Facts, ours: Facts) -> None:
    """D11: facts compare port numbers only; 1.7's unnamed metrics port is named ``metrics``."""


def d18_queues_created(up: Facts, ours: Facts) -> None:
    """D18: the queues the jobs name are created with the stack (upstream: Volcano's scheduler
    creates ``default`` when it starts, after a job applied with the stack may have been refused)."""
    for key in [k for k in ours if k[0] == "Queue"]:
        up[key] = ours[key]


INTENDED: List[Callable[[Facts, Facts], None]] = [
    d1_namespaces_created,
    d2_plugin_name,
    d5_resilience_args,
    d6_seccomp_field,
    d7_selinux_level,
    d8_capabilities_case,
    d9_runtime_sockets,
    d10_container_mode,
    d11_service_port_names,
    d18_queues_created,
]


def _diff(up: Facts, ours: Facts) -> List[str]:
    problems = []
    for key in sorted(set(up) | set(ours)):
        if key not in ours:
            problems.append(f"missing {key}")
        elif key not in up:
            problems.append(f"extra {key}")
        else:
            for field in sorted(set(up[key]) | set(ours[key])):
                a, b = up[key].get(field), ours[key].get(field)
                if a != b:
                    if isinstance(a, frozenset) and isinstance(b, frozenset):
                        problems.append(f"{key} rules: upstream-only {sorted(a - b)}, ours-only {sorted(b - a)}")
                    else:
                        problems.append(f"{key} {field}:\n  upstream {a}\n  ours     {b}")
    return problems


@pytest.mark.parametrize("release, volcano", COMBINATIONS)
def test_stack_matches_upstream_release(release: str, volcano: str) -> None:
    up = upstream_facts(release, volcano)
    ours = our_facts(release, volcano)
    for normalise in INTENDED:
        normalise(up, ours)
    problems = _diff(up, ours)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("release, volcano", COMBINATIONS)
def test_parity_is_sensitive(release: str, volcano: str) -> None:
    """The comparison itself must notice a dropped RBAC verb, a changed host path and a changed flag."""
    up = upstream_facts(release, volcano)
    ours = our_facts(release, volcano)
    for normalise in INTENDED:
        normalise(up, ours)
    clusterd_role = ("ClusterRole", "", "pods-clusterd-role")
    ours[clusterd_role]["rules"] = ours[clusterd_role]["rules"] - {("", "pods", "patch")}
    ds = next(v for k, v in ours.items() if k[0] == "DaemonSet" and k[1] == "kube-system")
    ds["hostPaths"] = [(p.replace("/user/restore/reset", "/user/restore"), t) for p, t in ds["hostPaths"]]
    ours[("Deployment", "mindx-dl", "clusterd")]["containers"]["clusterd"]["args"][1]["-logLevel"] = "1"
    problems = "\n".join(_diff(up, ours))
    assert "pods-clusterd-role" in problems and "/user/restore" in problems and "-logLevel" in problems


def test_docs_list_every_intended_difference() -> None:
    if not DOCS.exists():
        pytest.fail("docs/scheduler.md is missing")
    text = DOCS.read_text(encoding="utf-8")
    for normalise in INTENDED:
        ident = normalise.__name__.split("_")[0].upper()
        assert re.search(rf"\|\s*{ident}\s*\|", text), f"{ident} ({normalise.__doc__}) is not in the parity table"
    for release in STACK_RELEASES:
        assert release in text, f"release {release} missing from docs/scheduler.md"
