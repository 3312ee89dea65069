"""Pod-level rescheduling drilled on a control plane where the real components decide: the Ascend
Operator, Volcano's scheduler with Huawei's NPU plugin built in its tree (tools/source_tools.py
volcano_npu) and ClusterD, each run by tools/podrunner.py from the rendered Deployments. What cannot
run here, the device plugin of each NPU node, is the double tests/fixtures/mindcluster/device_plugin.py.

The shipped example ``pytorch-pod-rescheduling`` (MindCluster 7.3.0, labels ``fault-retry-times: 3``,
``pod-rescheduling: on``, ``fault-scheduling: grace``) is applied with the kubectl lines ``resumable
render`` prints. A pod then fails as a kubelet reports a container that exited 1 under
``restartPolicy: Never`` (the job's replicas have it): phase Failed, the container terminated with
exit code 1, not ready. That is the fault the plugin reads (isFailedTask:
MC:@v7.3.0 component/ascend-for-volcano/internal/rescheduling/job.go:407-428) and the Ascend
Operator counts (reconcileWithFailed: MC:@v7.3.0 component/ascend-operator/pkg/controllers/v1/job.go:129-163).

What the sources say happens, and what is asserted:

- the plugin keeps a retry count per job, starting at ``fault-retry-times`` and taking one off per
  restart for a failed pod (internal/rescheduling/reschedule.go:134-143, 575-578), written to the
  ConfigMap ``volcano-system/vcjob-fault-npu-cm`` key ``remain-retry-times`` under
  ``<ns>/<job>-<uid>``, where the operator reads it (ascend-operator unconditaional_retry.go:40-58,
  consts.go:94-100);
- while retries remain, the operator marks the job Restarting instead of Failed (job.go:150-161) and
  the job's pods come back, every one Running on an NPU node;
- the restart is recorded with its reason in ``mindx-dl/job-reschedule-reason``;
- when none remain, the job ends Failed with "remain retry times is 0" in its condition (job.go:153-155).
  The operator records that message as an event too (job.go:183), but by then the job has had more
  events than client-go lets through for one object (see the test), so the condition is where the
  reason shows.

The time from the fault to every pod Running again is printed beside the plan's budget term for it
(``budget`` level ``pod``, term ``T1 reschedule``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
import yaml
from conftest import EXAMPLES, ROOT

from resumable.api import load_plan
from resumable.plan.model import JobPlan

from .fixtures import StartPlane, controlplane, plan_nodes
from .jobpods import Kube, job_pods, provision_claims, wait_running

sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "mindcluster"))
import device_plugin

Obj = Dict[str, Any]
EXAMPLE = EXAMPLES / "pytorch-pod-rescheduling.yaml"
#: the operator's rescheduling ConfigMap (MC:@v7.3.0 component/ascend-operator/pkg/controllers/v1/consts.go:94-100)
RETRY_CM = ("volcano-system", "vcjob-fault-npu-cm", "remain-retry-times")
#: where the plugin records why it rescheduled a job (MC:@v7.3.0 component/ascend-for-volcano
#: internal/rescheduling/type.go, RescheduleReason ConfigMap)
REASON_CM = ("mindx-dl", "job-reschedule-reason")
BUDGET_LEVEL, BUDGET_TERM = "pod", "T1 reschedule"
#: a spare NPU node besides the job's, so a job can move off a lost node
SPARE_NODES = 1


@dataclass
class Drill:
    """A plane with the example's job Running."""

    plane: controlplane.ControlPlane
    kube: Kube
    job: JobPlan
    budget_seconds: float
    #: the plan's ``nodes`` (npu_resource, npus_per_node)
    plan_nodes: Obj
    #: what the profile declares: ``recovery.fault_retry_times`` of its job
    retries: int

    def pods(self) -> List[Obj]:
        return job_pods(self.kube, self.job)

    def ascendjob(self) -> Obj:
        found: Obj = self.plane.get_json("ascendjob", self.job.name, "-n", self.job.namespace)
        return found


def printed_apply_lines(profile: Path, out: Path) -> List[List[str]]:
    from manifests.test_render_apiserver import printed_sections

    done = subprocess.run([sys.executable, "-m", "resumable", "render", str(profile), "--out", str(out)],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return printed_sections(done.stdout + done.stderr)["apply, in this order:"]


def budget_term(plan_json: Obj, job: str) -> float:
    """The plan's seconds for re-scheduling a pod (``budget.ladder`` level pod, term T1)."""
    (found,) = [j for j in plan_json["jobs"] if j["name"] == job]
    (level,) = [lv for lv in found["budget"]["ladder"] if lv["level"] == BUDGET_LEVEL]
    (term,) = [t for t in level["terms"] if t["name"] == BUDGET_TERM]
    return float(term["seconds"])


def start_drill(start_plane: StartPlane, tmp_path: Path, profile: Path = EXAMPLE) -> Drill:
    """The example's nodes and a spare, their device plugins' reports, the rendered stack and job
    applied as printed; returns once every pod of the job is Running."""
    plan_json = controlplane.plan_json(profile)
    nodes = plan_nodes(profile, controlplane.nodes_for_jobs(plan_json) + SPARE_NODES)
    plane = start_plane(nodes)
    npu = plan_json["nodes"]
    compute = [n.name for n in nodes if n.npus]
    device_plugin.report(plane, compute, str(npu["npu_resource"]), int(npu["npus_per_node"]))
    out = tmp_path / "rendered"
    lines = printed_apply_lines(profile, out)
    provision_claims(plane, out)
    for argv in lines:
        assert argv[0] == "kubectl"
        plane.kubectl(*argv[1:], timeout=400)
    (job,) = load_plan(str(profile)).jobs
    kube = Kube(plane)
    wait_running(kube, job, timeout=300, runner_log=plane.workdir / "runner" / "podrunner.log")
    (declared,) = yaml.safe_load(profile.read_text())["jobs"]
    return Drill(
        plane, kube, job, budget_term(plan_json, job.name), npu, int(declared["recovery"]["fault_retry_times"])
    )


def fail_pod(drill: Drill, pod: Obj, exit_code: int = 1) -> None:
    """Report ``pod`` Failed as the kubelet does when its container exits ``exit_code`` under
    restartPolicy Never (k8s.io/kubernetes v1.28 pkg/kubelet/kubelet_pods.go getPhase: every container
    terminated and one failed -> PodFailed; the container's state terminated, not ready)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    statuses = [
        {
            "name": c["name"],
            "image": c["image"],
            "imageID": "",
            "ready": False,
            "restartCount": 0,
            "started": False,
            "state": {"terminated": {"exitCode": exit_code, "reason": "Error", "startedAt": now, "finishedAt": now}},
        }
        for c in pod["spec"]["containers"]
    ]
    status = {
        "phase": "Failed",
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "PodFailed", "lastTransitionTime": now},
            {"type": "ContainersReady", "status": "False", "reason": "PodFailed", "lastTransitionTime": now},
        ],
        "containerStatuses": statuses,
    }
    meta = pod["metadata"]
    drill.plane.kubectl("patch", "pod", meta["name"], "-n", meta["namespace"], "--subresource=status",
                        "--type=merge", "-p", json.dumps({"status": status}))  # fmt: skip


def remain_retry_times(drill: Drill) -> Optional[int]:
    """The plugin's count for the job in vcjob-fault-npu-cm, or None when it has none."""
    namespace, name, key = RETRY_CM
    done = drill.plane.kubectl("get", "configmap", name, "-n", namespace, "-o", "json", check=False)
    if done.returncode != 0:
        return None
    data = (json.loads(done.stdout).get("data") or {}).get(key) or "{}"
    meta = drill.ascendjob()["metadata"]
    entry = json.loads(data).get(f"{meta['namespace']}/{meta['name']}-{meta['uid']}")
    return None if entry is None else int(entry["Times"])


def reschedule_reason(drill: Drill) -> str:
    namespace, name = REASON_CM
    done = drill.plane.kubectl("get", "configmap", name, "-n", namespace, "-o", "json", check=False)
    return done.stdout if done.returncode == 0 else ""


def wait_back(drill: Drill, failed_uid: str, timeout: float = 300) -> Tuple[float, List[Obj]]:
    """Seconds until the failed pod is gone and every pod of the job is Running again; the pods."""
    started = time.monotonic()
    deadline = started + timeout
    while time.monotonic() < deadline:
        pods = drill.pods()
        uids = {p["metadata"]["uid"] for p in pods}
        running = [p for p in pods if p["spec"].get("nodeName") and (p.get("status") or {}).get("phase") == "Running"]
        if failed_uid not in uids and len(running) == len(pods) == sum(r.replicas for r in drill.job.replicas):
            return time.monotonic() - started, pods
        if any(c["type"] == "Failed" and c["status"] == "True" for c in conditions(drill)):
            from .jobpods import explain

            pytest.fail(f"the job ended Failed instead of coming back\n{explain(drill.kube, drill.job)}")
        time.sleep(0.5)
    from .jobpods import explain

    pytest.fail(f"the job did not come back in {timeout:.0f} s\n{explain(drill.kube, drill.job)}")


def conditions(drill: Drill) -> List[Obj]:
    found: List[Obj] = (drill.ascendjob().get("status") or {}).get("conditions") or []
    return found


def wait_failed(drill: Drill, timeout: float = 180) -> Obj:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for condition in conditions(drill):
            if condition["type"] == "Failed" and condition["status"] == "True":
                return condition
        time.sleep(1)
    from .jobpods import explain

    pytest.fail(f"the job did not end Failed in {timeout:.0f} s\n{explain(drill.kube, drill.job)}")


def check_npus_allocated(drill: Drill, pods: List[Obj]) -> None:
    """Every pod carries the NPUs the plugin chose for it on its node (SetNPUTopologyToPodFn:
    MC:@v7.3.0 component/ascend-for-volcano/internal/npu/base/task.go:59-73, the annotation named
    after the resource, ``Ascend910-0,...``): the devices the device plugin reported, as many as the
    pod requests. A scheduler without the plugin writes none."""
    resource = str(drill.plan_nodes["npu_resource"])
    chip = resource.split("/", 1)[1]
    for pod in pods:
        chosen = (pod["metadata"].get("annotations") or {}).get(resource, "")
        devices = [d for d in chosen.split(",") if d]
        assert len(devices) == int(drill.plan_nodes["npus_per_node"]), (pod["metadata"]["name"], chosen)
        assert all(d.startswith(chip + "-") for d in devices), chosen


def worker(pods: List[Obj]) -> Obj:
    """A pod that is not rank 0 (the operator's Worker replica)."""
    (found,) = [p for p in pods if "worker" in p["metadata"]["name"]]
    return found


def test_a_failed_pod_is_rescheduled_until_the_retries_are_used_up(start_plane: StartPlane, tmp_path: Path) -> None:
    drill = start_drill(start_plane, tmp_path)
    check_npus_allocated(drill, drill.pods())
    retries = drill.retries
    for attempt in range(1, retries + 1):
        pods = drill.pods()
        victim = worker(pods)
        fail_pod(drill, victim)
        seconds, back = wait_back(drill, victim["metadata"]["uid"])
        check_npus_allocated(drill, back)
        kept = {p["metadata"]["uid"] for p in pods if p is not victim}
        assert kept <= {p["metadata"]["uid"] for p in back}, "a pod that did not fail was recreated"
        print(
            f"\nreschedule {attempt}/{retries}: every pod Running again {seconds:.1f} s after the fault "
            f"(plan budget {BUDGET_LEVEL}/{BUDGET_TERM}: {drill.budget_seconds:.1f} s)"
        )
        assert seconds <= drill.budget_seconds
        assert remain_retry_times(drill) == retries - attempt
    assert drill.job.name in reschedule_reason(drill)
    pods = drill.pods()
    fail_pod(drill, worker(pods))
    failed = wait_failed(drill)
    assert "remain retry times is 0" in failed["message"], failed
    # The operator records the same message as an event (job.go:183), but by now the job has had more
    # events than client-go's spam filter lets through for one object (burst 25, then one per 5
    # minutes: k8s.io/client-go v0.25.13 tools/record/events_cache.go:48-49), and in this drill that
    # event never appears: the condition (kubectl describe ascendjob) is where a user sees the reason.
    print(f"\nthe job's events at the end:\n{job_events(drill, 'remain retry times is 0', timeout=5)}")


def job_events(drill: Drill, wanted: str, timeout: float = 60) -> str:
    """The job's events as ``kubectl get events`` shows them, once one says ``wanted`` (the operator
    records them asynchronously) or the timeout passes."""
    deadline = time.monotonic() + timeout
    shown = ""
    while time.monotonic() < deadline:
        shown = drill.plane.kubectl("get", "events", "-n", drill.job.namespace,
                                    f"--field-selector=involvedObject.name={drill.job.name}").stdout  # fmt: skip
        if wanted in shown:
            break
        time.sleep(1)
    return shown


def lose_node(drill: Drill, node: str) -> None:
    """``node`` goes NotReady as its kubelet reports a dead container runtime: Ready False, reason
    KubeletNotReady, "container runtime is down" (k8s.io/kubernetes v1.28
    pkg/kubelet/nodestatus/setters.go ReadyCondition). KWOK is told to leave the node first (its
    annotation removed) so its node stages do not report it Ready again; KWOK v0.8.0 keeps renewing
    the node's lease (its lease controller does not drop the node), so the lease alone would never
    lapse here, and the node lifecycle controller taints the node not-ready from the condition."""
    drill.plane.kubectl("annotate", "node", node, f"{controlplane.KWOK_ANNOTATION}-")
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    ready = {
        "type": "Ready",
        "status": "False",
        "reason": "KubeletNotReady",
        "message": "container runtime is down",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    conditions = [c for c in drill.plane.get_json("node", node)["status"]["conditions"] if c["type"] != "Ready"]
    drill.plane.kubectl("patch", "node", node, "--subresource=status", "--type=merge",
                        "-p", json.dumps({"status": {"conditions": [*conditions, ready]}}))  # fmt: skip


def node_ready(drill: Drill, node: str) -> str:
    conditions = drill.plane.get_json("node", node)["status"].get("conditions") or []
    return next((c["status"] for c in conditions if c["type"] == "Ready"), "")


def test_a_pod_on_a_lost_node_moves_to_another_node(start_plane: StartPlane, tmp_path: Path) -> None:
    """A node of the job goes NotReady: the plugin finds the job's pod on a node not in its session
    (not Ready: plugin/node.go getNeedInitNodeList skips it) and restarts the job's faulty pod
    (internal/rescheduling/reschedule.go:982-986, NodeUnhealthy); the replacement runs on another
    NPU node, and a node fault does not use up a retry (only a failed pod does: reschedule.go:575-578)."""
    drill = start_drill(start_plane, tmp_path)
    before = drill.pods()
    victim = worker(before)
    lost = victim["spec"]["nodeName"]
    lose_node(drill, lost)
    seconds, back = wait_back(drill, victim["metadata"]["uid"], timeout=300)
    assert node_ready(drill, lost) == "False"
    nodes = [p["spec"]["nodeName"] for p in back]
    assert lost not in nodes, f"a pod went back to the lost node {lost}: {nodes}"
    kept = {p["metadata"]["uid"] for p in before if p is not victim}
    assert kept <= {p["metadata"]["uid"] for p in back}, "a pod on a healthy node was recreated"
    check_npus_allocated(drill, back)
    # the plugin's count for the job starts at fault-retry-times when the job first faults
    # (reschedule.go:134-143) and a node fault takes none off
    assert remain_retry_times(drill) == drill.retries
    print(
        f"\nnode {lost} NotReady: every pod Running again {seconds:.1f} s after "
        f"(plan budget {BUDGET_LEVEL}/{BUDGET_TERM}: {drill.budget_seconds:.1f} s)"
    )
