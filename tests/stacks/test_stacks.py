"""The stacks' lifecycle wiring the engine receives, under mocks (fast; what it does to a cluster, with
several stacks over time, runs for real in tests/cluster/test_pulumi_a2.py): which ConfigMaps are left
to MindCluster, DaemonSet waits, images kept on destroy, outputs from the created objects.
``registrations`` is also the mock run other modules compare ``resumable render`` with."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Dict, List

import pulumi
import pytest
import yaml

from .pulumi_mocks import (
    MOCKS,
    PROJECT,
    Registered,
    install_program,
    pulumi_test,
    registered,
    reset,
    run_program,
    shipped_config,
)

A2_WORKLOADS = ["pytorch-process-recovery", "mindspore-process-recovery", "pytorch-pod-rescheduling"]


def registrations(config: Dict[str, Any], stack_outputs: Dict[str, Dict[str, Any]] | None = None) -> List[Registered]:
    """What one ``pulumi up`` of ``config`` registers, once every registration has landed."""
    reset()
    MOCKS.stack_outputs.update(stack_outputs or {})
    out: List[Registered] = []

    @pulumi_test
    def run() -> Any:
        deployment = run_program(config)["deployment"]
        children: List[Any] = []
        for part in ("scheduler", "storage", "jobs"):
            if deployment[part] is not None:
                children += list(deployment[part].resources.values())
        return pulumi.Output.all(*[c.urn for c in children]).apply(lambda _: out.extend(registered()))

    run()
    return out


@pytest.fixture
def env(monkeypatch: Any, tmp_path: Path) -> Path:
    install_program(monkeypatch, tmp_path)
    return tmp_path


def two_jobs(env: Path) -> Path:
    path = Path(shipped_config("pytorch-process-recovery", env)[f"{PROJECT}:profile"])
    doc = yaml.safe_load(path.read_text())
    second = copy.deepcopy(doc["jobs"][0])
    second["name"] = "aaa-second"  # sorts before llama-pretrain
    second["image"].pop("name", None)
    doc["jobs"].append(second)
    out = path.with_name("two-jobs.yaml")
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def test_config_maps_mindcluster_writes_are_left_to_it(env: Path) -> None:
    """reset-config-<job> (the device plugin's) and rings-config-<job> (the Volcano plugin's
    RankTable): created once, their data never reset by a later up."""
    seen = set()
    configs = [shipped_config(name, env) for name in ["legacy-6.0-pod-rescheduling", *A2_WORKLOADS]]
    # and a Volcano Job, whose RankTable the Volcano plugin writes into rings-config-<job>
    minimal = shipped_config("job-level-minimal", env)
    doc = yaml.safe_load(Path(minimal[f"{PROJECT}:profile"]).read_text())
    doc["jobs"][0]["kind"] = "vcjob"
    doc["jobs"][0]["recovery"]["backoff_limit"] = 5
    vcjob = Path(minimal[f"{PROJECT}:profile"]).with_name("vcjob.yaml")
    vcjob.write_text(yaml.safe_dump(doc, sort_keys=False))
    configs.append({**minimal, f"{PROJECT}:profile": str(vcjob)})
    for config in configs:
        for r in registrations(config):
            if r.type.startswith("kubernetes:") and r.inputs.get("kind") == "ConfigMap":
                meta = r.inputs["metadata"]["name"]
                runtime = meta.startswith(("reset-config-", "rings-config-"))
                assert list(r.request.ignoreChanges) == (["data"] if runtime else []), r.key
                if runtime:
                    seen.add(meta.split("-config-")[0])
    assert "rings" in seen, "no Volcano Job's RankTable ConfigMap was registered"


def test_daemonsets_wait_longer_on_more_nodes(monkeypatch: Any, tmp_path: Path) -> None:
    from resumable_pulumi.program import DAEMONSET_SECONDS_PER_NODE

    from .pulumi_mocks import FakeNodes

    install_program(monkeypatch, tmp_path, FakeNodes(nodes=40))
    regs = registrations(shipped_config("job-level-minimal", tmp_path))
    waits = {r.key: r.request.customTimeouts.create for r in regs if r.type.startswith("kubernetes:apps")}
    daemonsets = [k for k in waits if k.startswith("DaemonSet/")]
    assert daemonsets
    for key, wait in waits.items():
        expected = 180 + DAEMONSET_SECONDS_PER_NODE * 39 if key.startswith("DaemonSet/") else 180
        assert wait == f"{expected}s", key


def test_images_are_kept_on_destroy_and_built_only_on_up(env: Path) -> None:
    config = shipped_config("pytorch-pod-rescheduling", env)
    (image,) = [r for r in registrations(config) if r.type == "docker-build:index:Image"]
    assert image.request.retainOnDelete is True
    assert image.inputs["buildOnPreview"] is False
    # the layers are cached in the registry beside the pushed tag (registry.example.com/ai/gpt-pod-level:7.3.0)
    cache = "registry.example.com/ai/gpt-pod-level:buildcache"
    assert image.inputs["cacheFrom"] == [{"registry": {"ref": cache}}]
    (to,) = [c["registry"] for c in image.inputs["cacheTo"]]
    assert (to["ref"], to["mode"]) == (cache, "max")
    (image,) = [
        r for r in registrations({**config, f"{PROJECT}:buildOnPreview": True}) if r.type == "docker-build:index:Image"
    ]
    assert image.inputs["buildOnPreview"] is True


def test_build_cache_reference() -> None:
    from resumable_pulumi.image import cache_ref

    assert cache_ref("localhost:5000/ai/train:1.0") == "localhost:5000/ai/train:buildcache"
    assert cache_ref("registry.example.com/ai/train") == "registry.example.com/ai/train:buildcache"
    assert cache_ref("train:2@sha256:" + "0" * 64) == "train:buildcache"


def test_outputs_come_from_the_created_objects(env: Path) -> None:
    reset()
    out: Dict[str, Any] = {}

    @pulumi_test
    def run() -> Any:
        deployment = run_program(shipped_config("pytorch-pod-rescheduling", env))["deployment"]
        image = deployment["images"]["gpt-pod-level"]
        return pulumi.Output.all(deployment["storage"].claims, deployment["jobs"].jobs, image.digest).apply(
            lambda v: out.update(claims=v[0], jobs=v[1], digest=v[2])
        )

    run()
    assert out["claims"] == ["training/gpt-pod-level-checkpoints"]
    assert out["jobs"] == ["AscendJob/training/gpt-pod-level"]
    assert out["digest"].startswith("sha256:")
