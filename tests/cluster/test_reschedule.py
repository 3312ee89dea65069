"""Pod-level rescheduling drilled on a control plane where the real components decide: the Ascend
Operator, Volcano's scheduler with Huawei's NPU plugin built in its tree (tools/source_tools.py
volcano_npu) and ClusterD, each run by tools/podrunner.py (``--mindcluster``) from the rendered
Deployments. What cannot
run here, the device plugin of each NPU node (no NPU), is played for the rendered DaemonSet's pods by
its double, tools/device_plugin_double.py, as their ServiceAccount. The faults and the waiting are
tools/drill.py's, which ``tools/sandbox.py drill`` runs against the sandbox (the last test runs it).

The shipped example ``pytorch-pod-rescheduling`` (MindCluster 7.3.0, ``recovery.fault_retry_times:
3``, ``pod_rescheduling: true``, ``fault_scheduling: grace``) is applied with the kubectl lines
``resumable render`` prints, on the nodes its job needs and a spare. A pod then fails as a kubelet
reports a container that exited 1 under ``restartPolicy: Never`` (the job's replicas have it). That is
the fault the plugin reads (isFailedTask: MC:@v7.3.0 component/ascend-for-volcano
internal/rescheduling/job.go:407-428) and the Ascend Operator counts (reconcileWithFailed:
MC:@v7.3.0 component/ascend-operator/pkg/controllers/v1/job.go:129-163).

What the sources say happens, and what is asserted:

- the plugin allocates each pod's NPUs (the pod's ``huawei.com/Ascend910`` annotation:
  internal/npu/base/task.go:59-73);
- with ``pod-rescheduling: on`` only the failed pod is deleted and made again (the plugin's log says
  "<pod> not in , need force delete" for it alone), the other pod keeps running;
- the plugin keeps a retry count per job, starting at ``fault-retry-times`` and taking one off per
  restart for a failed pod (internal/rescheduling/reschedule.go:134-143, 575-578), written to the
  ConfigMap ``volcano-system/vcjob-fault-npu-cm`` key ``remain-retry-times`` under
  ``<ns>/<job>-<uid>``, where the operator reads it (ascend-operator unconditaional_retry.go:40-58,
  consts.go:94-100); a node fault takes none off;
- while retries remain, the operator marks the job Restarting instead of Failed (job.go:150-161) and
  the job's pods come back, every one Running on an NPU node;
- the restart is recorded with its reason in ``mindx-dl/job-reschedule-reason``;
- when none remain, the job ends Failed with "remain retry times is 0" in its condition (job.go:153-155).
  The operator records that message as an event too (job.go:183), but by then the job has had more
  events than client-go lets through for one object (see the test), so the condition is where the
  reason shows;
- a pod on a node that goes NotReady moves to another node (the lost node is avoided).

The time from the fault to every pod Running again is printed beside the plan's budget term for it
(``budget`` level ``pod``, term ``T1 reschedule``) and must be within it.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml
from conftest import EXAMPLES, ROOT

from resumable.api import load_plan
from resumable.plan.model import JobPlan

from .fixtures import StartPlane, controlplane, plan_nodes
from .jobpods import Kube, explain, provision_claims, wait_running

sys.path.insert(0, str(ROOT / "tools"))
import drill as drilling

Obj = Dict[str, Any]
EXAMPLE = EXAMPLES / "pytorch-pod-rescheduling.yaml"
#: a spare NPU node besides the job's, so a job can move off a lost node
SPARE_NODES = 1


@dataclass
class Drill:
    """A plane with the example's job Running."""

    plane: controlplane.ControlPlane
    job: drilling.JobRef
    plan_job: JobPlan
    #: the plan's ``nodes`` (npu_resource, npus_per_node)
    plan_nodes: Obj
    #: what the profile declares: ``recovery.fault_retry_times`` of its job
    retries: int

    def pods(self) -> List[Obj]:
        return drilling.job_pods(self.plane, self.job)

    def why(self) -> str:
        return explain(Kube(self.plane), self.plan_job, self.plane.workdir / "runner" / "podrunner.log")


def printed_apply_lines(profile: Path, out: Path) -> List[List[str]]:
    from manifests.test_render_apiserver import printed_sections

    done = subprocess.run([sys.executable, "-m", "resumable", "render", str(profile), "--out", str(out)],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return printed_sections(done.stdout + done.stderr)["apply, in this order:"]


def start_drill(start_plane: StartPlane, tmp_path: Path, profile: Path = EXAMPLE) -> Drill:
    """The example's nodes and a spare, the rendered stack and job applied as printed; returns once
    every pod of the job is Running."""
    plan_json = controlplane.plan_json(profile)
    plane = start_plane(plan_nodes(profile, controlplane.nodes_for_jobs(plan_json) + SPARE_NODES), mindcluster=True)
    out = tmp_path / "rendered"
    lines = printed_apply_lines(profile, out)
    provision_claims(plane, out)
    for argv in lines:
        assert argv[0] == "kubectl"
        plane.kubectl(*argv[1:], timeout=400)
    (job,) = load_plan(str(profile)).jobs
    wait_running(Kube(plane), job, timeout=300, runner_log=plane.workdir / "runner" / "podrunner.log")
    (declared,) = yaml.safe_load(profile.read_text())["jobs"]
    retries = int(declared["recovery"]["fault_retry_times"])
    return Drill(plane, drilling.job_of(plan_json, job.name), job, plan_json["nodes"], retries)


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


def back_in_budget(drill: Drill, outcome: drilling.Outcome, what: str) -> List[Obj]:
    """The pods once the job is back; the test fails when it is not, or later than the plan's term."""
    assert outcome.back, f"{what}: the job did not come back ({outcome.failed})\n{drill.why()}"
    print(
        f"\n{what}: every pod Running again {outcome.seconds:.1f} s after the fault "
        f"(plan budget {drilling.BUDGET_LEVEL}/{drilling.BUDGET_TERM}: {drill.job.budget_seconds:.1f} s)"
    )
    assert outcome.seconds <= drill.job.budget_seconds
    check_npus_allocated(drill, outcome.pods)
    return outcome.pods


#: seconds the drill waits after a restart before the next fault: several of the plugin's one-second
#: sessions. Faults seconds apart are not what the drill is about, and with them the operator once
#: counted one restart twice here (it saw the replacement pod deleted 70 ms after it made it, and
#: failed the job at its backoff limit, which it sets to fault-retry-times: MC:@v7.3.0
#: component/ascend-operator/pkg/controllers/v1/ascendjob_controller.go:382-409, 450-457; job.go:69-78)
SETTLE_SECONDS = 5.0


def settled_retries(drill: Drill, expected: int, timeout: float = 30) -> Optional[int]:
    """The plugin's count for the job once it is ``expected`` (it writes the count at the end of a
    session, which may be after the pods run again) or the timeout passes; then the drill waits
    :data:`SETTLE_SECONDS`."""
    deadline = time.monotonic() + timeout
    found = drilling.remain_retry_times(drill.plane, drill.job)
    while found != expected and time.monotonic() < deadline:
        time.sleep(0.5)
        found = drilling.remain_retry_times(drill.plane, drill.job)
    time.sleep(SETTLE_SECONDS)
    return found


def wait_failed(drill: Drill, timeout: float = 180) -> Obj:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        failed = drilling.failed_condition(drill.plane, drill.job)
        if failed is not None:
            return failed
        time.sleep(1)
    raise AssertionError(f"the job did not end Failed in {timeout:.0f} s\n{drill.why()}")


def job_events(drill: Drill) -> str:
    return str(
        drill.plane.kubectl(
            "get", "events", "-n", drill.job.namespace, f"--field-selector=involvedObject.name={drill.job.name}"
        ).stdout
    )


def test_a_failed_pod_is_rescheduled_until_the_retries_are_used_up(start_plane: StartPlane, tmp_path: Path) -> None:
    drill = start_drill(start_plane, tmp_path)
    check_npus_allocated(drill, drill.pods())
    for attempt in range(1, drill.retries + 1):
        before = drill.pods()
        victim, outcome = drilling.fault(drill.plane, drill.job, "pod")
        back = back_in_budget(drill, outcome, f"reschedule {attempt}/{drill.retries}")
        kept = {p["metadata"]["uid"] for p in before if p["metadata"]["uid"] != victim["metadata"]["uid"]}
        assert kept <= {p["metadata"]["uid"] for p in back}, "a pod that did not fail was recreated"
        assert settled_retries(drill, drill.retries - attempt) == drill.retries - attempt
    assert drill.job.name in drilling.reschedule_reason(drill.plane)
    drilling.fail_pod(drill.plane, drilling.worker(drill.pods()))
    failed = wait_failed(drill)
    assert "remain retry times is 0" in failed["message"], failed
    # The operator records the same message as an event (job.go:183), but by now the job has had more
    # events than client-go's spam filter lets through for one object (burst 25, then one per 5
    # minutes: k8s.io/client-go v0.25.13 tools/record/events_cache.go:48-49), and in this drill that
    # event never appears: the condition (kubectl describe ascendjob) is where a user sees the reason.
    print(f"\nthe job's events at the end:\n{job_events(drill)}")


def test_a_pod_on_a_lost_node_moves_to_another_node(start_plane: StartPlane, tmp_path: Path) -> None:
    """A node of the job goes NotReady: the plugin finds the job's pod on a node not in its session
    (not Ready: plugin/node.go getNeedInitNodeList skips it) and restarts the job's faulty pod
    (internal/rescheduling/reschedule.go:982-986, NodeUnhealthy); the replacement runs on another
    NPU node, the other pod stays, and a node fault uses up no retry (only a failed pod does:
    reschedule.go:575-578; the count starts at fault-retry-times when the job first faults,
    reschedule.go:134-143)."""
    drill = start_drill(start_plane, tmp_path)
    before = drill.pods()
    victim, outcome = drilling.fault(drill.plane, drill.job, "node")
    lost = victim["spec"]["nodeName"]
    back = back_in_budget(drill, outcome, f"node {lost} NotReady")
    ready = [c for c in drill.plane.get_json("node", lost)["status"]["conditions"] if c["type"] == "Ready"]
    assert ready[0]["status"] == "False"
    nodes = [p["spec"]["nodeName"] for p in back]
    assert lost not in nodes, f"a pod went back to the lost node {lost}: {nodes}"
    kept = {p["metadata"]["uid"] for p in before if p["metadata"]["uid"] != victim["metadata"]["uid"]}
    assert kept <= {p["metadata"]["uid"] for p in back}, "a pod on a healthy node was recreated"
    assert drilling.remain_retry_times(drill.plane, drill.job) == drill.retries


def test_the_sandbox_drill_command_runs_the_same_drill(start_plane: StartPlane, tmp_path: Path) -> None:
    """``tools/sandbox.py drill`` as docs/local-cluster.md gives it, against a plane laid out as the
    sandbox's (its kubeconfig in the directory): it faults a pod, says how long the job took to come
    back beside the plan's term and the retries left, and exits 0; a job that is not there exits 2
    naming it."""
    drill = start_drill(start_plane, tmp_path)
    command = [sys.executable, str(ROOT / "tools" / "sandbox.py"), "drill", "--dir", str(drill.plane.workdir),
               "--profile", str(EXAMPLE)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=400, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    print(f"\n{done.stdout}")
    assert f"plan budget {drilling.BUDGET_LEVEL}/{drilling.BUDGET_TERM}" in done.stdout
    assert f"remain-retry-times {drill.retries - 1} " in done.stdout
    wrong = subprocess.run([*command, "--job", "nope"], capture_output=True, text=True, timeout=120, check=False)
    assert wrong.returncode == 2 and "--job nope" in wrong.stderr, wrong.stderr
