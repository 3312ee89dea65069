"""``pulumi up`` for real of the shipped one-stack clusters (stackRole ``all``: the scheduling stack
and the job of one profile in one stack): MindCluster 6.0.0 on x86 (Pulumi.job-level-minimal.yaml)
and 6.0.0.SPC1 with the legacy Elastic Agent (Pulumi.legacy-6.0-pod-rescheduling.yaml), each on a
control plane of its own with the fake nodes of its plan, as shipped (a prebuilt image each)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from conftest import EXAMPLES, UPSTREAM

from resumable.api import load_plan

from . import jobpods
from .fixtures import Plane, Project, StartPlane, built, plan_nodes
from .test_pulumi_a2 import live, rendered, subset


def check_jobs_run(plane: Plane, profile: Path) -> None:
    """The real Ascend Operator and Volcano of the stack turn every job into its PodGroup and pods."""
    jobpods.check_jobs_run(plane, load_plan(str(profile)).jobs)


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
    check_jobs_run(plane, profile)
    project.pulumi("preview", stack, "--expect-no-changes")
    project.pulumi("refresh", stack, "--expect-no-changes")


def test_the_releases_own_crds_deployed_verbatim_run_the_job_and_refuse_an_unknown_field(
    start_plane: StartPlane, tmp_path: Path
) -> None:
    """``crdSources`` set to MindCluster 6.0.0's own release files (the Ascend Operator's and Volcano
    1.9.0's, with their full pod template schemas): the stack comes up with them, its job runs, and
    an AscendJob whose container carries a field Kubernetes does not know is refused by the API server
    (kubectl's strict field validation), where the trimmed CRDs of the render keep pod templates open
    (docs/scheduler.md D3)."""
    built(("pulumi", "pulumi-kubernetes"))
    stack = "job-level-minimal"
    release = UPSTREAM / "mindcluster" / "v6.0.0"
    sources = [release / "ascend-operator.yaml", release / "volcano-v1.9.0.yaml"]
    missing = [str(p) for p in sources if not p.is_file()]
    assert not missing, f"the upstream release files are missing: {missing} (../shared/upstream beside the checkout)"
    plane = start_plane(plan_nodes(EXAMPLES / f"{stack}.yaml"))
    project = Project(tmp_path / "project", plane)
    project.configure(stack, crdSources=[str(p) for p in sources])
    project.pulumi("up", stack)
    crd = plane.get_json("crd", "ascendjobs.mindxdl.gitee.com")
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert len(json.dumps(schema)) > 100_000, "not the release's full schema"
    profile = project.dir / "profiles" / f"{stack}.yaml"
    check_jobs_run(plane, profile)
    (job,) = load_plan(str(profile)).jobs
    live_job = plane.get_json("ascendjob", job.name, "-n", job.namespace)
    bad = copy.deepcopy({k: live_job[k] for k in ("apiVersion", "kind", "spec")})
    bad["metadata"] = {"name": job.name + "-typo", "namespace": job.namespace}
    replica = next(iter(bad["spec"]["replicaSpecs"].values()))
    replica["template"]["spec"]["containers"][0]["imagePullPolcy"] = "IfNotPresent"  # a typo
    done = plane.kubectl("apply", "-f", "-", stdin=json.dumps(bad), check=False)
    assert done.returncode != 0 and "imagePullPolcy" in done.stderr, done.stdout + done.stderr
    project.pulumi("preview", stack, "--expect-no-changes")
