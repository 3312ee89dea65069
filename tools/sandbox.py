#!/usr/bin/env python3
"""``make sandbox``: a local cluster to run ``pulumi up`` against before a real one.

Starts the control plane of tools/controlplane.py (etcd, kube-apiserver, controller-manager,
scheduler, KWOK; the real programs built by ``make tools``) in ``--dir`` with fake nodes labelled
from the profile's plan (a management node and NPU nodes with the profile's NPU resource), then
prints the environment and the commands that deploy the shipped stacks onto it. Every kubeconfig
context the shipped stacks name (``ascend-a2`` ...) points at the sandbox, so they run unchanged.
``make sandbox-down`` stops it (the processes it recorded, nothing else) and keeps ``--dir``.

Fake nodes run no containers: pods are scheduled and go Running, but no image is pulled, no volume
mounted and no Ascend Operator turns an AscendJob into pods.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import List, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
import controlplane
import go_tools

ROOT = Path(__file__).resolve().parent.parent
PASSPHRASE = "sandbox"


def instructions(plane_dir: Path, kubeconfig: Path, python: str) -> List[str]:
    state = plane_dir / "state"
    state.mkdir(exist_ok=True)
    tools = go_tools.bin_dirs([go_tools.TOOLS[n] for n in ("pulumi", "pulumi-kubernetes", "kubernetes")])
    path = ":".join(str(d) for d in tools)
    run = f"{shlex.quote(python)} tools/pulumi_local.py"
    return [
        "# the sandbox's environment (copy into your shell):",
        f"export KUBECONFIG={shlex.quote(str(kubeconfig))}",
        f"export PULUMI_BACKEND_URL=file://{state}",
        f"export PULUMI_CONFIG_PASSPHRASE={PASSPHRASE}",
        f"export PATH={path}:$PATH",
        "kubectl get nodes --show-labels",
        "# the cluster stack, then a job stack on it (the real Pulumi engine; see docs/pulumi.md):",
        f"{run} up --stack ascend-a2-cluster",
        f"{run} preview --stack pytorch-process-recovery",
        "# stop it: make sandbox-down",
    ]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up")
    up.add_argument("--dir", type=Path, required=True)
    up.add_argument("--profile", type=Path, required=True)
    up.add_argument("--compute-nodes", type=int, default=2)
    down = sub.add_parser("down")
    down.add_argument("--dir", type=Path, required=True)
    args = parser.parse_args(argv)
    plane_dir = args.dir.resolve()
    if args.command == "down":
        return controlplane.main(["down", "--dir", str(plane_dir)])
    code = controlplane.main(
        ["up", "--dir", str(plane_dir), "--profile", str(args.profile), "--compute-nodes", str(args.compute_nodes)]
    )
    if code != 0:
        return code
    for line in instructions(plane_dir, plane_dir / "kubeconfig", sys.executable):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
