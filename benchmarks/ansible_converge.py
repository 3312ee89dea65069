#!/usr/bin/env python3
"""Benchmark site.yml against emulated Ascend nodes: the CPU seconds a node adds to a run.

Each podman container is an emulated node (tests/fixtures/ascend: fake sysfs with 8 NPUs, npu-smi,
an NPU DaemonSet with the devices in its spec, driver/firmware/CANN .run installers that log every
run; tests/fixtures/node: containerd 1.7 with a kubespray-style config, kubelet and systemctl, set up
by the shared prepare playbook of the molecule scenarios). Each node is its own kubectl host for the
driver role's maintenance window (its emulated cluster reports its own NPUs as allocatable); the node
labels of a set of nodes are kept on the set's first node, the one kubectl host of that cluster.
Ansible reaches the nodes over SSH with pipelining, as in production (--connection ssh, default:
the node image plus openssh-server, built once as a local image); --connection podman uses the
podman connection of the molecule tests (several podman processes per task on the controller).
INSTALLER TIME IS EMULATED: the fixture installers return in milliseconds where the real ones take
minutes.

What is measured, per run: the controller's CPU seconds (ansible-playbook's main process, which
serialises the play, and its workers, ssh clients and ssh connection masters, which the benchmark
closes and reaps after each run) and the nodes' CPU seconds (their containers' cgroups: sshd, the
modules, the fixtures). Wall-clock time is printed but judged nowhere: on a 2-core machine the
emulated nodes run on the controller's cores, so wall time grows with the node count for reasons a
real cluster does not have. CPU seconds per added node (the marginal cost) do not depend on that.

Steps, on two sets of fresh nodes (2 and N): site.yml --check on each set (must run 0 installers),
the first converge of each set (batches of --serial), the emulated reboot the new firmware needs and
the run that returns the nodes to service; then re-runs on the converged N-node set with 2 of its
nodes (--limit) and with all N, --repeats times each. Marginal cost per node = (run(N) - run(2)) /
(N - 2) for each repeat pair; printed as median and range. The first converge and check mode have
one sample each (fresh nodes are used up by them).
Pass: check mode ran 0 installers, every re-run changed 0 tasks and ran 0 installers, and the median
marginal CPU per node of the converged re-run is at most 1.0 s on the controller and 2.0 s on the nodes.
--base REV measures the same way, in the same run and before the working tree, the site.yml of git
revision REV (exported with git archive, its own fixtures and resumable): the figures before a change.
A projection for 500 nodes (--project-nodes, --project-cores; forks from ansible.cfg) says what it assumes.

--after REV measures revision REV instead of the working tree (both exported: the tree can change meanwhile).
Module runs and task evaluations per node are counted (benchmarks/callbacks/module_runs.py): a converged re-run
passes only with at most 2 module runs and fewer than 20 task evaluations on each node.

usage (root, after scripts/test-ansible.sh set-up, or at least the node image + collections):
    .venv/bin/python benchmarks/ansible_converge.py [--nodes 4] [--serial 2] [--repeats 5] [--base REV]
        [--after REV] [--connection ssh|podman] [--keep]
"""

from __future__ import annotations

import argparse
import configparser
import ctypes
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
from logged_run import timed_run  # noqa: E402

VENV = REPO / ".venv" / "bin"
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
#: repeat pairs of the converged re-run (2 and N nodes): the marginal per node is the median of this many
#: figures (issue 33: at least 5, with their range beside the median)
REPEATS = 5
#: the budget of a converged compute node (issue 33), counted by benchmarks/callbacks/module_runs.py: module runs
#: on the node itself and task evaluations (results of any kind) for it, per re-run
MODULE_RUNS = 2
TASK_EVALUATIONS = 20
CALLBACKS = REPO / "benchmarks" / "callbacks"
#: the targets of issue 26: median marginal CPU seconds per node of a converged re-run
TARGET_CONTROLLER = 1.0
TARGET_NODES = 2.0

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
ascend_docker_runtime_package:
  src: {pkgs}/Ascend-docker-runtime_7.3.0_linux-x86_64.run
  # the package is built by the prepare playbook; its checksum read on the controller (as molecule/site does)
  checksum: >-
    sha256:{{{{ lookup('ansible.builtin.file', '{pkgs}/Ascend-docker-runtime_7.3.0_linux-x86_64.run',
    rstrip=false) | hash('sha256') }}}}
ascend_docker_runtime_kubectl: /opt/kube-fixture/kubectl
ascend_docker_runtime_kubectl_host: "{{{{ inventory_hostname }}}}"
mindcluster_node_kubectl: /opt/kube-fixture/kubectl
# containers cannot mount NFS; no NFS server here (as in molecule/site)
shared_storage_mount: false
shared_storage_check_exports: false
resumable_install_doctor_waive: [mount /user/mindx-dl/ranktable]
node_fixture_containerd: "1.7.27"
node_fixture_units: [containerd, kubelet, systemd-timesyncd]
"""

DAEMONSET = "kind=daemonset\ndevices=/dev/davinci_manager /dev/davinci0\npid=301\nprocess=device-plugin\n"
WORKER_LABELS = ["node-role.kubernetes.io/worker=worker", "workerselector=dls-worker-node"]

# ansible-playbook in this process's Python, with the main process's own CPU seconds written at exit (the
# part that serialises the run: the strategy loop; workers are forked children and exit without atexit)
LAUNCHER = """\
import atexit, json, os, resource, sys
def _dump():
    r = resource.getrusage(resource.RUSAGE_SELF)
    with open(os.environ["BENCH_MAIN_CPU"], "w") as handle:
        json.dump(r.ru_utime + r.ru_stime, handle)
atexit.register(_dump)
sys.argv[0] = "ansible-playbook"
from ansible.cli.playbook import main
main()
"""

HEADER = re.compile(r"^(PLAY|TASK|RUNNING HANDLER) \[(.*)\] \**$")
# ansible.posix.profile_tasks: "<date> (<last task>)  <elapsed since the first task>" after each task header
ELAPSED = re.compile(r"\(\d+:\d+:\d+\.\d+\)\s+(\d+):(\d+):(\d+\.\d+)")


def run(cmd: List[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=True, text=True, **kw)


class Tree(NamedTuple):
    """What is measured: a checkout (the working tree, or a git revision exported for --base)."""

    label: str
    root: Path
    bin_dir: Optional[Path]  # a directory with the tree's own `resumable` for the controller, put first on PATH


def export_tree(rev: str, work: Path) -> Tree:
    """git archive of ``rev`` into ``work``, with a `resumable` command that runs that tree's resumable."""
    commit = run(["git", "-C", str(REPO), "rev-parse", "--short", rev], capture_output=True).stdout.strip()
    root = work / ("tree-" + commit)
    root.mkdir(parents=True)
    archive = subprocess.Popen(["git", "-C", str(REPO), "archive", commit], stdout=subprocess.PIPE)
    run(["tar", "-x", "-C", str(root)], stdin=archive.stdout)
    if archive.wait() != 0:
        sys.exit("git archive %s failed" % rev)
    bin_dir = work / ("bin-" + commit)
    bin_dir.mkdir()
    script = bin_dir / "resumable"
    script.write_text('#!/bin/sh\nPYTHONPATH=%s exec %s -m resumable "$@"\n' % (root, VENV / "python"))
    script.chmod(0o755)
    return Tree(commit, root, bin_dir)


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


def _imported(name: str, base: Path, tree: Path) -> Path:
    """The file of an import_playbook: a collection name (ascend_resumable.npu.site) or a path."""
    prefix = "ascend_resumable.npu."
    if name.startswith(prefix):
        return tree / "ansible_collections/ascend_resumable/npu/playbooks" / (name[len(prefix) :] + ".yml")
    return base / name


def stages(tree: Path) -> List[Tuple[str, List[str]]]:
    """site.yml's stages in order (the playbooks ascend_resumable.npu.site imports), each with the
    names of its plays."""
    out = []
    pending = [tree / "site.yml"]
    while pending:
        path = pending.pop(0)
        plays = yaml.safe_load(path.read_text())
        key = "ansible.builtin.import_playbook"
        imports = [play[key] for play in plays if key in play]
        if imports:
            pending[:0] = [_imported(name, path.parent, tree) for name in imports]
        else:
            out.append((path.name, [play.get("name", "") for play in plays]))
    return out


def stage_times(log: Path, tree: Path) -> Dict[str, float]:
    """Seconds per site.yml stage, from the profile_tasks timestamps (first task of a stage to the first
    of the next one). Plays are matched to stages in order (serial plays repeat their name per batch;
    two stages have a play of the same name)."""
    known = stages(tree)
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


class Run(NamedTuple):
    """One site.yml run: wall time, changed tasks, CPU seconds (controller: all, main process; nodes),
    seconds per site.yml stage, the 1-minute load average before it, and per node the module runs on it and
    its task evaluations (benchmarks/callbacks/module_runs.py)."""

    wall: float
    changed: int
    controller: float
    main: float
    nodes: float
    stages: Dict[str, float]
    load: float
    modules: Dict[str, int]
    evaluations: Dict[str, int]


def counted(path: Path, nodes: List[str]) -> Tuple[Dict[str, int], Dict[str, int]]:
    """Per node: module runs on the node itself (not delegated elsewhere; run_once tasks, a cost of the run such as
    the one label call per kubectl host, not counted), and task evaluations for it."""
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []
    lines = [x for x in lines if not x.get("run_once")]
    modules = {n: sum(1 for x in lines if x["host"] == n and x["ran_on"] == n and x["module"]) for n in nodes}
    evaluations = {n: sum(1 for x in lines if x["host"] == n) for n in nodes}
    return modules, evaluations


def module_list(path: Path, node: str) -> List[str]:
    """The module runs on ``node`` (play: task (action)), for the report."""
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []
    return [
        "%s (%s)%s" % (x["task"], x["action"], ", run_once" if x.get("run_once") else "")
        for x in lines
        if x["host"] == node == x["ran_on"] and x["module"]
    ]


def _set_subreaper(on: bool) -> None:
    """PR_SET_CHILD_SUBREAPER: ssh's connection masters detach from ansible-playbook; as a subreaper this
    process inherits them, so their CPU seconds count once they are closed and reaped."""
    ctypes.CDLL(None, use_errno=True).prctl(36, int(on), 0, 0, 0)


def _close_masters(control_dir: Path) -> None:
    """Close the run's ssh connection masters and reap them (and any other orphan), for at most 30 s."""
    for sock in control_dir.iterdir() if control_dir.is_dir() else []:
        subprocess.run(["ssh", "-O", "exit", "-S", str(sock), "node"], capture_output=True, check=False)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.1)


class Bench:
    """One tree's inventory and environment on the benchmark's nodes."""

    def __init__(self, tree: Tree, work: Path, names: List[str], env: Dict[str, str], serial: str):
        self.tree, self.work, self.names, self.serial = tree, work, names, serial
        self.env = dict(env)
        self.env["ANSIBLE_COLLECTIONS_PATH"] = "%s:%s" % (REPO / "collections", tree.root)
        self.env["ANSIBLE_CONFIG"] = str(tree.root / "ansible.cfg")
        if tree.bin_dir is not None:
            self.env["PATH"] = "%s:%s" % (tree.bin_dir, self.env["PATH"])
        self.inv = work / ("inventory-" + tree.label)

    def playbook(self, log: Path, nodes: List[str], *extra: str) -> Run:
        """Run the tree's site.yml; exits when it fails. ``nodes``: the containers whose CPU counts
        (the set the run works on, its kubectl host included)."""
        main_file = log.with_suffix(".main-cpu")
        control = log.with_suffix(".cp")
        runs_log = log.with_suffix(".modules")
        env = dict(self.env, BENCH_MAIN_CPU=str(main_file), ANSIBLE_SSH_CONTROL_PATH_DIR=str(control))
        env["ASCEND_MODULE_RUNS_LOG"] = str(runs_log)
        load = os.getloadavg()[0]
        argv = [str(VENV / "python"), "-c", LAUNCHER, "-i", str(self.inv), str(self.tree.root / "site.yml"), *extra]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        nodes_before = node_cpu(nodes)
        _set_subreaper(True)
        try:
            elapsed = timed_run(argv, self.tree.root, env, log, "ansible-playbook (%s)" % self.tree.label)
            _close_masters(control)
        finally:
            _set_subreaper(False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        nodes_used = node_cpu(nodes) - nodes_before
        recap = [line for line in log.read_text().splitlines() if "changed=" in line and "ok=" in line]
        changed = sum(int(line.split("changed=")[1].split()[0]) for line in recap)
        controller = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        main = float(json.loads(main_file.read_text()))
        modules, evaluations = counted(runs_log, nodes)
        stage = stage_times(log, self.tree.root)
        return Run(elapsed, changed, controller, main, nodes_used, stage, load, modules, evaluations)

    def write_inventory(self, sets: List[List[str]], addresses: Dict[str, str], connection: str, pkgs: Path) -> None:
        fixtures = self.tree.root / "tests" / "fixtures"
        (self.inv / "group_vars").mkdir(parents=True)
        hosts = "".join(
            "            %s: {%s}\n"
            % (
                n,
                ", ".join(
                    (["ansible_host: %s" % addresses[n]] if n in addresses else [])
                    + ["mindcluster_node_kubectl_host: %s" % next(s[0] for s in sets if n in s)]
                ),
            )
            for n in self.names
        )
        groups = "all:\n  children:\n    ascend_cluster:\n      children:\n        ascend_compute:\n"
        (self.inv / "hosts.yml").write_text(groups + "          hosts:\n" + hosts)
        containerd = fixtures.parent.parent / (
            "ansible_collections/ascend_resumable/npu/roles/ascend_docker_runtime/molecule/default/files/containerd-1.7.toml"
        )
        files = [{"path": "/etc/containerd/config.toml", "content": containerd.read_text()}]
        # rollout knobs in the inventory, where operators set them (playbooks/compute.yml reads them there).
        # The firmware change holds every node until its (emulated) reboot: allowed here, so the first
        # converge goes through all batches instead of stopping after the first one.
        knobs = {"ascend_rollout_serial": self.serial, "ascend_rollout_max_held": len(self.names)}
        (self.inv / "group_vars" / "all.yml").write_text(
            CONNECTION_VARS[connection].format(key=self.work / "id_ed25519")
            + GROUP_VARS.format(pkgs=pkgs, fixtures=fixtures / "ascend")
            + yaml.safe_dump({"node_fixture_files": files})
            + "".join("%s: %s\n" % (k, json.dumps(v)) for k, v in knobs.items())
        )


def ssh_image(work: Path) -> str:
    """The node image plus openssh-server (built once, kept as a local image)."""
    if subprocess.run(["podman", "image", "exists", SSH_IMAGE], check=False).returncode != 0:
        (work / "Containerfile").write_text(SSH_CONTAINERFILE)
        run(["podman", "build", "-q", "-t", SSH_IMAGE, str(work)], stdout=subprocess.DEVNULL)
    return SSH_IMAGE


def start_nodes(sets: List[List[str]], tree: Path, connection: str, work: Path) -> Dict[str, str]:
    """Start fresh emulated nodes from ``tree``'s fixtures; returns name -> address for ssh (empty for
    podman). The first node of each set is the kubectl host of the set's labels."""
    names = [n for s in sets for n in s]
    subprocess.run(["podman", "rm", "-f", "-t", "0", *names], capture_output=True, check=False)
    image, command = (ssh_image(work), []) if connection == "ssh" else (IMAGE, ["sleep", "infinity"])
    if connection == "ssh" and not (work / "id_ed25519").exists():
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(work / "id_ed25519")])
    fixtures = tree / "tests" / "fixtures"
    addresses = {}
    for name in names:
        volumes = ["%s:/opt/ascend-fixture:ro" % (fixtures / "ascend"), "%s:/opt/kube-fixture:ro" % (fixtures / "kube")]
        volumes.append("%s:/opt/fixtures:ro" % fixtures)
        mounts = [arg for v in volumes for arg in ("-v", v)]
        run(
            ["podman", "run", "-d", "--init", "--name", name, "--hostname", name, *mounts, image, *command],
            stdout=subprocess.DEVNULL,
        )
        run(["podman", "exec", name, "/opt/ascend-fixture/setup-node.sh", "/opt/ascend-sys"], stdout=subprocess.DEVNULL)
        # each node is its own kubectl host for its window: registered in its emulated cluster as a worker in service
        register = ["/opt/kube-fixture/kubectl", "fixture", "node", name, "--local", *WORKER_LABELS]
        run(["podman", "exec", name, *register], stdout=subprocess.DEVNULL)
        state = "/var/lib/ascend-fixture/containers/ds-device-plugin"
        run(["podman", "exec", name, "sh", "-c", "printf '%s' > %s" % (DAEMONSET, state)])
        if connection == "ssh":
            run(["podman", "cp", str(work / "id_ed25519.pub"), "%s:/root/.ssh/authorized_keys" % name])
            run(["podman", "exec", name, "chown", "root:root", "/root/.ssh/authorized_keys"])
            addresses[name] = run(
                ["podman", "inspect", "-f", "{{.NetworkSettings.IPAddress}}", name], capture_output=True
            ).stdout.strip()
    for members in sets:  # the labels' kubectl host knows every node of its set
        for name in members[1:]:
            run(["podman", "exec", members[0], "/opt/kube-fixture/kubectl", "fixture", "node", name, *WORKER_LABELS])
    return addresses


class Measured(NamedTuple):
    tree: Tree
    nodes: int
    check: Dict[int, Run]
    check_installers: int
    first: Dict[int, Run]
    release: Dict[int, Run]
    first_installers: int
    reruns: Dict[int, List[Run]]
    rerun_installers: int
    loads: List[float]
    rerun_logs: List[Path]


def measure(tree: Tree, args: argparse.Namespace, env: Dict[str, str], work: Path) -> Measured:
    """check mode, first converge and release on a fresh set of 2 and one of N nodes, then the re-runs."""
    small = ["%s-%d" % (args.prefix, i) for i in (1, 2)]
    big = ["%s-%d" % (args.prefix, i) for i in range(3, args.nodes + 3)]
    bench = Bench(tree, work, small + big, env, args.serial)
    # the prepare playbook builds the Ascend Docker Runtime packages into $MOLECULE_EPHEMERAL_DIRECTORY/packages
    pkgs = work / ("fixtures-" + tree.label) / "packages"
    run([str(tree.root / "tests/fixtures/ascend/build-packages.sh"), str(pkgs)], stdout=subprocess.DEVNULL)
    addresses = start_nodes([small, big], tree.root, args.connection, work)
    bench.write_inventory([small, big], addresses, args.connection, pkgs)
    prepare_env = dict(bench.env, MOLECULE_EPHEMERAL_DIRECTORY=str(pkgs.parent))
    prepare = [str(VENV / "ansible-playbook"), "-i", str(bench.inv)]
    prepare.append(str(tree.root / "tests/fixtures/node/molecule-prepare.yml"))
    timed_run(prepare, tree.root, prepare_env, work / ("prepare-%s.log" % tree.label), "node fixtures")
    log = str(work / ("%s-%%s.log" % tree.label))
    check, first, release = {}, {}, {}
    for members in (small, big):
        n = len(members)
        limit = ["--limit", ",".join(members)]
        check[n] = bench.playbook(Path(log % ("check-%d" % n)), members, "--check", *limit)
    check_installers = installer_runs(small + big)
    for members in (small, big):
        n = len(members)
        limit = ["--limit", ",".join(members)]
        first[n] = bench.playbook(Path(log % ("first-%d" % n)), members, *limit)
        for name in members:  # the new firmware runs only after a reboot (HDK-DRV install.sh exit codes)
            run(["podman", "exec", name, "/opt/ascend-fixture/reboot-node.sh"], stdout=subprocess.DEVNULL)
        release[n] = bench.playbook(Path(log % ("release-%d" % n)), members, *limit)
    first_installers = installer_runs(small + big)
    reruns: Dict[int, List[Run]] = {2: [], args.nodes: []}
    loads = [os.getloadavg()[0]]
    rerun_logs = []
    for i in range(args.repeats):
        limit2 = ["--limit", ",".join(big[:2])]
        reruns[2].append(bench.playbook(Path(log % ("rerun2-%d" % i)), big, *limit2))
        limit = ["--limit", ",".join(big)]
        rerun_logs.append(Path(log % ("rerun%d-%d" % (args.nodes, i))).with_suffix(".modules"))
        reruns[args.nodes].append(bench.playbook(Path(log % ("rerun%d-%d" % (args.nodes, i))), big, *limit))
        loads.append(os.getloadavg()[0])
    rerun_installers = installer_runs(small + big) - first_installers
    if not args.keep:
        subprocess.run(["podman", "rm", "-f", "-t", "0", *small, *big], capture_output=True, check=False)
    return Measured(
        tree,
        args.nodes,
        check,
        check_installers,
        first,
        release,
        first_installers,
        reruns,
        rerun_installers,
        loads,
        rerun_logs,
    )


class Marginal(NamedTuple):
    """Growth per added node: median and range over the repeat pairs, and the fixed part left at 0 nodes."""

    median: float
    low: float
    high: float
    fixed: float


def marginal(small: List[float], big: List[float], n: int) -> Marginal:
    per = sorted((b - s) / (n - 2) for s, b in zip(small, big))
    mid = statistics.median(per)
    return Marginal(mid, per[0], per[-1], statistics.median(small) - 2 * mid)


def _span(values: Any) -> str:
    """median and range of some counts"""
    got = sorted(values)
    return "%g (%d to %d)" % (statistics.median(got), got[0], got[-1]) if got else "none"


def _fmt(m: Marginal) -> str:
    return "%.2f s (range %.2f to %.2f)" % (m.median, m.low, m.high) if m.low != m.high else "%.2f s" % m.median


def forks(tree: Path) -> int:
    config = configparser.ConfigParser()
    config.read(tree / "ansible.cfg")
    return config.getint("defaults", "forks", fallback=5)


def report(m: Measured, project_nodes: int, cores: int) -> Dict[str, Marginal]:
    n = m.nodes
    print("\n== %s: %d and 2 nodes ==" % (m.tree.label, n))
    print("load average (1 min) during the re-runs: %s" % ", ".join("%.1f" % x for x in m.loads))
    every = [one for by_size in (m.check, m.first, m.release) for one in by_size.values()]
    every += [one for repeats in m.reruns.values() for one in repeats]
    print(
        "load average (1 min) before each run: median %.1f (range %.1f to %.1f)"
        % (statistics.median(r.load for r in every), min(r.load for r in every), max(r.load for r in every))
    )
    for label, runs in (("check mode (fresh nodes)", m.check), ("first converge", m.first), ("release run", m.release)):
        for k in sorted(runs):
            r = runs[k]
            print(
                "%-25s %d nodes: CPU controller %6.1f s (main process %5.1f), nodes %6.1f s; wall %6.1f s%s"
                % (
                    label,
                    k,
                    r.controller,
                    r.main,
                    r.nodes,
                    r.wall,
                    ", %d planned changes" % r.changed if "check" in label else "",
                )
            )
    print(
        "check mode installer runs: %d (must be 0); first converge installer runs: %d (emulated)"
        % (m.check_installers, m.first_installers)
    )
    for k in sorted(m.reruns):
        runs = m.reruns[k]
        print(
            "re-run, %d converged nodes: CPU controller %s s (main %s), nodes %s s; wall %s s"
            % (
                k,
                ", ".join("%.1f" % r.controller for r in runs),
                ", ".join("%.1f" % r.main for r in runs),
                ", ".join("%.1f" % r.nodes for r in runs),
                ", ".join("%.1f" % r.wall for r in runs),
            )
        )
    converged = [one for repeats in m.reruns.values() for one in repeats]
    most = max(max(one.modules.values()) for one in converged)
    evaluations = max(max(one.evaluations.values()) for one in converged)
    print(
        "converged re-run, per compute node (counted): module runs on the node at most %d (budget %d), task "
        "evaluations at most %d (budget < %d)" % (most, MODULE_RUNS, evaluations, TASK_EVALUATIONS)
    )
    for name in sorted(converged[-1].modules)[:1]:
        print("  module runs on %s: %s" % (name, "; ".join(module_list(m.rerun_logs[-1], name))))
    for label, runs in (("check mode (fresh nodes)", m.check), ("first converge", m.first)):
        print(
            "%s, per node (counted): module runs %s, task evaluations %s"
            % (label, _span(runs[m.nodes].modules.values()), _span(runs[m.nodes].evaluations.values()))
        )
    for stage, _ in stages(m.tree.root):
        per = {k: statistics.median(r.stages.get(stage, 0.0) for r in runs) for k, runs in m.reruns.items()}
        print("  stage %-14s median wall 2 nodes %5.1f s, %d nodes %5.1f s" % (stage, per[2], n, per[n]))
    out = {
        "rerun controller": marginal([r.controller for r in m.reruns[2]], [r.controller for r in m.reruns[n]], n),
        "rerun main": marginal([r.main for r in m.reruns[2]], [r.main for r in m.reruns[n]], n),
        "rerun nodes": marginal([r.nodes for r in m.reruns[2]], [r.nodes for r in m.reruns[n]], n),
        "first controller": marginal([m.first[2].controller], [m.first[n].controller], n),
        "first nodes": marginal([m.first[2].nodes], [m.first[n].nodes], n),
        "check controller": marginal([m.check[2].controller], [m.check[n].controller], n),
        "check nodes": marginal([m.check[2].nodes], [m.check[n].nodes], n),
    }
    print("marginal CPU per added node (median of %d repeat pairs, range):" % len(m.reruns[2]))
    print(
        "  converged re-run: controller %s (of it the main process %s), nodes %s"
        % (_fmt(out["rerun controller"]), _fmt(out["rerun main"]), _fmt(out["rerun nodes"]))
    )
    print(
        "  first converge (one sample): controller %s, nodes %s"
        % (_fmt(out["first controller"]), _fmt(out["first nodes"]))
    )
    print(
        "  check mode on fresh nodes (one sample): controller %s, nodes %s"
        % (_fmt(out["check controller"]), _fmt(out["check nodes"]))
    )
    ctrl, main = out["rerun controller"], out["rerun main"]
    total = ctrl.fixed + project_nodes * ctrl.median
    serial = main.fixed + project_nodes * main.median
    f = forks(m.tree.root)
    print(
        "projection, converged re-run of %d nodes, forks %d, a controller with %d cores: controller CPU %.0f s "
        "(%.1f min); wall time at least %.0f s, the larger of the main process's %.0f s (one core) and all of it "
        "spread over min(forks, cores) = %d cores; each node spends %.1f s of its own CPU."
        % (
            project_nodes,
            f,
            cores,
            total,
            total / 60,
            max(serial, total / min(f, cores)),
            serial,
            min(f, cores),
            out["rerun nodes"].median,
        )
    )
    print(
        "  assumes: the cost per node stays what 2 -> %d nodes measured (no per-host work that grows with the "
        "host count), the nodes work on their own CPUs, ssh and the network add no latency, forks >= cores, "
        "and the emulated tools (npu-smi, kubectl, installers) cost what the real ones do." % n
    )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--serial", default="2", help="batch size (ascend_rollout_serial)")
    parser.add_argument("--connection", choices=["ssh", "podman"], default="ssh", help="how Ansible reaches the nodes")
    parser.add_argument("--keep", action="store_true", help="keep the last tree's containers and the logs")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="how often each re-run is measured")
    parser.add_argument("--base", metavar="REV", help="also measure git revision REV first (the figures before)")
    parser.add_argument("--only-base", action="store_true", help="with --base: measure REV only")
    parser.add_argument(
        "--after", metavar="REV", help="measure git revision REV (exported) instead of the working tree: edits go on"
    )
    parser.add_argument("--prefix", default="ascend-bench", help="container names: PREFIX-1, PREFIX-2, ...")
    parser.add_argument("--project-nodes", type=int, default=500)
    parser.add_argument("--project-cores", type=int, default=8, help="controller cores of the projection")
    args = parser.parse_args()
    if args.nodes < 3:
        parser.error("--nodes must be at least 3 (the re-run is compared between 2 and N nodes)")
    if args.repeats < REPEATS:
        print("note: --repeats %d: fewer than the %d repeat pairs a trusted marginal needs" % (args.repeats, REPEATS))

    env = dict(os.environ)
    env.setdefault("CONTAINERS_CONF", str(REPO / "podman" / "containers.conf"))
    # the stage times need ansible.posix's profile_tasks; without it Ansible only warns and every stage
    # would read 0 s: unpack the collections the tests use (scripts/fetch-collections.sh) when missing
    if not (REPO / "collections/ansible_collections/ansible/posix").is_dir():
        subprocess.run([str(REPO / "scripts" / "fetch-collections.sh"), str(REPO / "collections")], check=True)
    env["ANSIBLE_NOCOLOR"] = "1"
    # task timestamps in the logs: the time per site.yml stage (and per task, at the end of each log)
    env["ANSIBLE_CALLBACKS_ENABLED"] = "ansible.posix.profile_tasks,module_runs"
    # module runs and task evaluations per node, counted (the same callback for --base REV and the working tree)
    env["ANSIBLE_CALLBACK_PLUGINS"] = str(CALLBACKS)
    env["PATH"] = "%s:%s" % (VENV, env.get("PATH", ""))
    os.environ["CONTAINERS_CONF"] = env["CONTAINERS_CONF"]

    work = Path(tempfile.mkdtemp(prefix="ascend-bench-"))
    trees = []
    if args.base:
        trees.append(export_tree(args.base, work))
    if args.after and not args.only_base:
        trees.append(export_tree(args.after, work))
    elif not args.only_base:
        trees.append(Tree("working tree", REPO, None))
    results = []
    try:
        for tree in trees:
            results.append(measure(tree, args, env, work))
        print(
            "nodes: 2 and %d, batch size (serial): %s, %s connection; installer time is EMULATED"
            % (args.nodes, args.serial, args.connection)
        )
        marginals = [report(m, args.project_nodes, args.project_cores) for m in results]
        last, figures = results[-1], marginals[-1]
        rerun_changed = sum(r.changed for runs in last.reruns.values() for r in runs)
        print(
            "\nre-runs of %s: changed tasks %d, installer runs %d (both must be 0); check mode installer runs %d"
            % (last.tree.label, rerun_changed, last.rerun_installers, last.check_installers)
        )
        ctrl, nodes = figures["rerun controller"].median, figures["rerun nodes"].median
        print(
            "marginal CPU per node of the converged re-run: controller %.2f s (target <= %.1f), nodes %.2f s "
            "(target <= %.1f)" % (ctrl, TARGET_CONTROLLER, nodes, TARGET_NODES)
        )
        most = max(max(r.modules.values()) for runs in last.reruns.values() for r in runs)
        evaluations = max(max(r.evaluations.values()) for runs in last.reruns.values() for r in runs)
        ok = (
            most <= MODULE_RUNS
            and evaluations < TASK_EVALUATIONS
            and last.check_installers == 0
            and rerun_changed == 0
            and last.rerun_installers == 0
            and ctrl <= TARGET_CONTROLLER
            and nodes <= TARGET_NODES
        )
        print("result: %s" % ("PASS" if ok else "FAIL"))
        if args.keep:
            print("logs and inventories: %s" % work)
        return 0 if ok else 1
    finally:
        if not args.keep:
            subprocess.run(["rm", "-rf", str(work)], check=False)


if __name__ == "__main__":
    sys.exit(main())
