#!/usr/bin/env python3
"""Benchmark site.yml against N emulated Ascend nodes: what a re-run on converged nodes costs.

Each podman container is an emulated node (tests/fixtures/ascend: fake sysfs with 8 NPUs, npu-smi,
an NPU DaemonSet with the devices in its spec, driver/firmware/CANN .run installers that log every
run; tests/fixtures/node: containerd 1.7 with a kubespray-style config, kubelet and systemctl, set up
by the shared prepare playbook of the molecule scenarios), its own kubectl host.
Ansible reaches the nodes over SSH with pipelining, as in production (--connection ssh, default:
the node image plus openssh-server, built once as a local image); --connection podman uses the
podman connection of the molecule tests, which cannot pipeline and costs several podman processes
per task and node on the controller's own cores.
INSTALLER TIME IS EMULATED: the fixture installers return in milliseconds where the real ones
take minutes, so the first converge here says nothing about a real rollout; the figures that
matter are the check-mode and re-run ones, which run no installer at all.

Steps: site.yml --check on the fresh nodes (must not fail and must run 0 installers), the first
converge (batches of --serial), the emulated reboot the new firmware needs and the run that
returns the nodes to service, then re-runs on the converged nodes with 2 and with N nodes.
Converged nodes are decided in one parallel pass and never enter the serial batches, so the
re-run must not grow with the node count: pass = check mode ran 0 installers, every re-run
changed 0 tasks and ran 0 installers, and re-run(N) <= 1.3 x re-run(2).
Each re-run also reports its time per site.yml stage (profile_tasks timestamps) and the CPU seconds
of the controller and of the emulated nodes: the nodes run on the controller's cores here, so a
re-run whose per-node work is CPU-bound grows with the node count on this machine although nothing
in it is serial over hosts (docs/ansible.md, Benchmark).

usage (root, after scripts/test-ansible.sh set-up, or at least the node image + collections):
    .venv/bin/python benchmarks/ansible_converge.py [--nodes 4] [--serial 2] [--connection ssh|podman] [--keep]
    .venv/bin/python benchmarks/ansible_converge.py --reuse DIR [--repeats N]   (the re-runs again, on kept nodes)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Tuple

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
from logged_run import timed_run  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "ascend"
IMAGE = "localhost/ascend-node-deb12:latest"
SSH_IMAGE = "localhost/ascend-node-deb12-sshd:bench2"
SSH_CONTAINERFILE = (
    """\
FROM %s
# the package lists stay: site.yml's later stages install packages (NFS client, PyYAML for resumable)
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openssh-server \\
    python3-yaml nfs-common && mkdir -p /run/sshd /root/.ssh && chmod 700 /root/.ssh && ssh-keygen -A
CMD ["/usr/sbin/sshd", "-D", "-e"]
"""
    % IMAGE
)
GROWTH_LIMIT = 1.3
REPEATS = 3  # re-runs are timed this often by default; the best one counts (shared CI machines are noisy)

CONNECTION_VARS = {
    "podman": "ansible_connection: containers.podman.podman\n",
    "ssh": (
        "ansible_connection: ssh\n"
        "ansible_user: root\n"
        "ansible_ssh_private_key_file: {key}\n"
        "ansible_ssh_common_args: -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR\n"
    ),
}

GROUP_VARS = """\
ansible_python_interpreter: /usr/bin/python3
ascend_preflight_profile: {fixtures}/profile-910b-x86_64.yaml
npu_facts_sysfs_root: /opt/ascend-sys
npu_facts_container_clis: [/opt/ascend-fixture/docker]
ascend_driver_kubectl: /opt/kube-fixture/kubectl
ascend_driver_kubectl_host: "{{{{ inventory_hostname }}}}"
ascend_driver_poll_delay: 1
# containers have no headers package for the host kernel; apt would only add mirror noise
ascend_driver_prerequisites_install: false
ascend_driver_reboot_policy: if_needed
# the driver version is the profile's cluster.hdk (25.2.0)
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

# the node services site.yml's later stages need (the same fixture set-up as molecule/site)
NODE_FIXTURE_PREPARE = REPO / "tests" / "fixtures" / "node" / "molecule-prepare.yml"
CONTAINERD_CONFIG = (
    REPO
    / "ansible_collections/ascend_resumable/npu/roles/ascend_docker_runtime/molecule/default/files/containerd-1.7.toml"
)
NODE_VARS = """\
ascend_docker_runtime_package:
  src: {pkgs}/Ascend-docker-runtime_7.3.0_linux-x86_64.run
  # the package is built by the prepare playbook; its checksum read on the controller (as molecule/site does)
  checksum: >-
    sha256:{{{{ lookup('ansible.builtin.file', '{pkgs}/Ascend-docker-runtime_7.3.0_linux-x86_64.run',
    rstrip=false) | hash('sha256') }}}}
ascend_docker_runtime_kubectl: /opt/kube-fixture/kubectl
ascend_docker_runtime_kubectl_host: "{{{{ inventory_hostname }}}}"
mindcluster_node_kubectl: /opt/kube-fixture/kubectl
mindcluster_node_kubectl_host: "{{{{ inventory_hostname }}}}"
# containers cannot mount NFS; no NFS server here (as in molecule/site)
shared_storage_mount: false
shared_storage_check_exports: false
resumable_install_doctor_waive: [mount /user/mindx-dl/ranktable]
node_fixture_containerd: "1.7.27"
node_fixture_units: [containerd, kubelet, systemd-timesyncd]
"""

DAEMONSET = "kind=daemonset\ndevices=/dev/davinci_manager /dev/davinci0\npid=301\nprocess=device-plugin\n"


WORKER_LABELS = ["node-role.kubernetes.io/worker=worker", "workerselector=dls-worker-node"]


def run(cmd: List[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=True, text=True, **kw)


def installer_runs(names: List[str]) -> int:
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


def node_cpu(names: List[str]) -> float:
    """CPU seconds the emulated nodes' containers used so far (their cgroup's cpuacct.usage)."""
    total = 0
    for name in names:
        path = run(["podman", "inspect", "-f", "{{.State.CgroupPath}}", name], capture_output=True).stdout.strip()
        for root in ("/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpu,cpuacct"):
            usage = Path(root + path) / "cpuacct.usage"
            if usage.is_file():
                total += int(usage.read_text())
                break
        else:  # cgroup v2
            stat = Path("/sys/fs/cgroup" + path) / "cpu.stat"
            if stat.is_file():
                total += 1000 * int(stat.read_text().split("usage_usec")[1].split()[0])
    return total / 1e9


HEADER = re.compile(r"^(PLAY|TASK|RUNNING HANDLER) \[(.*)\] \**$")
# ansible.posix.profile_tasks: "<date> (<last task>)  <elapsed since the first task>" after each task header
ELAPSED = re.compile(r"\(\d+:\d+:\d+\.\d+\)\s+(\d+):(\d+):(\d+\.\d+)")


COLLECTION = REPO / "ansible_collections" / "ascend_resumable" / "npu"


def _imported(name: str, base: Path) -> Path:
    """The file of an import_playbook: a collection name (ascend_resumable.npu.site) or a path."""
    prefix = "ascend_resumable.npu."
    if name.startswith(prefix):
        return COLLECTION / "playbooks" / (name[len(prefix) :] + ".yml")
    return base / name


def stages() -> List[Tuple[str, List[str]]]:
    """site.yml's stages in order (the playbooks ascend_resumable.npu.site imports), each with the
    names of its plays."""
    out = []
    pending = [REPO / "site.yml"]
    while pending:
        path = pending.pop(0)
        plays = yaml.safe_load(path.read_text())
        key = "ansible.builtin.import_playbook"
        imports = [play[key] for play in plays if key in play]
        if imports:
            pending[:0] = [_imported(name, path.parent) for name in imports]
        else:
            out.append((path.name, [play.get("name", "") for play in plays]))
    return out


def stage_times(log: Path) -> Dict[str, float]:
    """Seconds per site.yml stage, from the profile_tasks timestamps (first task of a stage to the first
    of the next one). Plays are matched to stages in order (serial plays repeat their name per batch;
    two stages have a play of the same name)."""
    known = stages()
    stage, index, starts, last = 0, 0, {}, 0.0
    pending_stage = None
    for line in log.read_text().splitlines():
        head = HEADER.match(line)
        if head and head.group(1) == "PLAY":
            name = head.group(2)
            plays = known[stage][1]
            if name in plays[index:]:
                index = plays.index(name, index)
            else:
                later = [s for s in range(stage + 1, len(known)) if name in known[s][1]]
                if later:
                    stage, index = later[0], known[later[0]][1].index(name)
            if known[stage][0] not in starts:
                pending_stage = known[stage][0]
            continue
        elapsed = ELAPSED.search(line)
        if elapsed:
            last = int(elapsed.group(1)) * 3600 + int(elapsed.group(2)) * 60 + float(elapsed.group(3))
            if pending_stage is not None:
                starts[pending_stage] = last
                pending_stage = None
    order = [name for name, _ in known if name in starts]
    ends = [starts[n] for n in order[1:]] + [last]
    if not order:
        raise SystemExit("%s: no profile_tasks timestamps (is ansible.posix on ANSIBLE_COLLECTIONS_PATH?)" % log)
    return {n: end - starts[n] for n, end in zip(order, ends)}


class Run:
    """One site.yml run: wall time, changed tasks, CPU seconds of the controller and of the nodes,
    seconds per stage (preflight, facts, compute, nodes)."""

    def __init__(self, wall: float, changed: int, controller_cpu: float, nodes_cpu: float, stages: Dict[str, float]):
        self.wall, self.changed, self.controller_cpu, self.nodes_cpu = wall, changed, controller_cpu, nodes_cpu
        self.stages = stages


def playbook(inv: Path, env: Dict[str, str], log: Path, names: List[str], *extra: str) -> Run:
    """Run site.yml; exits when it fails. The controller's CPU is ansible-playbook and its children
    (workers, ssh clients); the nodes' CPU is their containers', on the same cores here."""
    argv = [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(inv), str(REPO / "site.yml"), *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    nodes_before = node_cpu(names)
    elapsed = timed_run(argv, REPO, env, log, "ansible-playbook")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    nodes_used = node_cpu(names) - nodes_before
    with open(log) as handle:
        recap = [line for line in handle if "changed=" in line and "ok=" in line]
    changed = sum(int(line.split("changed=")[1].split()[0]) for line in recap)
    controller = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return Run(elapsed, changed, controller, nodes_used, stage_times(log))


def ssh_image(work: Path) -> str:
    """The node image plus openssh-server (built once, kept as a local image)."""
    if subprocess.run(["podman", "image", "exists", SSH_IMAGE], check=False).returncode != 0:
        (work / "Containerfile").write_text(SSH_CONTAINERFILE)
        run(["podman", "build", "-q", "-t", SSH_IMAGE, str(work)], stdout=subprocess.DEVNULL)
    return SSH_IMAGE


def start_nodes(names: List[str], connection: str, work: Path) -> Dict[str, str]:
    """Start the emulated nodes; returns name -> address for ssh (empty for podman)."""
    subprocess.run(["podman", "rm", "-f", *names], capture_output=True, check=False)
    image, command = (ssh_image(work), []) if connection == "ssh" else (IMAGE, ["sleep", "infinity"])
    if connection == "ssh":
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(work / "id_ed25519")])
    addresses = {}
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
                "-v",
                "%s:/opt/kube-fixture:ro" % (FIXTURES.parent / "kube"),
                "-v",
                "%s:/opt/fixtures:ro" % FIXTURES.parent,
                image,
                *command,
            ],
            stdout=subprocess.DEVNULL,
        )
        run(["podman", "exec", name, "/opt/ascend-fixture/setup-node.sh", "/opt/ascend-sys"], stdout=subprocess.DEVNULL)
        # each node is its own kubectl host: registered in the emulated cluster as a worker in service
        register = ["/opt/kube-fixture/kubectl", "fixture", "node", name, "--local", *WORKER_LABELS]
        run(["podman", "exec", name, *register], stdout=subprocess.DEVNULL)
        run(
            [
                "podman",
                "exec",
                name,
                "sh",
                "-c",
                "printf '%s' > /var/lib/ascend-fixture/containers/ds-device-plugin" % DAEMONSET,
            ],
        )
        if connection == "ssh":
            run(["podman", "cp", str(work / "id_ed25519.pub"), "%s:/root/.ssh/authorized_keys" % name])
            run(["podman", "exec", name, "chown", "root:root", "/root/.ssh/authorized_keys"])
            addresses[name] = run(
                ["podman", "inspect", "-f", "{{.NetworkSettings.IPAddress}}", name], capture_output=True
            ).stdout.strip()
    return addresses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--serial", default="2", help="batch size (ascend_rollout_serial)")
    parser.add_argument("--connection", choices=["ssh", "podman"], default="ssh", help="how Ansible reaches the nodes")
    parser.add_argument("--keep", action="store_true", help="keep containers and logs")
    parser.add_argument(
        "--reuse", metavar="DIR", help="time the re-runs again on the converged nodes a --keep run left in DIR"
    )
    parser.add_argument("--repeats", type=int, default=REPEATS, help="how often each re-run is timed")
    args = parser.parse_args()
    if args.nodes < 3:
        parser.error("--nodes must be at least 3 (the re-run is compared between 2 and N nodes)")

    env = dict(os.environ)
    env.setdefault("CONTAINERS_CONF", str(REPO / "podman" / "containers.conf"))
    # the stage times need ansible.posix's profile_tasks; without it Ansible only warns and every stage
    # would read 0 s: unpack the collections the tests use (scripts/fetch-collections.sh) when missing
    if "ANSIBLE_COLLECTIONS_PATH" not in env and not (REPO / "collections/ansible_collections/ansible/posix").is_dir():
        subprocess.run([str(REPO / "scripts" / "fetch-collections.sh"), str(REPO / "collections")], check=True)
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", "%s:%s" % (REPO / "collections", REPO))
    env["ANSIBLE_CONFIG"] = str(REPO / "ansible.cfg")
    env["ANSIBLE_NOCOLOR"] = "1"
    # task timestamps in the logs: the time per site.yml stage (and per task, at the end of each log)
    env["ANSIBLE_CALLBACKS_ENABLED"] = "ansible.posix.profile_tasks"
    env["PATH"] = "%s:%s" % (REPO / ".venv" / "bin", env.get("PATH", ""))
    os.environ["CONTAINERS_CONF"] = env["CONTAINERS_CONF"]

    names = ["ascend-bench-%d" % i for i in range(1, args.nodes + 1)]
    work = Path(args.reuse) if args.reuse else Path(tempfile.mkdtemp(prefix="ascend-bench-"))
    inv = work / "inventory"
    keep = args.keep or bool(args.reuse)
    check_runs = 0  # with --reuse, check mode ran (and was judged) in the run that set the nodes up
    try:
        if not args.reuse:
            pkgs = work / "packages"
            run([str(FIXTURES / "build-packages.sh"), str(pkgs)], stdout=subprocess.DEVNULL)
            addresses = start_nodes(names, args.connection, work)
            (inv / "group_vars").mkdir(parents=True)
            (inv / "hosts.yml").write_text(
                "all:\n  children:\n    ascend_cluster:\n      children:\n        ascend_compute:\n          hosts:\n"
                + "".join(
                    "            %s: {%s}\n" % (n, "ansible_host: %s" % addresses[n] if n in addresses else "")
                    for n in names
                )
            )
            files = [{"path": "/etc/containerd/config.toml", "content": CONTAINERD_CONFIG.read_text()}]
            (inv / "group_vars" / "all.yml").write_text(
                CONNECTION_VARS[args.connection].format(key=work / "id_ed25519")
                + GROUP_VARS.format(pkgs=pkgs, fixtures=FIXTURES)
                + NODE_VARS.format(pkgs=pkgs)
                + yaml.safe_dump({"node_fixture_files": files})
            )
            # rollout knobs in the inventory, where operators set them (playbooks/compute.yml reads them there).
            # The firmware change holds every node until its (emulated) reboot: allowed here, so the first
            # converge goes through all batches instead of stopping after the first one.
            with open(inv / "group_vars" / "all.yml", "a") as handle:
                knobs = {"ascend_rollout_serial": args.serial, "ascend_rollout_max_held": args.nodes}
                handle.write("".join("%s: %s\n" % (k, json.dumps(v)) for k, v in knobs.items()))
            prepare_env = dict(env, MOLECULE_EPHEMERAL_DIRECTORY=str(work))
            prepare = [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(inv), str(NODE_FIXTURE_PREPARE)]
            timed_run(prepare, REPO, prepare_env, work / "prepare.log", "ansible-playbook (node fixtures)")

            check = playbook(inv, env, work / "check-fresh.log", names, "--check")
            check_runs = installer_runs(names)
            first = playbook(inv, env, work / "first.log", names)
            runs_first = installer_runs(names)
            for name in names:  # the new firmware runs only after a reboot (HDK-DRV install.sh exit codes)
                run(["podman", "exec", name, "/opt/ascend-fixture/reboot-node.sh"], stdout=subprocess.DEVNULL)
            release = playbook(inv, env, work / "release.log", names)
            print(
                "nodes: %d, batch size (serial): %s; installer time is EMULATED (fixture installers, ms not minutes)"
                % (args.nodes, args.serial)
            )
            print(
                "check mode on fresh nodes: %.1f s, %d planned changes, installer runs: %d (must be 0)"
                % (check.wall, check.changed, check_runs)
            )
            print("first converge:            %.1f s, installer runs: %d (emulated)" % (first.wall, runs_first))
            print("run after the reboot:      %.1f s (nodes returned to service)" % release.wall)

        limit2 = ["--limit", ",".join(names[:2])]
        reruns: Dict[int, List[Run]] = {2: [], args.nodes: []}
        before = installer_runs(names)
        loads = [os.getloadavg()[0]]
        for i in range(args.repeats):
            reruns[2].append(playbook(inv, env, work / ("rerun2-%d.log" % i), names, *limit2))
            reruns[args.nodes].append(playbook(inv, env, work / ("rerun%d-%d.log" % (args.nodes, i)), names))
            loads.append(os.getloadavg()[0])
        rerun_installers = installer_runs(names) - before
        rerun_changed = sum(r.changed for results in reruns.values() for r in results)
        best = {n: min(results, key=lambda r: r.wall) for n, results in reruns.items()}
        growth = best[args.nodes].wall / best[2].wall

        print("load average (1 min) during the re-runs: %s" % ", ".join("%.1f" % x for x in loads))
        for n in sorted(reruns):
            times = ", ".join("%.1f" % r.wall for r in reruns[n])
            print(
                "re-run on %d converged nodes: best %.1f s (runs: %s) = %.2f s per node; best run's CPU: "
                "controller %.1f s, nodes %.1f s"
                % (n, best[n].wall, times, best[n].wall / n, best[n].controller_cpu, best[n].nodes_cpu)
            )
        for stage, _ in stages():
            per = {n: min(r.stages.get(stage, 0.0) for r in results) for n, results in reruns.items()}
            print(
                "  stage %-14s best 2 nodes %5.1f s, %d nodes %5.1f s: growth %.2f x"
                % (stage, per[2], args.nodes, per[args.nodes], per[args.nodes] / per[2] if per[2] else 0.0)
            )
        print("re-runs: changed tasks %d, installer runs %d (both must be 0)" % (rerun_changed, rerun_installers))
        print("growth 2 -> %d nodes: %.2f x (target <= %.1f)" % (args.nodes, growth, GROWTH_LIMIT))
        ok = check_runs == 0 and rerun_changed == 0 and rerun_installers == 0 and growth <= GROWTH_LIMIT
        print("result: %s" % ("PASS" if ok else "FAIL"))
        if keep:
            print("logs and inventory: %s (re-measure: --reuse %s)" % (work, work))
        return 0 if ok else 1
    finally:
        if not keep:
            subprocess.run(["podman", "rm", "-f", "-t", "0", *names], capture_output=True, check=False)
            subprocess.run(["rm", "-rf", str(work)], check=False)


if __name__ == "__main__":
    sys.exit(main())
