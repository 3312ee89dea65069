#!/usr/bin/env python3
"""Benchmark: the whole site.yml re-run on a converged cluster (management node + two compute nodes).

Uses the molecule scenario molecule/site (podman containers from localhost/ascend-node-deb12, the
emulated vendor pieces of tests/fixtures): create + prepare, the first converge (timed), then the
re-run (timed). Prints both wall times, their ratio, the changed count per host of the re-run and
what the re-run ran or restarted: installer runs (driver, Ascend Docker Runtime), engine/kubelet
restarts, device plugin restarts, cordon/drain/uncordon and label calls. Exits 1 unless the re-run
reports changed=0 on every host and ran and restarted nothing.

Installer time is emulated: the fixture .run packages only write files and logs, so the first
converge here is much shorter than on hardware (a real driver install takes minutes, a firmware
upgrade needs a reboot); the re-run, which runs no installer, is what this measures.

usage (root; after scripts/test-ansible.sh set up podman, the node image and the collections):
    .venv/bin/python benchmarks/ansible_site.py [--keep]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
from logged_run import timed_run  # noqa: E402

NODES = ["site-mgmt", "site-npu1", "site-npu2"]
KUBECTL_LOG = "/var/lib/ascend-fixture/kubectl.log"
#: what a re-run must not do, as (label, node, shell command printing one line per event)
EVENTS: List[Tuple[str, str, str]] = (
    [
        ("installer runs", node, "cat /var/lib/ascend-fixture/installer.log 2>/dev/null")
        for node in ("site-npu1", "site-npu2")
    ]
    + [
        ("engine/kubelet restarts", node, "grep '^restart' /var/lib/node-fixture/systemctl.log 2>/dev/null")
        for node in ("site-npu1", "site-npu2")
    ]
    + [
        ("device plugin restarts", "site-mgmt", "grep '^delete pods' " + KUBECTL_LOG),
        (
            "cordon/drain/uncordon calls",
            "site-mgmt",
            "grep -E '^(cordon|drain|uncordon) ' /var/lib/ascend-fixture/kubectl.log",
        ),
        ("label calls", "site-mgmt", "grep '^label ' " + KUBECTL_LOG),
    ]
)
RECAP = re.compile(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


def environment() -> Dict[str, str]:
    env = dict(os.environ)
    env.update(
        CONTAINERS_CONF=str(REPO / "podman" / "containers.conf"),
        ANSIBLE_COLLECTIONS_PATH="%s:%s" % (REPO / "collections", REPO),
        ANSIBLE_FORCE_COLOR="0",
        NO_COLOR="1",
        PY_COLORS="0",
        PATH="%s:%s" % (REPO / ".venv" / "bin", env.get("PATH", "")),
    )
    env.pop("ANSIBLE_CONFIG", None)  # would override molecule's generated configuration
    return env


def molecule(step: str, env: Dict[str, str], log: Path) -> float:
    argv = [str(REPO / ".venv" / "bin" / "molecule"), step, "-s", "site"]
    return timed_run(argv, REPO, env, log, "molecule %s" % step)


def events(env: Dict[str, str]) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for label, node, cmd in EVENTS:
        out = subprocess.run(
            ["podman", "exec", node, "sh", "-c", cmd], env=env, capture_output=True, text=True, check=False
        ).stdout
        counts[label] = counts.get(label, 0) + len([line for line in out.splitlines() if line.strip()])
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the containers (molecule destroy -s site later)")
    parser.add_argument("--logs", default="/tmp", help="directory for the molecule logs")
    args = parser.parse_args()
    env = environment()
    logs = Path(args.logs)
    molecule("destroy", env, logs / "ansible_site-destroy.log")
    try:
        molecule("create", env, logs / "ansible_site-create.log")
        molecule("prepare", env, logs / "ansible_site-prepare.log")
        first = molecule("converge", env, logs / "ansible_site-converge-1.log")
        before = events(env)
        rerun = molecule("converge", env, logs / "ansible_site-converge-2.log")
        after = events(env)
        recap = {
            m.group(1): int(m.group(2)) for m in RECAP.finditer((logs / "ansible_site-converge-2.log").read_text())
        }
        failed = [
            m.group(1)
            for m in RECAP.finditer((logs / "ansible_site-converge-2.log").read_text())
            if int(m.group(3)) or int(m.group(4))
        ]
    finally:
        if not args.keep:
            molecule("destroy", env, logs / "ansible_site-destroy.log")

    print("site.yml on 1 management + 2 compute nodes (podman containers, 2 cores; installer time emulated)")
    print("  first converge      %7.1f s" % first)
    print("  re-run (converged)  %7.1f s  = %.2f x the first converge" % (rerun, rerun / first))
    print("  re-run changed      %s" % ", ".join("%s=%d" % kv for kv in sorted(recap.items())))
    for label in before:
        print("  re-run %-27s %d   (first converge: %d)" % (label, after[label] - before[label], before[label]))
    nodes_ok = set(NODES) <= set(recap)
    quiet = all(after[k] == before[k] for k in before)
    ok = nodes_ok and not failed and not any(recap.values()) and quiet
    print("PASS: changed=0 on every host, nothing installed or restarted" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
