#!/usr/bin/env python3
"""A local Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and KWOK, with fake nodes made from a profile's plan.

The real programs, built from Go modules by ``tools/go_tools.py`` (``make tools``); no kubelet:
KWOK plays every node's kubelet, so Deployments, DaemonSets and Jobs get pods that the real
scheduler places by their selectors, tolerations and resource requests, and that go Running, but
no image is pulled, no volume mounted and no container started.

Used by the cluster tests (``tests/cluster/``) and by people (``make sandbox``):

    python3 tools/controlplane.py up --dir DIR --profile examples/pytorch-process-recovery.yaml
    python3 tools/controlplane.py down --dir DIR

``up`` makes the certificates, picks free ports, starts each program with its log in ``DIR/logs``,
records every PID in ``DIR/processes.json``, waits until the API server answers, creates the fake
nodes and waits until they are Ready, then writes ``DIR/kubeconfig`` and prints it. ``down`` stops
what ``DIR/processes.json`` names (only processes whose command line is still the one started) and
removes nothing else. Needs ``openssl`` and the standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
import go_tools

PROCESSES_FILE = "processes.json"
#: the annotation KWOK is told to manage nodes by (kwok --manage-nodes-with-annotation-selector)
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
SERVICE_CIDR = "10.96.0.0/16"
#: what a fake node offers besides its NPUs: a large Atlas training server's CPU and memory
NODE_CPU = "192"
NODE_MEMORY = "1536Gi"
NODE_PODS = "110"
#: the kubeconfig contexts the shipped stacks name (Pulumi.<stack>.yaml `context`): the sandbox
#: answers to each, so the shipped stacks run unchanged against it
SHIPPED_CONTEXTS = ("ascend-a2", "ascend-x86", "ascend-legacy")


class UsageError(Exception):
    """A mistake in what the user asked (exit 2)."""


class ControlPlaneError(Exception):
    """The control plane could not start or stop: the message says which program and its log."""


@dataclass
class Process:
    name: str
    argv: List[str]
    pid: int
    log: str
    child: Optional[subprocess.Popen[bytes]] = field(default=None, repr=False, compare=False)

    def alive(self) -> bool:
        """Still running, and still the program we started. A process this Python started is
        asked through its handle (which also reaps it); one recorded by another run (``down``) is
        checked by its executable, because a PID can be reused: unlike the command line, the
        executable stays readable while the program re-executes itself."""
        if self.child is not None:
            return self.child.poll() is None
        proc = Path(f"/proc/{self.pid}")
        try:
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            exe = os.readlink(proc / "exe")
        except (OSError, IndexError):
            return False
        return state != "Z" and exe == os.path.realpath(self.argv[0])


@dataclass(frozen=True)
class FakeNode:
    """A node as site.yml leaves it: its name, labels and what it offers (NPUs by resource name)."""

    name: str
    labels: Mapping[str, str]
    npus: Mapping[str, int] = field(default_factory=dict)
    arch: str = "arm64"

    def manifest(self) -> Dict[str, Any]:
        offered = {"cpu": NODE_CPU, "memory": NODE_MEMORY, "pods": NODE_PODS}
        offered.update({resource: str(count) for resource, count in self.npus.items()})
        labels = {
            "kubernetes.io/hostname": self.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": self.arch,
            "beta.kubernetes.io/os": "linux",
            "beta.kubernetes.io/arch": self.arch,
            "type": "kwok",
        }
        labels.update(self.labels)
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": labels, "annotations": {KWOK_ANNOTATION: "fake"}},
            "spec": {},
            # KWOK's node-initialize stage keeps capacity and allocatable when they are set
            # (kwok v0.8.0 kustomize/stage/node/fast/node-initialize.yaml)
            "status": {"allocatable": dict(offered), "capacity": dict(offered)},
        }


def nodes_for_jobs(plan_json: Mapping[str, Any]) -> int:
    """The NPU nodes the plan's jobs need all at once (at least 2): one per pod. Volcano admits a
    job's PodGroup only when the cluster holds its ``minResources`` (every pod's NPUs), and the
    Ascend Operator makes no pod before that (gang scheduling), so a cluster of fewer nodes leaves the
    job Pending for good."""
    pods = sum(int(r.get("replicas") or 0) for job in plan_json.get("jobs") or [] for r in job.get("replicas") or [])
    return max(2, pods)


def nodes_from_plan(plan_json: Mapping[str, Any], compute: Optional[int] = None) -> List[FakeNode]:
    """One management node and ``compute`` NPU nodes (default: what the jobs need, nodes_for_jobs),
    labelled as site.yml labels them.

    ``plan_json`` is ``resumable plan --format json``: the management node carries
    ``nodes.master_labels``; each compute node ``nodes.labels`` and ``nodes.npus_per_node`` of the
    resource ``nodes.npu_resource``, as the device plugin advertises them.
    """
    if compute is None:
        compute = nodes_for_jobs(plan_json)
    nodes = plan_json["nodes"]
    arch = "arm64" if nodes.get("arch") == "aarch64" else "amd64"
    resource = str(nodes["npu_resource"])
    per_node = int(nodes["npus_per_node"])
    fake = [FakeNode("master-0", dict(nodes["master_labels"]), arch=arch)]
    fake += [FakeNode(f"npu-{i}", dict(nodes["labels"]), {resource: per_node}, arch) for i in range(compute)]
    return fake


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ControlPlaneError(f"openssl {' '.join(args)} failed: {done.stderr.strip()}")


def make_certificates(pki: Path) -> None:
    """A CA, the API server's serving certificate (127.0.0.1, localhost), an admin client
    certificate in group system:masters and the service-account signing key."""
    pki.mkdir(parents=True, exist_ok=True)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650",
            "-subj", "/CN=ascend-resumable-sandbox-ca", cwd=pki)  # fmt: skip
    (pki / "server.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,IP:10.96.0.1\n"
        "extendedKeyUsage=serverAuth\n"
    )
    (pki / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for name, subject in (("apiserver", "/CN=kube-apiserver"), ("admin", "/O=system:masters/CN=admin")):
        openssl("req", "-new", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=pki)
        ext = "server.ext" if name == "apiserver" else "client.ext"
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", f"{name}.crt", "-days", "365", "-extfile", ext, cwd=pki)  # fmt: skip
    openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sa.key", cwd=pki)
    openssl("ec", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


def kubeconfig_text(server: str, pki: Path, contexts: Sequence[str]) -> str:
    """An admin kubeconfig whose every context (the default and the shipped stacks') is this cluster."""
    names = ["sandbox", *[c for c in contexts if c != "sandbox"]]
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "sandbox", "cluster": {"server": server, "certificate-authority": str(pki / "ca.crt")}}],
        "users": [
            {
                "name": "admin",
                "user": {"client-certificate": str(pki / "admin.crt"), "client-key": str(pki / "admin.key")},
            }
        ],
        "contexts": [{"name": n, "context": {"cluster": "sandbox", "user": "admin"}} for n in names],
        "current-context": "sandbox",
    }
    return json.dumps(doc, indent=1) + "\n"


class ControlPlane:
    """The processes of one control plane in ``workdir``; ``start()`` then ``stop()``."""

    def __init__(self, workdir: Path, bins: Optional[Mapping[str, Path]] = None, mindcluster: bool = False) -> None:
        self.workdir = workdir.resolve()
        #: the pod runner also runs what MindCluster needs for pod-level rescheduling (podrunner --mindcluster)
        self.mindcluster = mindcluster
        self.pki = self.workdir / "pki"
        self.logs = self.workdir / "logs"
        self.kubeconfig = self.workdir / "kubeconfig"
        self.processes: List[Process] = []
        self.bins = dict(bins) if bins is not None else self._built_bins()
        self.server = ""

    @staticmethod
    def _built_bins() -> Dict[str, Path]:
        found: Dict[str, Path] = {}
        for directory in go_tools.bin_dirs([go_tools.TOOLS[n] for n in ("kubernetes", "etcd", "kwok")]):
            for program in directory.iterdir():
                found[program.name] = program
        return found

    # -- processes -------------------------------------------------------------------------------

    def _record(self) -> None:
        data = [{"name": p.name, "argv": p.argv, "pid": p.pid, "log": p.log} for p in self.processes]
        tmp = self.workdir / (PROCESSES_FILE + ".tmp")
        tmp.write_text(json.dumps(data, indent=1) + "\n")
        tmp.replace(self.workdir / PROCESSES_FILE)

    def _spawn(self, name: str, args: Sequence[str], program: Optional[Sequence[str]] = None) -> Process:
        argv = [*(program or [str(self.bins[name])]), *args]
        log = self.logs / f"{name}.log"
        with open(log, "ab") as out:
            child = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                start_new_session=True,
            )
        process = Process(name, argv, child.pid, str(log), child)
        self.processes.append(process)
        self._record()
        return process

    def _check_running(self, process: Process) -> None:
        if not process.alive():
            raise ControlPlaneError(f"{process.name} exited at start; its log: {process.log}\n{tail(process.log)}")

    def stop(self) -> None:
        """Stop every process this control plane started, newest first: SIGTERM, then SIGKILL."""
        stop_processes(self.processes)
        self.processes = []
        with contextlib.suppress(OSError):
            (self.workdir / PROCESSES_FILE).unlink()

    # -- start -----------------------------------------------------------------------------------

    def start(self, nodes: Sequence[FakeNode] = (), contexts: Sequence[str] = SHIPPED_CONTEXTS) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(exist_ok=True)
        try:
            self._start(nodes, contexts)
        except BaseException:
            self.stop()
            raise

    def _start(self, nodes: Sequence[FakeNode], contexts: Sequence[str]) -> None:
        make_certificates(self.pki)
        client, peer, secure = free_port(), free_port(), free_port()
        etcd = self._spawn(
            "etcd",
            [
                "--name=sandbox",
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{client}",
                f"--advertise-client-urls=http://127.0.0.1:{client}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=sandbox=http://127.0.0.1:{peer}",
                "--listen-metrics-urls=",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
        )
        wait_for(lambda: http_ok(f"http://127.0.0.1:{client}/health"), 60, etcd, self._check_running)
        self.server = f"https://127.0.0.1:{secure}"
        pki = self.pki
        apiserver = self._spawn(
            "kube-apiserver",
            [
                f"--etcd-servers=http://127.0.0.1:{client}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={secure}",
                f"--cert-dir={pki}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                "--authorization-mode=Node,RBAC",
                f"--service-account-issuer={self.server}",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--allow-privileged=true",
                "--profiling=false",
                "--v=1",
            ],
        )
        self.kubeconfig.write_text(kubeconfig_text(self.server, pki, contexts))
        wait_for(lambda: self._api_ok("/readyz"), 120, apiserver, self._check_running)
        common = [f"--kubeconfig={self.kubeconfig}", "--leader-elect=false", "--bind-address=127.0.0.1"]
        manager = self._spawn(
            "kube-controller-manager",
            [
                *common,
                "--secure-port=0",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={pki / 'ca.crt'}",
                "--use-service-account-credentials=true",
                # node lifecycle stays on: it lifts the not-ready taint admission puts on a new node
                # once KWOK reports it Ready (and taints it again when its lease lapses); no pod
                # CIDRs to allocate
                "--controllers=*,-nodeipam",
                "--v=1",
            ],
        )
        scheduler = self._spawn("kube-scheduler", [*common, "--secure-port=0", "--v=1"])
        stages = go_tools.share_dir("kwok") if "kwok" not in self.bins else self.bins["kwok"].parent.parent / "share"
        kwok = self._spawn(
            "kwok",
            [
                f"--kubeconfig={self.kubeconfig}",
                f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}=fake",
                f"--server-address=127.0.0.1:{free_port()}",
                "--node-ip=127.0.0.1",
                "--node-lease-duration-seconds=40",
                *[f"--config={path}" for path in sorted(stages.glob("*.yaml"))],
            ],
        )
        runner = self._spawn(
            "podrunner",
            [
                f"--kubeconfig={self.kubeconfig}",
                f"--dir={self.workdir / 'runner'}",
                *(["--mindcluster"] if self.mindcluster else []),
            ],
            program=[sys.executable, str(Path(__file__).resolve().parent / "podrunner.py")],
        )
        for process in (manager, scheduler, kwok, runner):
            self._check_running(process)
        # the controller manager has made the default namespace's ServiceAccount: pods can be admitted
        wait_for(lambda: self.kubectl("get", "serviceaccount", "default", check=False).returncode == 0, 90,
                 manager, self._check_running)  # fmt: skip
        if nodes:
            self.add_nodes(nodes)

    # -- API -------------------------------------------------------------------------------------

    def _api_ok(self, path: str) -> bool:
        context = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        context.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return http_ok(self.server + path, context)

    def env(self) -> Dict[str, str]:
        """The environment kubectl and pulumi need to reach this cluster."""
        path = os.pathsep.join(sorted({str(p.parent) for p in self.bins.values()}))
        return dict(os.environ, KUBECONFIG=str(self.kubeconfig), PATH=path + os.pathsep + os.environ.get("PATH", ""))

    def kubectl(
        self, *args: str, stdin: Optional[str] = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(self.bins["kubectl"]), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise ControlPlaneError(f"kubectl {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
        return done

    def add_nodes(self, nodes: Sequence[FakeNode]) -> None:
        """Create the fake nodes (those a restarted control plane does not have already: its etcd
        data are kept) and wait until KWOK reports each Ready."""
        present = {item["metadata"]["name"] for item in self.get_json("nodes")["items"]}
        missing = [n.manifest() for n in nodes if n.name not in present]
        if missing:
            self.kubectl("create", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": missing}))
        names = [f"node/{n.name}" for n in nodes]
        self.kubectl("wait", "--for=condition=Ready", "--timeout=90s", *names, timeout=120)

    def get_json(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)


# -- helpers ---------------------------------------------------------------------------------------


def tail(path: str, lines: int = 20) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def http_ok(url: str, context: Optional[ssl.SSLContext] = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5, context=context) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ssl.SSLError):
        return False


def wait_for(ready: Any, seconds: float, process: Process, check: Any) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        check(process)
        if time.monotonic() > deadline:
            raise ControlPlaneError(
                f"{process.name} was not ready within {seconds:.0f} s; its log: {process.log}\n{tail(process.log)}"
            )
        time.sleep(0.2)


#: seconds a process may take to exit on SIGTERM. The components exit in well under a second; the
#: API server's graceful termination waits on open watches (over 15 s measured) and etcd waits for
#: the API server, for nothing a local control plane needs. etcd runs with --unsafe-no-fsync, its
#: writes already in the page cache, so a SIGKILL loses no state of a sandbox that is started again.
STOP_GRACE = 2.0


def stop_processes(processes: Sequence[Process], grace: float = STOP_GRACE) -> None:
    """SIGTERM each process group we started (newest first), wait, then SIGKILL what is left."""
    alive = [p for p in reversed(processes) if p.alive()]
    for process in alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for process in alive:
        while process.alive() and time.monotonic() < deadline:
            reap(process)
            time.sleep(0.1)
        if process.alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
    for process in alive:
        if process.child is not None:  # our own child: its exit status is the proof
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.child.wait(timeout=30)
            continue
        for _ in range(50):
            reap(process)
            if not process.alive():
                break
            time.sleep(0.1)


def reap(process: Process) -> None:
    """Collect a child's exit status (a no-op for a process another run started)."""
    if process.child is not None:
        process.child.poll()
        return
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(process.pid, os.WNOHANG)


def recorded(workdir: Path) -> List[Process]:
    try:
        data = json.loads((workdir / PROCESSES_FILE).read_text())
    except (OSError, ValueError):
        return []
    return [Process(d["name"], list(d["argv"]), int(d["pid"]), d["log"]) for d in data]


@contextlib.contextmanager
def running(workdir: Path, nodes: Sequence[FakeNode] = ()) -> Iterator[ControlPlane]:
    plane = ControlPlane(workdir)
    plane.start(nodes)
    try:
        yield plane
    finally:
        plane.stop()


def plan_json(profile: Path) -> Dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "resumable", "plan", str(profile), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise UsageError(f"resumable plan {profile} failed: {done.stderr.strip()}")
    data: Dict[str, Any] = json.loads(done.stdout)
    return data


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start the control plane and its fake nodes")
    up.add_argument("--dir", type=Path, required=True, help="working directory (certificates, data, logs)")
    up.add_argument("--profile", type=Path, help="make fake nodes from this profile's plan")
    up.add_argument(
        "--compute-nodes", type=int, help="fake NPU nodes (default: one per pod of the profile's jobs, at least 2)"
    )
    up.add_argument(
        "--mindcluster",
        action="store_true",
        help="run Huawei's Volcano plugin, ClusterD and the device plugin's double too (podrunner --mindcluster)",
    )
    down = sub.add_parser("down", help="stop what `up` started in --dir")
    down.add_argument("--dir", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "down":
            stop_processes(recorded(args.dir))
            with contextlib.suppress(OSError):
                (args.dir / PROCESSES_FILE).unlink()
            return 0
        if any(p.alive() for p in recorded(args.dir)):
            raise UsageError(f"a control plane already runs in {args.dir}: stop it first (`down --dir {args.dir}`)")
        nodes = nodes_from_plan(plan_json(args.profile), args.compute_nodes) if args.profile else []
        plane = ControlPlane(args.dir, mindcluster=args.mindcluster)
        plane.start(nodes)
        print(plane.kubeconfig)
        return 0
    except (UsageError, go_tools.ToolError) as exc:  # what the user asked, or tools not built yet
        print(f"controlplane: {exc}", file=sys.stderr)
        return 2
    except ControlPlaneError as exc:  # a program that did not start: its log is named
        print(f"controlplane: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
