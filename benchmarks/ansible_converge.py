#!/usr/bin/env python3
"""Benchmark site.yml: first converge and re-run against N podman containers.

Each container is an emulated Ascend node (tests/fixtures/ascend: fake sysfs with 8 NPUs,
npu-smi, driver/firmware/CANN .run installers that log every run). Prints the wall time of
both runs, the re-run/first ratio and the number of installer runs during the re-run
(target: 0, and a re-run taking at most a quarter of the first converge).

usage (root, after scripts/test-ansible.sh set-up or at least the node image + collections):
    .venv/bin/python benchmarks/ansible_converge.py [--nodes 4] [--serial 2] [--keep]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "ascend"
IMAGE = "localhost/ascend-node-deb12:latest"

GROUP_VARS = """\
ansible_connection: containers.podman.podman
ansible_python_interpreter: /usr/bin/python3
npu_facts_sysfs_root: /opt/ascend-sys
ascend_driver_kubectl: /opt/ascend-fixture/kubectl
ascend_driver_kubectl_host: "{{{{ inventory_hostname }}}}"
# containers have no headers package for the host kernel; apt would only add mirror noise
ascend_driver_prerequisites_install: false
ascend_driver_reboot_policy: if_needed
ascend_driver_driver_version: 25.2.0
ascend_driver_driver_package:
  src: {pkgs}/Ascend-hdk-910b-npu-driver_25.2.0_linux-x86-64.run
ascend_driver_firmware_version: 7.7.0.1.231
ascend_driver_firmware_package:
  src: {pkgs}/Ascend-hdk-910b-npu-firmware_7.7.0.1.231.run
ascend_cann_version: 8.5.0
ascend_cann_toolkit_package:
  src: {pkgs}/Ascend-cann-toolkit_8.5.0_linux-x86_64.run
ascend_cann_ops_package:
  src: {pkgs}/Ascend-cann-910b-ops_8.5.0_linux-x86_64.run
"""


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, **kw)


def installer_runs(names):
    total = 0
    for name in names:
        out = subprocess.run(
            ["podman", "exec", name, "sh", "-c", "cat /var/lib/ascend-fixture/installer.log 2>/dev/null"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        total += len([line for line in out.splitlines() if line.strip()])
    return total


def playbook(inv, env, log, *extra):
    start = time.monotonic()
    with open(log, "w") as handle:
        proc = subprocess.run(
            [
                str(REPO / ".venv" / "bin" / "ansible-playbook"),
                "-i",
                str(inv),
                str(REPO / "site.yml"),
                "-e",
                "ascend_rollout_serial=%s" % env["BENCH_SERIAL"],
                *extra,
            ],
            cwd=REPO,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            check=False,
        )
    elapsed = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit("ansible-playbook failed (rc %d), see %s" % (proc.returncode, log))
    with open(log) as handle:
        recap = [line for line in handle if "changed=" in line and "ok=" in line]
    return elapsed, recap


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--serial", default="2", help="batch size (ascend_rollout_serial)")
    parser.add_argument("--keep", action="store_true", help="keep containers and logs")
    parser.add_argument("--no-check", action="store_true", help="skip the --check run on the fresh nodes")
    args = parser.parse_args()

    env = dict(os.environ)
    env.setdefault("CONTAINERS_CONF", str(REPO / "podman" / "containers.conf"))
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", str(REPO / "collections"))
    env["ANSIBLE_CONFIG"] = str(REPO / "ansible.cfg")
    env["ANSIBLE_NOCOLOR"] = "1"
    env["BENCH_SERIAL"] = args.serial
    env["PATH"] = "%s:%s" % (REPO / ".venv" / "bin", env.get("PATH", ""))
    os.environ.update({k: env[k] for k in ("CONTAINERS_CONF",)})

    work = Path(tempfile.mkdtemp(prefix="ascend-bench-"))
    pkgs = work / "packages"
    run([str(FIXTURES / "build-packages.sh"), str(pkgs)], stdout=subprocess.DEVNULL)
    names = ["ascend-bench-%d" % i for i in range(1, args.nodes + 1)]
    subprocess.run(["podman", "rm", "-f", *names], capture_output=True, check=False)
    try:
        for name in names:
            run(
                [
                    "podman",
                    "run",
                    "-d",
                    "--init",
                    "--name",
                    name,
                    "--hostname",
                    name,
                    "-v",
                    "%s:/opt/ascend-fixture:ro" % FIXTURES,
                    IMAGE,
                    "sleep",
                    "infinity",
                ],
                stdout=subprocess.DEVNULL,
            )
            run(
                ["podman", "exec", name, "/opt/ascend-fixture/setup-node.sh", "/opt/ascend-sys"],
                stdout=subprocess.DEVNULL,
            )
        inv = work / "inventory"
        (inv / "group_vars").mkdir(parents=True)
        (inv / "hosts.yml").write_text(
            "all:\n  children:\n    ascend_cluster:\n      children:\n        ascend_compute:\n          hosts:\n"
            + "".join("            %s: {}\n" % n for n in names)
        )
        (inv / "group_vars" / "all.yml").write_text(GROUP_VARS.format(pkgs=pkgs))

        if not args.no_check:
            check_time, check_recap = playbook(inv, env, work / "check-fresh.log", "--check")
            check_changed = sum(int(line.split("changed=")[1].split()[0]) for line in check_recap)
            print(
                "check mode on fresh nodes: %.1f s, no failure, %d planned changes, installer runs: %d"
                % (check_time, check_changed, installer_runs(names))
            )
        first, _recap1 = playbook(inv, env, work / "first.log")
        runs_first = installer_runs(names)
        second, recap2 = playbook(inv, env, work / "rerun.log")
        runs_rerun = installer_runs(names) - runs_first
        changed_rerun = sum(int(line.split("changed=")[1].split()[0]) for line in recap2)

        print("nodes: %d, batch size (serial): %s" % (args.nodes, args.serial))
        print("first converge: %.1f s, installer runs: %d" % (first, runs_first))
        print("re-run:         %.1f s, installer runs: %d, changed tasks: %d" % (second, runs_rerun, changed_rerun))
        print("re-run / first: %.2f (target <= 0.25)" % (second / first))
        ok = runs_rerun == 0 and changed_rerun == 0 and second <= first / 4
        print("result: %s" % ("PASS" if ok else "FAIL"))
        if args.keep:
            print("logs and inventory: %s" % work)
        return 0 if ok else 1
    finally:
        if not args.keep:
            subprocess.run(["podman", "rm", "-f", "-t", "0", *names], capture_output=True, check=False)
            subprocess.run(["rm", "-rf", str(work)], check=False)


if __name__ == "__main__":
    sys.exit(main())
