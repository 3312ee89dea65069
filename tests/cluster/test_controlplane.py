"""The local control plane itself: real programs, fake nodes from the plan, nothing left behind."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import List

from conftest import EXAMPLES

from .fixtures import StartPlane, controlplane, plan_nodes


def test_nodes_from_the_plan_are_ready_with_their_labels_and_npus(start_plane: StartPlane) -> None:
    plane = start_plane(plan_nodes(EXAMPLES / "pytorch-process-recovery.yaml", compute=2))
    nodes = {n["metadata"]["name"]: n for n in plane.get_json("nodes")["items"]}
    assert sorted(nodes) == ["master-0", "npu-0", "npu-1"]
    assert nodes["master-0"]["metadata"]["labels"]["masterselector"] == "dls-master-node"
    npu = nodes["npu-0"]
    assert npu["metadata"]["labels"]["workerselector"] == "dls-worker-node"
    assert npu["metadata"]["labels"]["accelerator-type"] == "module-910b-8"
    assert npu["status"]["allocatable"]["huawei.com/Ascend910"] == "8"
    ready = {c["type"]: c["status"] for c in npu["status"]["conditions"]}
    assert ready["Ready"] == "True"
    version = plane.kubectl("version", "-o", "json").stdout
    assert '"gitVersion": "v1.28.15"' in version  # stamped: pulumi-kubernetes reads the server's version


def test_a_pod_is_scheduled_onto_a_fake_npu_node_and_runs(start_plane: StartPlane) -> None:
    plane = start_plane(plan_nodes(EXAMPLES / "pytorch-process-recovery.yaml", compute=1))
    pod = """
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: default}
spec:
  nodeSelector: {workerselector: dls-worker-node}
  containers:
  - name: c
    image: registry.invalid/never-pulled:1
    resources: {requests: {huawei.com/Ascend910: "8"}, limits: {huawei.com/Ascend910: "8"}}
"""
    plane.kubectl("apply", "-f", "-", stdin=pod)
    plane.kubectl("wait", "--for=condition=Ready", "pod/trainer", "--timeout=60s", timeout=90)
    assert plane.get_json("pod", "trainer")["spec"]["nodeName"] == "npu-0"


def test_every_process_is_stopped_when_the_test_fails(tmp_path: Path) -> None:
    plane = controlplane.ControlPlane(tmp_path / "plane")
    try:
        plane.start()
        started = list(plane.processes)
        pids = [p.pid for p in started]
        assert len(pids) == 6 and all(p.alive() for p in started)
        raise RuntimeError("a test fails here")
    except RuntimeError:
        pass
    finally:
        plane.stop()
    for process in started:  # each exited and was reaped: its exit status was collected
        assert process.child is not None and process.child.returncode is not None, f"{process.name} left running"
        assert not Path(f"/proc/{process.pid}/exe").exists() or not _same_program(process)
    assert not (tmp_path / "plane" / controlplane.PROCESSES_FILE).exists()
    assert processes_naming(tmp_path / "plane") == [], "a process of the plane (or the pod runner's) outlived it"


def processes_naming(directory: Path) -> List[str]:
    """The command lines of running processes that name ``directory`` (what the plane and the pod
    runner start all do)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        line = " ".join(w.decode(errors="replace") for w in words if w)
        if str(directory) in line:
            found.append(line)
    return found


def test_down_stops_what_up_started_and_nothing_else(tmp_path: Path) -> None:
    plane_dir = tmp_path / "sandbox"
    assert controlplane.main(["up", "--dir", str(plane_dir)]) == 0
    recorded = controlplane.recorded(plane_dir)
    try:
        assert {p.name for p in recorded} == {
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kwok",
            "podrunner",
        }
        bystander = os.getpid()
        (plane_dir / controlplane.PROCESSES_FILE).write_text(
            (plane_dir / controlplane.PROCESSES_FILE).read_text().replace("]\n", "")[:-1]
            + ',\n {"name": "bystander", "argv": ["/not/what/runs"], "pid": %d, "log": ""}\n]\n' % bystander
        )
        assert controlplane.main(["down", "--dir", str(plane_dir)]) == 0
        assert all(not p.alive() for p in recorded)
        assert Path(f"/proc/{bystander}").exists()  # a PID whose command line is not ours is left alone
    finally:  # a failed assertion above leaves no control plane running
        for process in recorded:
            if process.alive() and _same_program(process):
                os.kill(process.pid, signal.SIGKILL)


def _same_program(process: controlplane.Process) -> bool:
    """The PID (possibly reused by now) runs the program we started."""
    try:
        return os.readlink(f"/proc/{process.pid}/exe") == os.path.realpath(process.argv[0])
    except OSError:
        return False
