"""Several stacks on one cluster over time: one cluster stack and the job stacks that reference it,
``destroy`` then ``up``, a job removed and added back. The program runs under mocks as in
test_program.py; what each ``up`` does to the cluster comes from tests/manifests/pulumi_cluster.py
(pulumi-kubernetes' create path, cited there)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Dict, List

import pulumi
import pytest
import yaml

from .pulumi_cluster import AlreadyExists, Cluster
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


def test_one_cluster_stack_and_three_job_stacks_share_a_cluster(env: Path) -> None:
    cluster = Cluster()
    cluster.up("ascend-a2-cluster", registrations(shipped_config("ascend-a2-cluster", env)))
    cluster_wide = set(cluster.objects)
    assert "CustomResourceDefinition/ascendjobs.mindxdl.gitee.com" in cluster_wide
    assert "Deployment/mindx-dl/ascend-operator-manager" in cluster_wide
    for name in A2_WORKLOADS:
        cluster.up(name, registrations(shipped_config(name, env)))
    # nothing of the scheduling stack is managed by a job stack; what job stacks share is only the
    # namespace they all run in, taken over (not re-created) by the provider that upserts
    for key in cluster_wide:
        assert cluster.managers(key) == ["ascend-a2-cluster"], key
    shared = sorted(k for k in cluster.objects if len(cluster.managers(k)) > 1)
    assert shared == ["Namespace/training"]
    for name in A2_WORKLOADS:
        assert any(k.startswith("AscendJob/training/") and cluster.managers(k) == [name] for k in cluster.objects)


def test_job_stacks_with_a_registry_login_share_a_namespace(env: Path) -> None:
    """Each job's pods pull with a Secret of its own (<job>-registry), so job stacks in one namespace
    never create the same Secret."""
    cluster = Cluster()
    login = {f"{PROJECT}:registryUsername": "robot", f"{PROJECT}:registryPassword": "t0ken"}
    for name in A2_WORKLOADS:
        cluster.up(name, registrations({**shipped_config(name, env), **login}))
    secrets = sorted(k for k in cluster.objects if k.startswith("Secret/"))
    assert secrets == [
        "Secret/training/gpt-pod-level-registry",
        "Secret/training/llama-pretrain-registry",
        "Secret/training/qwen-mindformers-registry",
    ]


def test_the_old_shape_every_stack_installs_the_cluster_fails(env: Path) -> None:
    """What the shipped stacks did before: each installs the whole scheduling stack."""
    cluster = Cluster()
    first, second = A2_WORKLOADS[:2]
    legacy = {f"{PROJECT}:stackRole": "all", f"{PROJECT}:clusterStack": ""}
    cluster.up(first, registrations({**shipped_config(first, env), **legacy}))
    with pytest.raises(
        AlreadyExists, match=r"stack mindspore-process-recovery: \w+/\S+ already exists \(through provider kubernetes\)"
    ):
        cluster.up(second, registrations({**shipped_config(second, env), **legacy}))


def test_a_workload_stack_refuses_a_cluster_stack_of_another_release(env: Path) -> None:
    config = shipped_config("pytorch-pod-rescheduling", env)
    ref = config[f"{PROJECT}:clusterStack"]
    with pytest.raises(pulumi.RunError, match=r"clusterStack: .* runs MindCluster 26\.0\.0, but .* plans 7\.3\.0"):
        registrations(config, {ref: {"mindcluster": {"release": "26.0.0"}}})


def test_destroy_then_up(env: Path) -> None:
    cluster = Cluster()
    config = shipped_config("pytorch-process-recovery", env)
    cluster.up("w", registrations(config))
    claims = {k: v for k, v in cluster.objects.items() if k.startswith("PersistentVolumeClaim/")}
    cluster.destroy("w")
    assert claims and all(k in cluster.objects for k in claims), "destroy deleted a claim"
    assert not [k for k in cluster.objects if k.startswith("AscendJob/")]
    cluster.up("w", registrations(config))  # the kept namespace, volumes and claims are taken over
    assert {k: cluster.objects[k] for k in claims} == claims


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


def test_a_job_removed_and_added_back(env: Path) -> None:
    cluster = Cluster()
    config = shipped_config("pytorch-process-recovery", env)
    both = {**config, f"{PROJECT}:profile": str(two_jobs(env)), f"{PROJECT}:imageRegistry": "registry.example.com/ai"}
    cluster.up("w", registrations(both))
    first = dict(cluster.objects)
    cluster.up("w", registrations(config))  # the second job removed: its job goes, its claims stay
    assert "AscendJob/training/aaa-second" not in cluster.objects
    assert "PersistentVolumeClaim/training/aaa-second-checkpoints" in cluster.objects
    cluster.up("w", registrations(both))  # and added back: the kept claims are taken over
    assert (
        cluster.objects["PersistentVolumeClaim/training/aaa-second-checkpoints"]
        == (first["PersistentVolumeClaim/training/aaa-second-checkpoints"])
    )
    assert (
        cluster.objects["PersistentVolumeClaim/training/llama-pretrain-checkpoints"]
        == (first["PersistentVolumeClaim/training/llama-pretrain-checkpoints"])
    )


def test_without_upsert_a_kept_claim_blocks_the_job_coming_back(env: Path) -> None:
    """The provider behaviour the two tests above rely on: a client-side create of a kept object fails."""
    cluster = Cluster()
    config = shipped_config("pytorch-process-recovery", env)
    regs = registrations(config)
    cluster.up("w", regs)
    cluster.destroy("w")
    for r in regs:
        if r.type == "pulumi:providers:kubernetes":
            r.inputs.pop("upsertExistingObjects", None)
    with pytest.raises(AlreadyExists, match=r"Namespace/training|PersistentVolume"):
        cluster.up("w", regs)


# --- what MindCluster owns, waits, images, outputs ------------------------------------------------


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
