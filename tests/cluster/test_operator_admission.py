"""The real Ascend Operator's admission of the AscendJobs this project renders, and of the ones it must refuse,
at the releases whose operators differ (7.3.0, 26.1.0), plus the process-level examples at other node counts
than the shipped ones: what the operator double of earlier rounds (tests/manifests/ascend_operator.py) stood
in for, now asked of the operator itself (tools/podrunner.py runs the one built from its source).

A job the operator refuses gets a Warning event with the reason and message of its ``validateJob``
(MC:@v7.3.0 component/ascend-operator/pkg/controllers/v1/ascendjob_validate.go:24-52, the event at :33-37) and
nothing else: no PodGroup, no pod (Reconcile returns before it builds anything, ascendjob_controller.go:148-151);
the job the render wrote runs beside them.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest
import yaml
from manifests.test_render_apiserver import apply_as_printed_and_check_jobs, edited_example

from cluster import jobpods
from resumable import constants as C
from resumable.api import load_plan

Obj = Dict[str, Any]
#: the releases whose operators validate differently (event reasons renamed in 26.x)
RELEASES = ("7.3.0", "26.1.0")
Edit = Callable[[Obj], Any]

#: what validateJob refuses, the reason of its event at 7.3.0 and at 26.1.0 (26.x renamed them: consts.go:146-155
#: there) and a part of the message. MC:@v7.3.0 component/ascend-operator/pkg/controllers/v1/ascendjob_validate.go:
#: validateBasicInfo :55-83, validateSpec :89-101, checkReplicaSpecs :132-186, validateContainer :188-211,
#: validateReplicaType :236-249, validateLeader :251-259; MC:@v26.1.0 the same file: validateBasicInfo :64-92,
#: validateSpec :98-108, checkReplicaSpecs :143-194, validateContainer :196-222, validateReplicaType :246-257,
#: validateLeader :260-267
REFUSALS: List[Tuple[str, Edit, Tuple[str, str], str]] = [
    (
        "no-queue",
        lambda j: j["spec"]["runPolicy"]["schedulingPolicy"].pop("queue"),
        ("QueueGetFailed", "InvalidQueue"),
        "",
    ),
    (
        "missing-queue",
        lambda j: j["spec"]["runPolicy"]["schedulingPolicy"].update(queue="team-z"),
        ("QueueGetFailed", "InvalidQueue"),
        '"team-z" not found',
    ),
    (
        "no-framework",
        lambda j: j["metadata"]["labels"].pop("framework"),
        ("FrameworkLabelError", "InvalidFramework"),
        "framework",
    ),
    (
        "chief",
        lambda j: j["spec"]["replicaSpecs"].update(Chief=j["spec"]["replicaSpecs"].pop("Master")),
        ("ReplicaTypeError", "InvalidReplicaType"),
        "must be one of",
    ),
    (
        "two-masters",
        lambda j: j["spec"]["replicaSpecs"]["Master"].update(replicas=2),
        ("ReplicaTypeError", "InvalidReplicaSpec"),
        "must be only 1",
    ),
    (
        "container-name",
        lambda j: j["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].update(name="pytorch"),
        ("ContainerError", "InvalidContainer"),
        "no container named ascend",
    ),
    (
        "no-image",
        lambda j: j["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].update(image=""),
        ("ContainerError", "InvalidContainer"),
        "image is undefined",
    ),
    (
        "no-leader",
        lambda j: j["spec"]["replicaSpecs"].pop("Master"),
        ("ReplicaTypeError", "InvalidReplicaType"),
        "leader",
    ),
    (
        "success-policy",
        lambda j: j["spec"].update(successPolicy="Any"),
        ("SuccessPolicyError", "InvalidSuccessPolicy"),
        "must be one of",
    ),
]


def rendered_job(out: Path) -> Obj:
    """The one AscendJob of a render's output."""
    docs = [d for path in sorted(out.rglob("*.yaml")) for d in yaml.safe_load_all(path.read_text()) if d]
    (job,) = [d for d in docs if d.get("kind") == C.ASCENDJOB_KIND]
    found: Obj = job
    return found


def refused_copy(good: Obj, name: str, edit: Edit) -> Obj:
    job = copy.deepcopy(good)
    job["metadata"] = {k: v for k, v in job["metadata"].items() if k in ("namespace", "labels", "annotations")}
    job["metadata"]["name"] = name
    edit(job)
    return job


def warning_events(plane: Any, namespace: str, name: str) -> List[Obj]:
    events: List[Obj] = plane.get_json("events", "-n", namespace, "--field-selector", f"involvedObject.name={name}")[
        "items"
    ]
    return [e for e in events if e.get("type") == "Warning" and e["involvedObject"].get("kind") == C.ASCENDJOB_KIND]


def wait_refusals(plane: Any, namespace: str, names: List[str], timeout: float = 120) -> Dict[str, List[Obj]]:
    deadline = time.monotonic() + timeout
    while True:
        seen = {name: warning_events(plane, namespace, name) for name in names}
        if all(seen.values()) or time.monotonic() > deadline:
            return seen
        time.sleep(2)


@pytest.mark.parametrize("release", RELEASES)
def test_the_operator_refuses_what_its_validation_refuses_and_runs_what_we_render(
    release: str, start_plane: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process-level PyTorch example at ``release``: its job runs (pods Running with the env the launcher
    needs), and each copy broken one way gets the operator's Warning with that check's reason, and no pod."""
    profile = edited_example(
        "pytorch-process-recovery", tmp_path, lambda doc: doc["cluster"].update(mindcluster=release)
    )
    plane = apply_as_printed_and_check_jobs(profile, start_plane, tmp_path, monkeypatch)
    good = rendered_job(tmp_path / "rendered")
    namespace = good["metadata"]["namespace"]
    names = []
    for suffix, edit, _, _ in REFUSALS:
        name = f"refused-{suffix}"
        names.append(name)
        done = plane.kubectl("apply", "-f", "-", stdin=json.dumps(refused_copy(good, name, edit)), check=False)
        assert done.returncode == 0, f"{name}: the API server refused it before the operator: {done.stderr}"
    seen = wait_refusals(plane, namespace, names)
    for (_, _, reasons_by_release, says), name in zip(REFUSALS, names):
        reason = reasons_by_release[RELEASES.index(release)]
        events = seen[name]
        assert events, f"{name}: no Warning event from the operator in 120 s"
        reasons = {e["reason"] for e in events}
        messages = " / ".join(e.get("message", "") for e in events)
        assert reasons == {reason}, (name, reasons, messages)
        assert says.lower() in messages.lower(), (name, messages)
    pods = plane.get_json("pods", "-n", namespace)["items"]
    owners = {o["name"] for p in pods for o in p["metadata"].get("ownerReferences") or []}
    groups = {
        g["metadata"]["name"] for g in plane.get_json("podgroups.scheduling.volcano.sh", "-n", namespace)["items"]
    }
    assert not owners & set(names), "a refused job got pods"
    assert not [g for g in groups if any(g.startswith(n) for n in names)], groups
    check_watchdog_without_the_operators_env(plane, profile, tmp_path / "bare", monkeypatch)


def check_watchdog_without_the_operators_env(
    plane: Any, profile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real pods' env without what the plan says the operator injects (a pod of an operator older than the
    profile says): the launcher still turns the HCCL watchdog off itself (an export), as it did when the
    template carried it; in the operator's own pods the training sees it off too."""
    (job,) = load_plan(str(profile)).jobs
    pods = jobpods.job_pods(jobpods.Kube(plane), job)
    injected = {var.name for var in job.operator_env}
    assert C.ENV_HCCL_ASYNC_ERROR_HANDLING in injected
    tmp_path.mkdir()
    for spec in jobpods.launch_specs(job, pods, tmp_path, monkeypatch).values():
        assert spec.env[C.ENV_HCCL_ASYNC_ERROR_HANDLING] == "0"
    for pod in pods:
        container = jobpods.ascend_container(pod)
        container["env"] = [e for e in container.get("env") or [] if e["name"] not in injected]
    for key, spec in jobpods.launch_specs(job, pods, tmp_path, monkeypatch).items():
        assert spec.problems == [], (key, spec.problems)
        assert (C.ENV_HCCL_ASYNC_ERROR_HANDLING, "0") in [(e.name, e.value) for e in spec.exports], key


@pytest.mark.parametrize("nodes", [1, 3])
@pytest.mark.parametrize("example", ["pytorch-process-recovery", "mindspore-process-recovery"])
def test_the_process_level_examples_run_at_other_node_counts(
    example: str, nodes: int, start_plane: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped process-level examples with one node (a leader alone: no Worker replica) and with three (an
    odd count): the operator makes every pod, and on each the launcher reads node ranks 0..n-1 once, the
    leader's address and port, the msrun layout and the TTP addresses without a problem (tests/cluster/jobpods.py)."""

    def resize(doc: Obj) -> None:
        doc["jobs"][0]["nodes"] = nodes

    apply_as_printed_and_check_jobs(edited_example(example, tmp_path, resize), start_plane, tmp_path, monkeypatch)
