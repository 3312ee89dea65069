"""``pulumi up`` for real of the shipped one-stack clusters (stackRole ``all``: the scheduling stack
and the job of one profile in one stack): MindCluster 6.0.0 on x86 (Pulumi.job-level-minimal.yaml)
and 6.0.0.SPC1 with the legacy Elastic Agent (Pulumi.legacy-6.0-pod-rescheduling.yaml), each on a
control plane of its own with the fake nodes of its plan, as shipped (a prebuilt image each)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES

from .fixtures import Project, StartPlane, built, plan_nodes
from .test_pulumi_a2 import live, rendered, subset


@pytest.mark.parametrize("stack", ["job-level-minimal", "legacy-6.0-pod-rescheduling"])
def test_a_shipped_all_role_stack_comes_up_whole_and_stays_put(
    stack: str, start_plane: StartPlane, tmp_path: Path
) -> None:
    built(("pulumi", "pulumi-kubernetes"))
    plane = start_plane(plan_nodes(EXAMPLES / f"{stack}.yaml"))
    project = Project(tmp_path / "project", plane)
    project.configure(stack)
    project.pulumi("up", stack)
    profile = project.dir / "profiles" / f"{stack}.yaml"
    expected = rendered(profile, tmp_path / "r", ("1-crds", "2-cluster", "3-storage"))
    for obj in expected:  # every cluster-wide and storage object render writes is on the cluster
        got = live(plane, obj)
        if obj["kind"] == "Deployment":
            assert got["status"].get("availableReplicas") == obj["spec"].get("replicas", 1), obj["metadata"]["name"]
        elif obj["kind"] == "DaemonSet":
            status = got["status"]
            assert status["desiredNumberScheduled"] == status["numberReady"] >= 1, obj["metadata"]["name"]
    sent = project.kubernetes_inputs(stack)
    jobs = [o for o in sent if o["kind"] == "AscendJob" or o["apiVersion"].startswith("batch.volcano.sh/")]
    assert jobs, [o["kind"] for o in sent]
    for obj in jobs:  # the job as the engine sent it, kept whole by the API server and its CRD
        assert subset(obj["spec"], live(plane, obj)["spec"]) == [], obj["metadata"]["name"]
    assert "6.0.0" in project.outputs(stack)["mindcluster"]
    project.pulumi("preview", stack, "--expect-no-changes")
    project.pulumi("refresh", stack, "--expect-no-changes")
