#!/usr/bin/env python3
"""The pod-level rescheduling drill: fault a running job on a cluster where MindCluster's deciders run
(the Ascend Operator, Volcano with Huawei's NPU plugin, ClusterD: ``make sandbox`` with a 7.3.0
profile), then time how long until every pod of the job is Running again, and print that beside the
plan's budget term for it.

    python3 tools/drill.py --kubeconfig DIR/kubeconfig --profile PROFILE [--job NAME] [--fault pod|node]

``--fault pod`` (the default) reports a worker pod Failed as a kubelet does when its container
exits 1 under ``restartPolicy: Never`` (k8s.io/kubernetes v1.28 pkg/kubelet/kubelet_pods.go getPhase:
phase Failed, the container terminated, not ready): the plugin deletes that pod, the operator makes it
again, and one of the job's ``fault-retry-times`` is used (MC:@v7.3.0 component/ascend-for-volcano
internal/rescheduling/reschedule.go:575-578; the count is in ``volcano-system/vcjob-fault-npu-cm``).
``--fault node`` makes that pod's node NotReady as its kubelet reports a dead container runtime
(Ready False, KubeletNotReady): the plugin moves the pod to another node, using no retry. Only a
fake node of a local control plane can be faulted this way (KWOK is told to leave it first).

Exit 0 when the job came back, 1 when it did not (its conditions say why, e.g. no retry left), 2 on
a mistake in what was asked. ``tools/sandbox.py drill`` runs it against the sandbox; the cluster test
tests/cluster/test_reschedule.py drives the same functions. Standard library only (kubectl is the
one ``make tools`` built).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Protocol, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
import controlplane
import go_tools

Obj = Dict[str, Any]
#: the operator's rescheduling ConfigMap, written by the plugin (MC:@v7.3.0 component/ascend-operator
#: pkg/controllers/v1/consts.go:94-100; ascend-for-volcano internal/rescheduling/type.go:36-39)
RETRY_CM = ("volcano-system", "vcjob-fault-npu-cm", "remain-retry-times")
#: where the plugin records why it rescheduled a job (internal/rescheduling/type.go:40-43)
REASON_CM = ("mindx-dl", "job-reschedule-reason")
#: the plan's budget term for a rescheduled pod (``budget.ladder`` level pod)
BUDGET_LEVEL, BUDGET_TERM = "pod", "T1 reschedule"
FAULTS = ("pod", "node")


class Cluster(Protocol):
    """What the drill asks of a cluster: tools/controlplane.py's ControlPlane, or :class:`Kubectl`."""

    def kubectl(
        self, *args: str, stdin: Optional[str] = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]: ...

    def get_json(self, *args: str) -> Any: ...


class DrillError(Exception):
    """A mistake in what was asked (exit 2): the message names the input and the fix."""


@dataclass
class Kubectl:
    """kubectl (the one ``make tools`` built) with a kubeconfig."""

    kubeconfig: Path

    def kubectl(
        self, *args: str, stdin: Optional[str] = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        binary = go_tools.bin_dirs([go_tools.TOOLS["kubernetes"]])[0] / "kubectl"
        env = dict(os.environ, KUBECONFIG=str(self.kubeconfig))
        done = subprocess.run([str(binary), *args], input=stdin, capture_output=True, text=True, env=env,
                              timeout=timeout, check=False)  # fmt: skip
        if check and done.returncode != 0:
            raise controlplane.ControlPlaneError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
        return done

    def get_json(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)


@dataclass(frozen=True)
class JobRef:
    """A job of the plan: its name, namespace, pods and the plan's budget for a rescheduled pod."""

    name: str
    namespace: str
    pods: int
    budget_seconds: float


def job_of(plan: Obj, name: Optional[str]) -> JobRef:
    """The plan's job ``name`` (the only one when None); DrillError when there is no such job."""
    jobs = {str(j["name"]): j for j in plan.get("jobs") or []}
    if name is None and len(jobs) == 1:
        name = next(iter(jobs))
    if name not in jobs:
        raise DrillError(
            f"--job {name}: the profile's jobs are {', '.join(jobs) or 'none'}; name one of them with --job"
        )
    job = jobs[name]
    pods = sum(int(r.get("replicas") or 0) for r in job.get("replicas") or [])
    return JobRef(name, str(job["namespace"]), pods, budget_term(job))


def budget_term(job: Obj) -> float:
    """The plan's seconds for re-scheduling a pod (``budget.ladder`` level pod, term T1)."""
    for level in (job.get("budget") or {}).get("ladder") or []:
        if level["level"] == BUDGET_LEVEL:
            for term in level["terms"]:
                if term["name"] == BUDGET_TERM:
                    return float(term["seconds"])
    raise DrillError(f"job {job['name']}: its plan has no {BUDGET_LEVEL}-level rescheduling budget")


def job_pods(cluster: Cluster, job: JobRef) -> List[Obj]:
    """The job's pods (the operator's: owned by the job)."""
    pods = cluster.get_json("pods", "-n", job.namespace)["items"]
    return [p for p in pods if any(o.get("name") == job.name for o in p["metadata"].get("ownerReferences") or [])]


def running(pod: Obj) -> bool:
    return bool(pod["spec"].get("nodeName")) and (pod.get("status") or {}).get("phase") == "Running"


def worker(pods: List[Obj]) -> Obj:
    """A pod that is not rank 0 (the operator's Worker replica, named ``<job>-worker-<i>``)."""
    workers = [p for p in pods if "-worker-" in p["metadata"]["name"]]
    if not workers:
        raise DrillError("the job has no worker pod to fault (a job of one pod: every pod is rank 0)")
    return workers[0]


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def fail_pod(cluster: Cluster, pod: Obj, exit_code: int = 1) -> None:
    """Report ``pod`` Failed as the kubelet does when its container exits ``exit_code`` under
    restartPolicy Never (module docstring)."""
    stamp = now()
    statuses = [
        {
            "name": c["name"],
            "image": c["image"],
            "imageID": "",
            "ready": False,
            "restartCount": 0,
            "started": False,
            "state": {
                "terminated": {"exitCode": exit_code, "reason": "Error", "startedAt": stamp, "finishedAt": stamp}
            },
        }
        for c in pod["spec"]["containers"]
    ]
    status = {
        "phase": "Failed",
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "PodFailed", "lastTransitionTime": stamp},
            {"type": "ContainersReady", "status": "False", "reason": "PodFailed", "lastTransitionTime": stamp},
        ],
        "containerStatuses": statuses,
    }
    meta = pod["metadata"]
    cluster.kubectl("patch", "pod", meta["name"], "-n", meta["namespace"], "--subresource=status",
                    "--type=merge", "-p", json.dumps({"status": status}))  # fmt: skip


def lose_node(cluster: Cluster, node: str) -> None:
    """``node`` goes NotReady as its kubelet reports a dead container runtime: Ready False, reason
    KubeletNotReady, "container runtime is down" (k8s.io/kubernetes v1.28
    pkg/kubelet/nodestatus/setters.go ReadyCondition). KWOK is told to leave the node first (its
    annotation removed) so its node stages do not report it Ready again; KWOK v0.8.0 keeps renewing
    the node's lease (its lease controller does not drop the node), so a lapsing lease cannot be the
    fault here."""
    cluster.kubectl("annotate", "node", node, f"{controlplane.KWOK_ANNOTATION}-")
    stamp = now()
    ready = {
        "type": "Ready",
        "status": "False",
        "reason": "KubeletNotReady",
        "message": "container runtime is down",
        "lastHeartbeatTime": stamp,
        "lastTransitionTime": stamp,
    }
    conditions = [c for c in cluster.get_json("node", node)["status"]["conditions"] if c["type"] != "Ready"]
    cluster.kubectl("patch", "node", node, "--subresource=status", "--type=merge",
                    "-p", json.dumps({"status": {"conditions": [*conditions, ready]}}))  # fmt: skip


def job_conditions(cluster: Cluster, job: JobRef) -> List[Obj]:
    found = cluster.get_json("ascendjob", job.name, "-n", job.namespace)
    conditions: List[Obj] = (found.get("status") or {}).get("conditions") or []
    return conditions


def failed_condition(cluster: Cluster, job: JobRef) -> Optional[Obj]:
    return next((c for c in job_conditions(cluster, job) if c["type"] == "Failed" and c["status"] == "True"), None)


def remain_retry_times(cluster: Cluster, job: JobRef) -> Optional[int]:
    """The plugin's count for the job in vcjob-fault-npu-cm (key ``<ns>/<job>-<uid>``: ascend-operator
    unconditaional_retry.go:53), or None when it has none."""
    namespace, name, key = RETRY_CM
    done = cluster.kubectl("get", "configmap", name, "-n", namespace, "-o", "json", check=False)
    if done.returncode != 0:
        return None
    data = (json.loads(done.stdout).get("data") or {}).get(key) or "{}"
    meta = cluster.get_json("ascendjob", job.name, "-n", job.namespace)["metadata"]
    entry = json.loads(data).get(f"{meta['namespace']}/{meta['name']}-{meta['uid']}")
    return None if entry is None else int(entry["Times"])


def reschedule_reason(cluster: Cluster) -> str:
    namespace, name = REASON_CM
    done = cluster.kubectl("get", "configmap", name, "-n", namespace, "-o", "json", check=False)
    return done.stdout if done.returncode == 0 else ""


@dataclass
class Outcome:
    """What became of the job after a fault: back (every pod Running, the faulted one replaced) in
    ``seconds``, or ended Failed (``failed`` holds the condition), or neither before the timeout."""

    back: bool
    seconds: float
    pods: List[Obj]
    failed: Optional[Obj] = None


def wait_back(cluster: Cluster, job: JobRef, faulted_uid: str, timeout: float = 300) -> Outcome:
    """Wait until the faulted pod is gone and every pod of the job is Running again, or the job ends
    Failed, or ``timeout`` seconds pass."""
    started = time.monotonic()
    pods: List[Obj] = []
    while time.monotonic() - started < timeout:
        pods = job_pods(cluster, job)
        uids = {p["metadata"]["uid"] for p in pods}
        if faulted_uid not in uids and len(pods) == job.pods and all(running(p) for p in pods):
            return Outcome(True, time.monotonic() - started, pods)
        failed = failed_condition(cluster, job)
        if failed is not None:
            return Outcome(False, time.monotonic() - started, pods, failed)
        time.sleep(0.5)
    return Outcome(False, time.monotonic() - started, pods)


def check_spare_node(cluster: Cluster, pods: List[Obj]) -> None:
    """DrillError unless a Ready node offering NPUs runs none of the job's pods: a gang-scheduled job
    that loses a node can only come back on another (Volcano admits the whole PodGroup or nothing)."""
    used = {p["spec"].get("nodeName") for p in pods}
    spare = [
        n["metadata"]["name"]
        for n in cluster.get_json("nodes")["items"]
        if n["metadata"]["name"] not in used
        and any(r.startswith("huawei.com/") and int(v) > 0 for r, v in (n["status"].get("capacity") or {}).items())
        and any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions") or [])
    ]
    if not spare:
        raise DrillError(
            "--fault node: no Ready NPU node runs none of the job's pods, so the job could not come back "
            "anywhere; start the sandbox with one NPU node more (make sandbox SANDBOX_NODES=<pods + 1>, "
            "or tools/sandbox.py up --compute-nodes)"
        )


def fault(cluster: Cluster, job: JobRef, kind: str) -> Tuple[Obj, Outcome]:
    """Fault a worker pod of the running ``job`` (``kind``: pod or node) and wait for the outcome;
    the faulted pod and the outcome. DrillError when the job is not running."""
    pods = job_pods(cluster, job)
    if len(pods) != job.pods or not all(running(p) for p in pods):
        raise DrillError(
            f"job {job.namespace}/{job.name} is not running ({len(pods)} of {job.pods} pods, "
            f"{sum(running(p) for p in pods)} Running): deploy it and wait until it runs "
            "(the sandbox prints the kubectl wait line), then drill"
        )
    victim = worker(pods)
    if kind == "node":
        check_spare_node(cluster, pods)
        lose_node(cluster, victim["spec"]["nodeName"])
    else:
        fail_pod(cluster, victim)
    return victim, wait_back(cluster, job, victim["metadata"]["uid"])


def report(job: JobRef, kind: str, victim: Obj, outcome: Outcome, retries: Optional[int]) -> List[str]:
    """What a user reads after the drill."""
    where = f"pod {victim['metadata']['name']}" if kind == "pod" else f"node {victim['spec']['nodeName']}"
    if outcome.back:
        nodes = ", ".join(f"{p['metadata']['name']} on {p['spec']['nodeName']}" for p in outcome.pods)
        return [
            f"drill: {where} faulted; every pod of {job.namespace}/{job.name} Running again in "
            f"{outcome.seconds:.1f} s (plan budget {BUDGET_LEVEL}/{BUDGET_TERM}: {job.budget_seconds:.1f} s)",
            f"drill: pods now {nodes}",
            f"drill: remain-retry-times {retries if retries is not None else 'not recorded'} "
            f"({RETRY_CM[0]}/{RETRY_CM[1]})",
        ]
    if outcome.failed is not None:
        return [f"drill: {where} faulted; the job ended Failed: {outcome.failed.get('message', '')}"]
    return [f"drill: {where} faulted; the job did not come back in {outcome.seconds:.0f} s"]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--kubeconfig", type=Path, required=True, help="the cluster's kubeconfig")
    parser.add_argument("--profile", type=Path, required=True, help="the profile the job was deployed from")
    parser.add_argument("--job", help="the job to fault (default: the profile's only job)")
    parser.add_argument("--fault", choices=FAULTS, default="pod")
    args = parser.parse_args(argv)
    try:
        if not args.kubeconfig.is_file():
            raise DrillError(
                f"--kubeconfig {args.kubeconfig}: no such file; give the cluster's (the sandbox's is DIR/kubeconfig)"
            )
        job = job_of(controlplane.plan_json(args.profile), args.job)
        cluster = Kubectl(args.kubeconfig)
        victim, outcome = fault(cluster, job, args.fault)
    except (DrillError, controlplane.UsageError, go_tools.ToolError) as exc:
        print(f"drill: {exc}", file=sys.stderr)
        return 2
    for line in report(job, args.fault, victim, outcome, remain_retry_times(cluster, job)):
        print(line)
    return 0 if outcome.back else 1


if __name__ == "__main__":
    sys.exit(main())
