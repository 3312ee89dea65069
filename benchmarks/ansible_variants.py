#!/usr/bin/env python3
"""Ansible settings tried on the converged nodes a benchmarks/ansible_converge.py --keep run left: the converged
re-run of one measured tree, as it is and with each variant's environment (pipelining, ssh ControlPersist and
compression, a fact cache, the free strategy, Mitogen's strategy), repeat pairs of 2 and N nodes each, measured
the same way (controller CPU with its ssh masters reaped, the nodes' cgroups, module runs counted), the variants
interleaved repeat by repeat so that a change of load hits them all alike.

usage (after ansible_converge.py --keep printed its work directory):
    .venv/bin/python benchmarks/ansible_variants.py WORK --label REV [--nodes 4] [--repeats 3] [--prefix P]
        [--variant 'NAME:VAR=VALUE;VAR=VALUE' ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path
from typing import Dict, List

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
import ansible_converge as bench  # noqa: E402

MITOGEN = REPO / (".venv/lib/python%d.%d/site-packages/ansible_mitogen/plugins/strategy" % sys.version_info[:2])
VARIANTS = {
    "as committed": "",
    "no ssh compression, ControlPersist 300s": "ANSIBLE_SSH_ARGS=-o ControlMaster=auto -o ControlPersist=300s",
    "pipelining off": "ANSIBLE_PIPELINING=False",
    "fact cache (jsonfile)": "ANSIBLE_CACHE_PLUGIN=jsonfile;ANSIBLE_CACHE_PLUGIN_CONNECTION={work}/facts",
    "free strategy (every play)": "ANSIBLE_STRATEGY=free",
    # Mitogen's ssh does not take the inventory's -o StrictHostKeyChecking=no: host key checking off instead
    "Mitogen (mitogen_linear)": "ANSIBLE_STRATEGY=mitogen_linear;ANSIBLE_STRATEGY_PLUGINS=%s;"
    "ANSIBLE_HOST_KEY_CHECKING=False" % MITOGEN,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("--label", required=True, help="the tree measured (the short commit of --after/--base)")
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--prefix", default="ascend-bench")
    parser.add_argument("--variant", action="append", help="NAME:VAR=VALUE;VAR=VALUE (default: the built-in set)")
    args = parser.parse_args()
    variants = dict(v.split(":", 1) for v in args.variant) if args.variant else dict(VARIANTS)
    variants.setdefault("as committed", "")

    env = dict(os.environ)
    env.setdefault("CONTAINERS_CONF", str(REPO / "podman" / "containers.conf"))
    env["ANSIBLE_NOCOLOR"] = "1"
    env["ANSIBLE_CALLBACKS_ENABLED"] = "ansible.posix.profile_tasks,module_runs"
    env["ANSIBLE_CALLBACK_PLUGINS"] = str(bench.CALLBACKS)
    env["PATH"] = "%s:%s" % (bench.VENV, env.get("PATH", ""))
    os.environ["CONTAINERS_CONF"] = env["CONTAINERS_CONF"]
    work = args.work
    tree = bench.Tree(args.label, work / ("tree-" + args.label), work / ("bin-" + args.label))
    names = ["%s-%d" % (args.prefix, i) for i in range(1, args.nodes + 3)]
    big = names[2:]
    runner = bench.Bench(tree, work, names, env, "2")
    runs: Dict[str, Dict[int, List[bench.Run]]] = {name: {2: [], args.nodes: []} for name in variants}
    failed: Dict[str, str] = {}
    for i in range(args.repeats):
        for name, spec in variants.items():
            extra = dict(pair.split("=", 1) for pair in spec.format(work=work).split(";") if pair)
            runner.env = dict(env, **extra)
            runner.env["ANSIBLE_COLLECTIONS_PATH"] = "%s:%s" % (REPO / "collections", tree.root)
            runner.env["ANSIBLE_CONFIG"] = str(tree.root / "ansible.cfg")
            runner.env["PATH"] = "%s:%s" % (tree.bin_dir, env["PATH"])
            slug = "variant-%d-%s" % (list(variants).index(name), i)
            if name in failed:
                continue
            for size, members in ((2, big[:2]), (args.nodes, big)):
                log = work / ("%s-%d.log" % (slug, size))
                try:
                    run = runner.playbook(log, big, "--limit", ",".join(members))
                except SystemExit as exc:  # the run failed: the variant does not hold here
                    failed[name] = str(exc)
                    break
                if run.changed:
                    print("%s: the re-run changed %d tasks" % (name, run.changed))
                runs[name][size].append(run)
    n = args.nodes
    print("converged re-run of %s, 2 and %d nodes, %d repeat pairs per variant" % (args.label, n, args.repeats))
    for name, why in failed.items():
        print("  %-40s FAILED: %s" % (name, why))
    for name, by_size in runs.items():
        if name in failed or not by_size[n]:
            continue
        every = by_size[2] + by_size[n]
        ctrl = bench.marginal(
            [r.controller for r in by_size[2]], [r.controller for r in by_size[args.nodes]], args.nodes
        )
        main = bench.marginal([r.main for r in by_size[2]], [r.main for r in by_size[args.nodes]], args.nodes)
        nodes = bench.marginal([r.nodes for r in by_size[2]], [r.nodes for r in by_size[args.nodes]], args.nodes)
        wall = statistics.median(r.wall for r in by_size[args.nodes])
        print(
            "  %-40s controller %s (main %s), nodes %s per node; wall %d nodes %.1f s; load %.1f to %.1f; "
            "changed %d"
            % (
                name,
                bench._fmt(ctrl),
                bench._fmt(main),
                bench._fmt(nodes),
                args.nodes,
                wall,
                min(r.load for r in every),
                max(r.load for r in every),
                sum(r.changed for r in every),
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
