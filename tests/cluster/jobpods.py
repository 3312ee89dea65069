"""What a deployed training job must become on a cluster where the real Ascend Operator and Volcano
run (tools/podrunner.py): its PodGroup with the plan's minMember and queue, every pod bound to a
fake NPU node and Running, and on each pod the environment the operator made, which the launcher
reads (``build_spec``, what ``resumable launch --dry-run`` prints) without a problem and with ranks,
addresses and ports that agree across pods.

Shared by the render test (tests/manifests/test_render_apiserver.py: the printed kubectl lines) and
the Pulumi tests (tests/cluster/test_pulumi_*.py: plain ``pulumi up``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
import yaml

from resumable import constants as C
from resumable.plan.model import JobPlan
from resumable.runtime import installed
from resumable.runtime.launch import LaunchSpec, build_spec

Obj = Dict[str, Any]
#: the operator's replica-type label on the pods it makes (kubeflow/common replica-type label,
#: MC:@v7.3.0 component/ascend-operator/pkg/controllers/v1/pod.go createNewPod: common labels)
REPLICA_TYPE_LABELS = ("training.kubeflow.org/replica-type", "replica-type")
REPLICA_INDEX_LABELS = ("training.kubeflow.org/replica-index", "replica-index")
#: the API server's warning for a repeated env name (k8s.io/kubernetes v1.28 pkg/api/pod/warnings.go)
DUPLICATE_ENV_WARNING = "hides previous definition"


class Kube:
    """kubectl against one cluster (a tools/controlplane.py ControlPlane)."""

    def __init__(self, plane: Any) -> None:
        self.plane = plane

    def get(self, *args: str) -> Any:
        return self.plane.get_json(*args)


def job_pods(kube: Kube, job: JobPlan) -> List[Obj]:
    pods: List[Obj] = kube.get("pods", "-n", job.namespace)["items"]
    return [p for p in pods if _owned_by_job(p, job)]


def _owned_by_job(pod: Obj, job: JobPlan) -> bool:
    labels = pod["metadata"].get("labels") or {}
    owners = pod["metadata"].get("ownerReferences") or []
    return any(o.get("name") == job.name for o in owners) or labels.get("job-name") == job.name


def expected_pods(job: JobPlan) -> int:
    return sum(r.replicas for r in job.replicas)


def wait_running(kube: Kube, job: JobPlan, timeout: float = 240, runner_log: Optional[Path] = None) -> List[Obj]:
    """The job's pods once every one is bound and Running; the test fails naming what is missing
    (the job's conditions, the PodGroup's, the pods' phases, the end of the runner's log)."""
    deadline = time.monotonic() + timeout
    pods: List[Obj] = []
    while time.monotonic() < deadline:
        pods = job_pods(kube, job)
        running = [p for p in pods if p["spec"].get("nodeName") and (p.get("status") or {}).get("phase") == "Running"]
        if len(pods) == expected_pods(job) and len(running) == len(pods):
            return pods
        time.sleep(1)
    why = explain(kube, job, runner_log)
    pytest.fail(f"{job.kind} {job.namespace}/{job.name}: not all pods Running in {timeout:.0f} s\n{why}")


def explain(kube: Kube, job: JobPlan, runner_log: Optional[Path] = None) -> str:
    lines: List[str] = []
    resource = "ascendjob" if job.kind == C.ASCENDJOB_KIND else "jobs.batch.volcano.sh"
    done = kube.plane.kubectl("get", resource, job.name, "-n", job.namespace, "-o", "json", check=False)
    if done.returncode == 0:
        lines.append("job status: " + json.dumps(json.loads(done.stdout).get("status"), indent=None)[:2000])
    for group in kube.get("podgroups.scheduling.volcano.sh", "-n", job.namespace)["items"]:
        lines.append(f"podgroup {group['metadata']['name']}: {json.dumps(group.get('status'))[:800]}")
    for pod in job_pods(kube, job):
        status = pod.get("status") or {}
        lines.append(f"pod {pod['metadata']['name']}: node={pod['spec'].get('nodeName')} phase={status.get('phase')}")
    events = kube.plane.kubectl("get", "events", "-n", job.namespace, "--sort-by=.lastTimestamp", check=False).stdout
    lines.append("events:\n" + "\n".join(events.splitlines()[-15:]))
    if runner_log is not None and runner_log.exists():
        lines.append("podrunner:\n" + "\n".join(runner_log.read_text(errors="replace").splitlines()[-15:]))
    return "\n".join(lines)


def pod_group(kube: Kube, job: JobPlan) -> Obj:
    """The job's PodGroup (the operator names it after the AscendJob; Volcano's controller after the
    Volcano Job and its UID), found by its owner."""
    groups = kube.get("podgroups.scheduling.volcano.sh", "-n", job.namespace)["items"]
    owned = [g for g in groups if any(o.get("name") == job.name for o in g["metadata"].get("ownerReferences") or [])]
    assert len(owned) == 1, f"{job.name}: PodGroups {[g['metadata']['name'] for g in groups]}"
    group: Obj = owned[0]
    return group


def check_scheduling(kube: Kube, job: JobPlan, pods: List[Obj], npu_nodes: List[str]) -> None:
    """PodGroup minMember and queue as planned; every pod on an NPU node, one pod per node."""
    group = pod_group(kube, job)
    assert group["spec"]["minMember"] == job.min_available, group["spec"]
    assert group["spec"]["queue"] == job.queue, group["spec"]
    nodes = [p["spec"]["nodeName"] for p in pods]
    assert set(nodes) <= set(npu_nodes), f"pods on {nodes}, NPU nodes {npu_nodes}"
    with_npus = [p for p in pods if container_npus(ascend_container(p))]
    assert len({p["spec"]["nodeName"] for p in with_npus}) == len(with_npus), "two NPU pods share a node"


def ascend_container(pod: Obj) -> Obj:
    (container,) = [c for c in pod["spec"]["containers"] if c["name"] == C.CONTAINER_NAME]
    found: Obj = container
    return found


def container_npus(container: Obj) -> int:
    requests = (container.get("resources") or {}).get("requests") or {}
    return sum(int(v) for k, v in requests.items() if k.startswith("huawei.com/"))


def replica_key(pod: Obj) -> Tuple[str, int]:
    labels = pod["metadata"].get("labels") or {}
    rtype = next((labels[k] for k in REPLICA_TYPE_LABELS if k in labels), "")
    index = next((labels[k] for k in REPLICA_INDEX_LABELS if k in labels), "0")
    return rtype.capitalize(), int(index)


def pod_env(pod: Obj) -> Dict[str, str]:
    """The ascend container's environment as the container sees it: literal values, and the
    downward-API fields the pods use resolved from the pod (status.podIP, status.hostIP)."""
    status = pod.get("status") or {}
    fields = {"status.podIP": status.get("podIP", ""), "status.hostIP": status.get("hostIP", "")}
    fields.update({"metadata.name": pod["metadata"]["name"], "metadata.namespace": pod["metadata"]["namespace"]})
    env: Dict[str, str] = {}
    for item in ascend_container(pod).get("env") or []:
        if "value" in item:
            env[item["name"]] = item["value"]
        else:
            ref = ((item.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath", "")
            env[item["name"]] = fields.get(ref, "")
    return env


def check_no_duplicate_env(pods: List[Obj]) -> None:
    for pod in pods:
        names = [e["name"] for e in ascend_container(pod).get("env") or []]
        repeated = sorted({n for n in names if names.count(n) > 1})
        assert not repeated, f"{pod['metadata']['name']}: env {repeated} defined more than once"


def check_operator_env(job: JobPlan, pods: List[Obj]) -> None:
    """What the plan says the Ascend Operator injects (``JobPlan.operator_env``, resumable/operatorenv.py,
    which the render leaves out of the pod template) is what the real operator put on every pod, with
    the same value (for HIGH_AVAILABILITY the same items; for MS_ENABLE_TFT, quoted up to 7.3.x)."""
    for pod in pods:
        env = pod_env(pod)
        for var in job.operator_env:
            got = env.get(var.name)
            assert got is not None, f"{pod['metadata']['name']}: the operator did not inject {var.name}"
            assert var.value is None or _same(var.name, got, var.value), (pod["metadata"]["name"], var.name, got)


def _same(name: str, got: str, planned: str) -> bool:
    if name == C.ENV_HIGH_AVAILABILITY:
        return {i.strip() for i in got.split(",") if i.strip()} == {i.strip() for i in planned.split(",") if i.strip()}
    return got == planned


def launch_specs(
    job: JobPlan, pods: List[Obj], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Dict[Tuple[str, int], LaunchSpec]:
    """``build_spec`` (what ``resumable launch --dry-run`` prints) on every pod with its real env, in
    an image that has what the plan installs."""
    lib = tmp_path / "libtaskd.so"
    lib.write_text("")
    run_py = tmp_path / "run.py"
    run_py.write_text("%s\nimport os\n" % (job.image.runpy_patch or ""))
    monkeypatch.setattr(installed, "find_command", lambda name: "/usr/local/bin/" + name)
    monkeypatch.setattr(installed, "script_python", lambda exe: None)
    monkeypatch.setattr(installed, "libtaskd_path", lambda: str(lib))
    monkeypatch.setattr(installed, "torch_run_py", lambda: str(run_py))
    monkeypatch.setattr(installed, "package_dir", lambda name: str(tmp_path))
    return {replica_key(p): build_spec(job, pod_env(p), (), str(tmp_path / "logs")) for p in pods}


def option(command: List[str], name: str) -> str:
    (value,) = [a.split("=", 1)[1] for a in command if a.startswith(name + "=")]
    return value


def check_launch(
    job: JobPlan, pods: List[Obj], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, service_ip: str
) -> None:
    """On every pod: nothing missing, no size the plan disagrees with, node ranks 0..n-1 once each, one
    rendezvous address (the leader's Service), msrun workers only where there are NPUs, the TaskD
    Manager once, and the MindIO controller address each rank connects to."""
    specs = launch_specs(job, pods, tmp_path, monkeypatch)
    by_key = {replica_key(p): p for p in pods}
    ips = {key: (pod.get("status") or {}).get("podIP", "") for key, pod in by_key.items()}
    nodes_total = len(pods)
    ttp_port = job.launcher.ttp_port
    ranks: List[int] = []
    managers = 0
    for key, spec in specs.items():
        rtype, _ = key
        assert spec.problems == [], (key, spec.problems)
        assert not [w for w in spec.warnings if "from the Ascend Operator" in w], spec.warnings
        assert not [w for w in spec.warnings if "differs from the plan" in w], spec.warnings
        rank = int(option(spec.command, "--node_rank"))
        ranks.append(rank)
        managers += spec.manager is not None
        container = ascend_container(by_key[key])
        npus = container_npus(container)
        declared = {p["name"]: p["containerPort"] for p in container.get("ports") or []}
        assert option(spec.command, "--master_port") == str(declared[C.ASCENDJOB_PORT_NAME])
        if job.launcher.launcher == "msrun":
            assert int(option(spec.command, "--local_worker_num")) == npus > 0, "msrun workers need NPUs here"
            assert int(option(spec.command, "--worker_num")) == nodes_total * npus
            leader = ips[("Scheduler", 0)]
            assert option(spec.command, "--master_addr") == (leader if rtype == "Scheduler" else service_ip)
            if ttp_port is not None:
                assert spec.env["MS_TFT_IP"] == option(spec.command, "--master_addr")
                assert spec.env["MS_TFT_PORT"] == str(ttp_port)
        else:
            rank0_hosts_manager = rank == 0 and job.launcher.taskd_manager.where == "rank0"
            assert option(spec.command, "--master_addr") == (ips[key] if rank0_hosts_manager else service_ip)
            assert option(spec.command, "--nproc_per_node") == str(npus)
            if ttp_port is not None:
                assert spec.env["TTP_ADDR"] == (ips[key] if rank == 0 else service_ip)
            else:
                assert "TTP_ADDR" not in spec.env
    assert sorted(ranks) == list(range(nodes_total)), "node ranks collide or leave a gap"
    assert managers == (1 if job.launcher.taskd_manager.enabled else 0)


def leader_service_ip(kube: Kube, job: JobPlan) -> str:
    """The cluster IP of the Service the operator makes for the job's leader (Master/Scheduler)."""
    services = kube.get("services", "-n", job.namespace)["items"]
    owned = [s for s in services if any(o.get("name") == job.name for o in s["metadata"].get("ownerReferences") or [])]
    leaders = [s for s in owned if "master" in s["metadata"]["name"] or "scheduler" in s["metadata"]["name"]]
    assert leaders, f"no leader Service of {job.name}: {[s['metadata']['name'] for s in services]}"
    return str(leaders[0]["spec"]["clusterIP"])


def provision_claims(plane: Any, rendered: Path) -> List[str]:
    """Play the storage provisioner the profile names (no CSI driver runs here): for every claim of the
    rendered storage layer on a storage class, the class (late binding, as ceph-csi installs it) and a
    volume pre-bound to the claim, so the job's pods can be scheduled. A claim the render binds to its
    own volume (NFS) is left alone. Returns the claims provisioned."""
    docs = [
        d for path in sorted((rendered / "3-storage").rglob("*.yaml")) for d in yaml.safe_load_all(path.read_text())
    ]
    claims = [d for d in docs if d and d["kind"] == "PersistentVolumeClaim" and not d["spec"].get("volumeName")]
    objects: List[Obj] = []
    for cls in sorted({c["spec"]["storageClassName"] for c in claims}):
        objects.append({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": cls},
                        "provisioner": "test.invalid/none", "volumeBindingMode": "WaitForFirstConsumer"})  # fmt: skip
    for claim in claims:
        meta = claim["metadata"]
        objects.append({
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": f"provisioned-{meta['namespace']}-{meta['name']}"},
            "spec": {
                "capacity": {"storage": claim["spec"]["resources"]["requests"]["storage"]},
                "accessModes": claim["spec"]["accessModes"],
                "storageClassName": claim["spec"]["storageClassName"],
                "hostPath": {"path": f"/provisioned/{meta['namespace']}/{meta['name']}"},
                "claimRef": {"namespace": meta["namespace"], "name": meta["name"]},
            },
        })  # fmt: skip
    if objects:
        plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))
    return [c["metadata"]["name"] for c in claims]


def check_jobs_run(
    plane: Any, jobs: List[JobPlan], tmp_path: Optional[Path] = None, monkeypatch: Optional[pytest.MonkeyPatch] = None
) -> None:
    """Every job of ``jobs`` as the real Ascend Operator and Volcano make it: pods Running
    (:func:`wait_running`), scheduled as planned, no env name twice, the operator's env as planned; with
    ``tmp_path`` and ``monkeypatch``, what the launcher reads on each pod too (:func:`check_launch`)."""
    kube = Kube(plane)
    npu_nodes = [n["metadata"]["name"] for n in plane.get_json("nodes")["items"] if n["metadata"]["name"] != "master-0"]
    for job in jobs:
        pods = wait_running(kube, job, runner_log=plane.workdir / "runner" / "podrunner.log")
        check_scheduling(kube, job, pods, npu_nodes)
        check_no_duplicate_env(pods)
        check_operator_env(job, pods)
        if tmp_path is not None and monkeypatch is not None:
            (tmp_path / job.name).mkdir()
            check_launch(job, pods, tmp_path / job.name, monkeypatch, leader_service_ip(kube, job))
