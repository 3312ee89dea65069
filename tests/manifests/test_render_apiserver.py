"""The layered render against a real API server: applied with the commands the help and the docs
give (:func:`resumable.manifests.render.apply_steps`), diffed, and one job deleted.

The contract with the control-plane fixture (issue 23): a pytest fixture ``kube_cluster`` whose
value has ``kubectl`` (the command line that runs kubectl: a list of strings, or one path) and
``kubeconfig`` (the path of a kubeconfig for the cluster), as attributes or as mapping keys. Every
command of the steps is run as that kubectl with ``KUBECONFIG`` set, exactly as written there,
``kubectl`` replaced by the fixture's command line. Until the fixture exists the tests are skipped
with that reason.

The profile keeps its volumes on a storage class (no NFS), so no step waits for a pod to finish: a
control plane with KWOK nodes runs no container (the NFS prepare Job is covered without a cluster in
tests/manifests/test_storage_prepare.py).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Sequence

import pytest
import yaml
from conftest import EXAMPLES

from resumable.api import load_plan
from resumable.cli import main as resumable
from resumable.manifests.render import Step, apply_steps, delete_job_steps, diff_steps

EXAMPLE = EXAMPLES / "pytorch-process-recovery.yaml"
JOBS = ["llama-pretrain", "llama-finetune"]


class Cluster:
    def __init__(self, kubectl: Sequence[str], kubeconfig: str, runs_pods: bool = False) -> None:
        self.kubectl = list(kubectl)
        self.env = dict(os.environ, KUBECONFIG=kubeconfig)
        #: the cluster's nodes run containers (a KWOK control plane runs none: no Job ever completes)
        self.runs_pods = runs_pods

    def run(self, step: Step, check: bool = True) -> subprocess.CompletedProcess[str]:
        assert step.argv[0] == "kubectl"
        done = subprocess.run(
            [*self.kubectl, *step.argv[1:]], env=self.env, capture_output=True, text=True, timeout=360
        )
        if check:
            assert done.returncode == 0, "%s: %s%s" % (step.shell(), done.stdout, done.stderr)
        return done

    def get(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(Step(("kubectl", "get", *args), "look"), check=False)


def kube_cluster_or_skip(request: pytest.FixtureRequest) -> Cluster:
    """The control plane of issue 23 from its ``kube_cluster`` fixture (attributes or mapping keys
    ``kubectl``, ``kubeconfig`` and optionally ``runs_pods``), or a skip naming what is missing."""
    try:
        value: Any = request.getfixturevalue("kube_cluster")
    except pytest.FixtureLookupError:
        pytest.skip("needs the local control plane of issue 23 (a pytest fixture kube_cluster)")

    def field(name: str, default: Any = None) -> Any:
        return value.get(name, default) if isinstance(value, dict) else getattr(value, name, default)

    kubectl = field("kubectl")
    command = [os.fspath(kubectl)] if isinstance(kubectl, (str, os.PathLike)) else [str(a) for a in kubectl]
    return Cluster(command, str(field("kubeconfig")), bool(field("runs_pods", False)))


@pytest.fixture()
def cluster(request: pytest.FixtureRequest) -> Cluster:
    return kube_cluster_or_skip(request)


def storage_class_profile(tmp_path: Path) -> Path:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["storage"] = {"storage_class": "standard"}
    doc["jobs"].append(dict(doc["jobs"][0], name=JOBS[1]))
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_apply_diff_and_delete_one_job(cluster: Cluster, tmp_path: Path) -> None:
    out = str(tmp_path / "rendered")
    assert resumable(["render", str(storage_class_profile(tmp_path)), "--out", out]) == 0
    steps: List[Step] = apply_steps(out, JOBS, prepare=False)
    for step in steps:
        cluster.run(step)
    for step in diff_steps(out, JOBS):
        done = cluster.run(step, check=False)
        assert done.returncode == 0, "%s shows a difference after apply: %s%s" % (
            step.shell(),
            done.stdout,
            done.stderr,
        )
    assert cluster.get("ascendjob", JOBS[0], "-n", "training").returncode == 0
    for step in delete_job_steps(out, JOBS[0]):
        cluster.run(step)
    assert cluster.get("ascendjob", JOBS[0], "-n", "training").returncode != 0
    assert cluster.get("ascendjob", JOBS[1], "-n", "training").returncode == 0
    assert cluster.get("crd", "ascendjobs.mindxdl.gitee.com").returncode == 0
    assert cluster.get("pvc", "%s-checkpoints" % JOBS[0], "-n", "training").returncode == 0
    assert cluster.get("namespace", "training").returncode == 0


def check_jobs_run(plane: Any, profile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cluster import jobpods

    jobpods.check_jobs_run(plane, load_plan(str(profile)).jobs, tmp_path, monkeypatch)


def printed_sections(text: str) -> Dict[str, List[List[str]]]:
    """The commands ``render`` prints, by the heading above them ("apply, in this order:", ...)."""
    sections: Dict[str, List[List[str]]] = {}
    heading = ""
    for line in text.splitlines():
        if line.startswith("  kubectl "):
            sections.setdefault(heading, []).append(shlex.split(line.split("   # ")[0]))
        elif line.endswith(":"):
            heading = line
    return sections


@pytest.mark.parametrize("example", sorted(p.stem for p in EXAMPLES.glob("*.yaml")))
def test_every_example_applies_on_a_fresh_cluster_as_render_prints_it(
    example: str, start_plane: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a new user does: ``resumable render PROFILE --out DIR``, then the kubectl lines it printed,
    in order, on a new cluster with the example's nodes; the real Ascend Operator and Volcano the
    cluster layer deploys (tools/podrunner.py runs them) make each job's PodGroup and pods, which run
    on the fake NPU nodes with the environment the launcher needs (tests/cluster/jobpods.py); the
    printed diff finds nothing; the printed delete removes the job alone. The shipped example as is
    (NFS examples wait for their prepare Job, which KWOK completes)."""
    from cluster.fixtures import plan_nodes

    plane = start_plane(plan_nodes(EXAMPLES / f"{example}.yaml"))
    cluster = Cluster([str(plane.bins["kubectl"])], str(plane.kubeconfig), runs_pods=True)
    out = tmp_path / "rendered"
    done = subprocess.run(
        [sys.executable, "-m", "resumable", "render", str(EXAMPLES / f"{example}.yaml"), "--out", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    sections = printed_sections(done.stdout + done.stderr)
    assert set(sections) == {
        "apply, in this order:",
        "see what a new render would change:",
        "remove one job (its storage, the other jobs and the stack stay):",
    }, sections
    from cluster.jobpods import provision_claims

    provision_claims(plane, out)  # what the cluster's CSI driver would do for a storage class
    for argv in sections["apply, in this order:"]:
        cluster.run(Step(tuple(argv), "as printed"))
    check_jobs_run(plane, EXAMPLES / f"{example}.yaml", tmp_path, monkeypatch)
    for argv in sections["see what a new render would change:"]:
        diff = cluster.run(Step(tuple(argv), "as printed"), check=False)
        assert diff.returncode == 0, "%s shows a difference after the apply:\n%s%s" % (argv, diff.stdout, diff.stderr)
    (delete,) = sections["remove one job (its storage, the other jobs and the stack stay):"]
    job_dir = Path(delete[-1])
    docs = [d for path in sorted(job_dir.glob("*.yaml")) for d in yaml.safe_load_all(path.read_text()) if d]
    jobs = [d for d in docs if d["kind"] == "AscendJob" or d["apiVersion"].startswith("batch.volcano.sh/")]
    assert len(jobs) == 1, [d["kind"] for d in docs]
    cluster.run(Step(tuple(delete), "as printed"))
    (obj,) = jobs
    resource = "%s.%s" % (obj["kind"].lower(), obj["apiVersion"].split("/")[0])
    assert cluster.get(resource, obj["metadata"]["name"], "-n", obj["metadata"]["namespace"]).returncode != 0
    assert cluster.get("crd", "ascendjobs.mindxdl.gitee.com").returncode == 0


def apply_as_printed_and_check_jobs(
    profile: Path, start_plane: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Any:
    """``resumable render`` of ``profile``, its printed apply lines on a fresh cluster with its nodes,
    then every job checked as it runs (:func:`check_jobs_run`); the control plane is returned."""
    from cluster.fixtures import plan_nodes
    from cluster.jobpods import provision_claims

    plane = start_plane(plan_nodes(profile))
    cluster = Cluster([str(plane.bins["kubectl"])], str(plane.kubeconfig), runs_pods=True)
    out = tmp_path / "rendered"
    done = subprocess.run([sys.executable, "-m", "resumable", "render", str(profile), "--out", str(out)],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    provision_claims(plane, out)
    for argv in printed_sections(done.stdout + done.stderr)["apply, in this order:"]:
        cluster.run(Step(tuple(argv), "as printed"))
    check_jobs_run(plane, profile, tmp_path, monkeypatch)
    return plane


def edited_example(example: str, tmp_path: Path, edit: Any) -> Path:
    doc = yaml.safe_load((EXAMPLES / f"{example}.yaml").read_text())
    for wheel in [w for job in doc["jobs"] for w in (job.get("image") or {}).get("wheels", {}).values()]:
        if wheel.get("file"):
            wheel["file"] = str(EXAMPLES / wheel["file"])
    edit(doc)
    profile = tmp_path / f"{example}.yaml"
    profile.write_text(yaml.safe_dump(doc, sort_keys=False))
    return profile


def test_a_job_on_a_queue_of_its_own_runs_when_applied_right_after_the_stack(
    start_plane: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``jobs[].queue: team-a``: the printed lines apply the job right after the layer that starts
    Volcano. The Ascend Operator refuses a job whose queue it cannot get and never retries
    (ascendjob_validate.go:72-80, ascendjob_controller.go:148-151 at 7.3.0); the cluster layer
    creates the queue (D18), so the job runs on it."""
    profile = edited_example("job-level-minimal", tmp_path, lambda doc: doc["jobs"][0].update(queue="team-a"))
    plane = apply_as_printed_and_check_jobs(profile, start_plane, tmp_path, monkeypatch)
    assert plane.get_json("queue.scheduling.volcano.sh", "team-a")["spec"]["weight"] == 1


@pytest.mark.parametrize("release", ["26.0.0", "26.1.0"])
@pytest.mark.parametrize("example", ["pytorch-process-recovery", "mindspore-process-recovery"])
def test_the_operator_of_a_later_release_runs_the_process_level_examples(
    example: str, release: str, start_plane: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped process-level examples moved to a 26.x release: that release's Ascend Operator
    (which injects MS_ENABLE_TFT unquoted from 26.0.0, resumable/operatorenv.py) makes pods whose
    environment the launcher reads without a problem and with no name twice."""
    profile = edited_example(example, tmp_path, lambda doc: doc["cluster"].update(mindcluster=release))
    apply_as_printed_and_check_jobs(profile, start_plane, tmp_path, monkeypatch)
