"""The Kubernetes objects a stack registers are the objects ``resumable render`` writes for its
profile, stack by stack: a cluster stack registers the scheduling stack, a workload stack the rest,
an ``all`` stack everything; together the cluster stack and each job stack on it are the whole
render. The only difference allowed is the image a job runs: render names the reference a build
would push (``default_image``), Pulumi the pushed digest or the prebuilt reference from config."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest
import yaml
from conftest import ROOT

from resumable.cli import main as resumable

from .pulumi_mocks import PROJECT, install_program, integral, shipped_config, stack_config, stack_files
from .test_stacks import registrations

STACKS = [p.name[len("Pulumi.") : -len(".yaml")] for p in stack_files()]


def role(name: str) -> str:
    return str(stack_config(ROOT / f"Pulumi.{name}.yaml").get(f"{PROJECT}:stackRole", "all"))


def _run_image(node: Any, images: Dict[str, str]) -> Any:
    """``node`` with every container ``image`` and build record ``"image": ...`` a job runs replaced."""
    if isinstance(node, list):
        return [_run_image(v, images) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _run_image(v, images) for k, v in node.items()}
    if "containers" in out:
        out["containers"] = [{**c, "image": images.get(c.get("image"), c.get("image"))} for c in out["containers"]]
    if isinstance(out.get("build.json"), str):
        for old, new in images.items():
            out["build.json"] = out["build.json"].replace(f'"image": "{old}"', f'"image": "{new}"')
    return out


def rendered(profile: str, out: Path, images: Dict[str, str]) -> Dict[str, Dict[str, Any]]:
    """``resumable render PROFILE --out DIR``, read back; the image each job runs replaced by the one
    the stack runs (``images``: rendered reference -> stack's reference)."""
    assert resumable(["render", profile, "--out", str(out)]) == 0
    objects: Dict[str, Dict[str, Any]] = {}
    for path in sorted(out.rglob("*.yaml")):
        obj = _run_image(yaml.safe_load(path.read_text(encoding="utf-8")), images)
        meta = obj["metadata"]
        key = (
            f"{obj['kind']}/{meta['namespace']}/{meta['name']}"
            if meta.get("namespace")
            else f"{obj['kind']}/{meta['name']}"
        )
        objects[key] = obj
    return objects


def stack_objects(
    name: str, tmp_path: Path, edit: Optional[Callable[[Dict[str, Any]], None]] = None
) -> tuple[Dict[str, Dict[str, Any]], str, Dict[str, str]]:
    """The stack's Kubernetes objects by key, its profile and ``rendered image -> image it runs``;
    ``edit`` changes the shipped profile's data first."""
    from resumable.api import load_plan
    from resumable.manifests.deployment import default_image

    config = shipped_config(name, tmp_path)
    if edit is not None:
        path = Path(config[f"{PROJECT}:profile"])
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        edit(doc)
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    regs = registrations(config)
    objects: Dict[str, Dict[str, Any]] = {}
    for r in regs:
        if r.type.startswith("kubernetes:") and not r.type.startswith("pulumi:"):
            objects[r.key] = integral(dict(r.inputs))
    profile = config[f"{PROJECT}:profile"]
    plan = load_plan(profile)
    images: Dict[str, str] = {}
    for job in plan.jobs:
        job_obj = next(
            (o for o in objects.values() if o["kind"] in ("AscendJob", "Job") and o["metadata"]["name"] == job.name),
            None,
        )
        if job_obj is not None:
            spec = job_obj["spec"]
            pods = (
                [s["template"] for s in spec["replicaSpecs"].values()]
                if "replicaSpecs" in spec
                else [t["template"] for t in spec["tasks"]]
            )
            images[default_image(plan, job)] = pods[0]["spec"]["containers"][0]["image"]
    return objects, profile, images


def assert_same(pulumi_objects: Dict[str, Dict[str, Any]], render: Dict[str, Dict[str, Any]], keys: List[str]) -> None:
    for key in keys:
        assert pulumi_objects[key] == render[key], f"{key}: Pulumi registers other content than resumable render writes"


@pytest.fixture
def env(monkeypatch: Any, tmp_path: Path) -> Path:
    install_program(monkeypatch, tmp_path)
    return tmp_path


@pytest.mark.parametrize("name", [n for n in STACKS if role(n) == "all"])
def test_a_whole_stack_is_the_render(env: Path, name: str) -> None:
    objects, profile, images = stack_objects(name, env)
    render = rendered(profile, env / "render", images)
    assert sorted(objects) == sorted(render)
    assert_same(objects, render, sorted(render))


def test_pod_settings_and_extra_volumes_reach_the_pulumi_output(env: Path) -> None:
    """jobs[].pod and the new volume sources: the stack registers what render writes (issue 24)."""
    from manifests.test_pod_settings import POD, VOLUMES

    name = next(n for n in STACKS if role(n) == "all")

    def edit(doc: Dict[str, Any]) -> None:
        doc["jobs"][0].update(pod=POD, volumes=VOLUMES)

    objects, profile, images = stack_objects(name, env, edit)
    render = rendered(profile, env / "render", images)
    assert sorted(objects) == sorted(render)
    assert_same(objects, render, sorted(render))
    jobs = [o for o in objects.values() if o["kind"] in ("AscendJob", "Job") and o["apiVersion"] != "batch/v1"]
    spec = jobs[0]["spec"]
    pods = [s["template"] for s in spec["replicaSpecs"].values()] if "replicaSpecs" in spec else []
    pods += [t["template"] for t in spec.get("tasks", [])]
    assert pods and all(p["spec"]["priorityClassName"] == "training-high" for p in pods)


@pytest.mark.parametrize("name", [n for n in STACKS if role(n) == "workload"])
def test_cluster_stack_and_job_stack_together_are_the_render(env: Path, name: str) -> None:
    cluster_name = stack_config(ROOT / f"Pulumi.{name}.yaml")[f"{PROJECT}:clusterStack"].rsplit("/", 1)[1]
    cluster, cluster_profile, _ = stack_objects(cluster_name, env / "cluster")
    workload, profile, images = stack_objects(name, env / "workload")
    assert not set(cluster) & set(workload), "an object is in both the cluster stack and a job stack"
    render = rendered(profile, env / "render", images)
    assert sorted(set(cluster) | set(workload)) == sorted(render)
    assert_same(workload, render, sorted(workload))
    assert_same(cluster, rendered(cluster_profile, env / "render-cluster", {}), sorted(cluster))
