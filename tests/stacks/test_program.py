"""The Pulumi program (__main__.py) under mocks, once per example stack (Pulumi.<name>.yaml).

Expectations are written out here per example (what the profile asks for, read by a person, not
computed by the builders): the workload namespaces, shared volumes and claims, ConfigMaps, job
kind and replicas, and whether the image is built (and pushed where) or taken from config.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional, Set

import pulumi
import pytest
from conftest import EXAMPLE_FILES, ROOT
from manifests.crdschema import validate_cr
from manifests.facts import first, load_objects
from manifests.upstream import release_dir

from .pulumi_mocks import (
    SECRET_SIG,
    image_digest,
    install_program,
    kubernetes_objects,
    pulumi_test,
    registered,
    reset,
    run_program,
    shipped_config,
    stack_config,
    stack_files,
)


class Expected(NamedTuple):
    release: str  # the upstream folder whose CRDs the custom resources must satisfy
    kube: str
    namespaces: Set[str]  # created for the jobs
    volumes: Set[str]  # PersistentVolumes (NFS)
    claims: Set[str]  # namespace/name
    config_maps: Set[str]  # namespace/name
    job: str  # Kind/namespace/name
    replicas: Dict[str, int]
    built: Optional[str]  # the tag pushed, None: a prebuilt reference from config
    role: str = "all"  # stackRole: all, or workload on the ascend-a2-cluster stack


EXPECTED: Dict[str, Expected] = {
    "pytorch-process-recovery": Expected(
        "7.3.0",
        "1.28",
        {"training"},
        {"llama-pretrain-op-cache-training", "llama-pretrain-checkpoints-training"},
        {"training/llama-pretrain-op-cache", "training/llama-pretrain-checkpoints"},
        {
            "training/resumable-image-llama-pretrain",
            "training/resumable-profile-llama-pretrain",
            "training/reset-config-llama-pretrain",
        },
        "AscendJob/training/llama-pretrain",
        {"Master": 1, "Worker": 3},
        "registry.example.com/ai/mindspeed-llm:2.3.0",
        "workload",
    ),
    "mindspore-process-recovery": Expected(
        "7.3.0",
        "1.28",
        {"training"},
        set(),
        {"training/qwen-mindformers-op-cache", "training/qwen-mindformers-checkpoints"},
        {
            "training/resumable-image-qwen-mindformers",
            "training/resumable-profile-qwen-mindformers",
            "training/reset-config-qwen-mindformers",
        },
        "AscendJob/training/qwen-mindformers",
        {"Scheduler": 1, "Worker": 1},  # the Scheduler has NPUs and is msrun node 0 (issue 14)
        "registry.example.com/ai/qwen-mindformers:7.3.0",
        "workload",
    ),
    "pytorch-pod-rescheduling": Expected(
        "7.3.0",
        "1.28",
        {"training"},
        {"gpt-pod-level-checkpoints-training"},
        {"training/gpt-pod-level-checkpoints"},
        {
            "training/resumable-image-gpt-pod-level",
            "training/resumable-profile-gpt-pod-level",
            "training/reset-config-gpt-pod-level",
        },
        "AscendJob/training/gpt-pod-level",
        {"Master": 1, "Worker": 1},
        "registry.example.com/ai/gpt-pod-level:7.3.0",
        "workload",
    ),
    "job-level-minimal": Expected(
        "6.0.0",
        "1.25",
        set(),
        {"bert-job-level-checkpoints-default"},
        {"default/bert-job-level-checkpoints"},
        {"default/resumable-image-bert-job-level", "default/resumable-profile-bert-job-level"},
        "AscendJob/default/bert-job-level",
        {"Master": 1, "Worker": 1},
        None,
    ),
    "legacy-6.0-pod-rescheduling": Expected(
        "6.0.0",
        "1.25",
        set(),
        {"llama2-legacy-checkpoints-default"},
        {"default/llama2-legacy-checkpoints"},
        {
            "default/resumable-image-llama2-legacy",
            "default/resumable-profile-llama2-legacy",
            "default/reset-config-llama2-legacy",
        },
        "AscendJob/default/llama2-legacy",
        {"Master": 1, "Worker": 1},
        None,
    ),
}
#: cluster.name of each example (the provider's clusterIdentifier)
CLUSTER_NAMES = {
    "pytorch-process-recovery": "a2-cluster",
    "mindspore-process-recovery": "a2-ms",
    "pytorch-pod-rescheduling": "a2-pod",
    "job-level-minimal": "ascend",
    "legacy-6.0-pod-rescheduling": "ascend",
}
ALL_STACKS = [p.name[len("Pulumi.") : -len(".yaml")] for p in stack_files()]
#: the stacks of one cluster's scheduling stack (stackRole cluster), with the profile they take it from
CLUSTER_STACKS = {"ascend-a2-cluster": "pytorch-process-recovery"}
#: the stacks that deploy jobs, one per example
STACKS = [n for n in ALL_STACKS if n not in CLUSTER_STACKS]


def test_one_stack_per_example() -> None:
    examples = [p.stem for p in EXAMPLE_FILES]
    assert sorted(STACKS) == examples
    assert sorted(EXPECTED) == examples
    for name in STACKS:
        config = stack_config(ROOT / f"Pulumi.{name}.yaml")
        assert config["ascend-resumable:profile"] == f"examples/{name}.yaml"
        assert config.get("ascend-resumable:stackRole", "all") == EXPECTED[name].role


def test_one_scheduling_stack_per_cluster() -> None:
    """Stacks on one kubeconfig context: at most one installs the scheduling stack; the others are
    workload stacks that reference it by name."""
    by_context: Dict[str, List[str]] = {}
    for name in ALL_STACKS:
        by_context.setdefault(stack_config(ROOT / f"Pulumi.{name}.yaml")["ascend-resumable:context"], []).append(name)
    for context, names in by_context.items():
        roles = {n: stack_config(ROOT / f"Pulumi.{n}.yaml").get("ascend-resumable:stackRole", "all") for n in names}
        installers = [n for n, role in roles.items() if role in ("all", "cluster")]
        assert len(installers) == 1, f"context {context}: {installers} all install the scheduling stack"
        for n, role in roles.items():
            if role == "workload":
                ref = stack_config(ROOT / f"Pulumi.{n}.yaml")["ascend-resumable:clusterStack"]
                assert ref.rsplit("/", 1)[1] == installers[0], f"{n} references {ref}, not {installers[0]}"


def test_default_providers_disabled_and_requirements_beside_the_project() -> None:
    import yaml

    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    assert project["config"]["pulumi:disable-default-providers"]["value"] == ["kubernetes"]
    assert project["runtime"]["options"] == {"toolchain": "pip", "virtualenv": ".venv"}
    reqs = [line.split("==")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    assert {"pulumi", "pulumi-kubernetes", "pulumi-docker-build", "-e ."} <= set(reqs)
    # optional secrets are not declared: a declared secret key is required in every stack (or its
    # default, which is never encrypted, fails the CLI's secret check: pkg/workspace/config.go:128)
    for key in ("kubeconfig", "dockerConfigJson", "registryPassword"):
        assert key not in project["config"]


@pytest.fixture
def program(monkeypatch: Any, tmp_path: Path) -> Any:
    reset()
    install_program(monkeypatch, tmp_path)

    def run(name: str, extra: Optional[Dict[str, Any]] = None, secrets: Optional[List[str]] = None) -> Any:
        config = {**shipped_config(name, tmp_path), **(extra or {})}
        return run_program(config, secrets)["deployment"]

    return run


def done(deployment: Dict[str, Any], check: Any) -> Any:
    """Run ``check`` once every child of every component is registered."""
    children: List[Any] = []
    for part in ("scheduler", "storage", "jobs"):
        if deployment[part] is not None:  # a workload stack has no scheduler, a cluster stack no jobs
            children += list(deployment[part].resources.values())
    children += [i.image for i in deployment["images"].values() if i.image is not None]
    waits = [c.urn for c in children] + [i.ref for i in deployment["images"].values()]
    return pulumi.Output.all(*waits).apply(check)


def is_training_job(r: Any) -> bool:
    """An AscendJob or a Volcano Job (not a batch/v1 Job that prepares the storage)."""
    return bool(r.inputs["kind"] == "AscendJob" or r.inputs["apiVersion"] == "batch.volcano.sh/v1alpha1")


def is_storage_prepare(r: Any) -> bool:
    return bool(r.inputs["apiVersion"] == "batch/v1" and r.inputs["kind"] == "Job")


def keys(kind: str) -> Set[str]:
    out = set()
    for r in kubernetes_objects():
        if r.inputs["kind"] == kind:
            meta = r.inputs["metadata"]
            out.add(f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"])
    return out


def components_of(type_suffix: str) -> List[Any]:
    return [r for r in registered() if r.type.endswith(type_suffix)]


@pytest.mark.parametrize("name", STACKS)
@pulumi_test
def test_resource_graph(program: Any, name: str) -> Any:
    exp = EXPECTED[name]
    deployment = program(name)

    def check(_: Any) -> None:
        by_type: Dict[str, int] = {}
        for r in registered():
            by_type[r.type] = by_type.get(r.type, 0) + 1
        assert by_type["pulumi:providers:kubernetes"] == 1  # the one explicit provider
        assert by_type.get("ascend-resumable:stack:MindClusterScheduler", 0) == (1 if exp.role == "all" else 0)
        assert by_type["ascend-resumable:stack:SharedStorage"] == 1
        assert by_type["ascend-resumable:stack:TrainingJobs"] == 1
        assert by_type["ascend-resumable:stack:RuntimeImage"] == 1
        assert by_type.get("docker-build:index:Image", 0) == (1 if exp.built else 0)
        created_ns = keys("Namespace") - {"mindx-dl", "cluster-system", "volcano-system", "npu-exporter"}
        if exp.role == "workload":  # nothing cluster-wide: no CRD, no scheduler, no agent
            assert {r.inputs["kind"] for r in kubernetes_objects()} <= {
                "Namespace",
                "PersistentVolume",
                "PersistentVolumeClaim",
                "ConfigMap",
                "AscendJob",
                "Job",
                "Secret",
            }
            assert created_ns == exp.namespaces
        assert created_ns - {"volcano-monitoring"} == exp.namespaces
        assert keys("PersistentVolume") == exp.volumes
        assert keys("PersistentVolumeClaim") == exp.claims
        stack_cms = {
            k for k in keys("ConfigMap") if k.split("/")[0] in ("volcano-system", "mindx-dl", "cluster-system")
        }
        assert keys("ConfigMap") - stack_cms == exp.config_maps
        jobs = [r for r in kubernetes_objects() if is_training_job(r)]
        assert [r.key for r in jobs] == [exp.job]
        assert {k: v["replicas"] for k, v in jobs[0].inputs["spec"]["replicaSpecs"].items()} == exp.replicas

    return done(deployment, check)


@pytest.mark.parametrize("name", STACKS)
@pulumi_test
def test_wiring_provider_parents_dependencies_retain(program: Any, name: str) -> Any:
    deployment = program(name)

    def check(_: Any) -> None:
        regs = registered()
        (provider,) = [r for r in regs if r.type == "pulumi:providers:kubernetes"]
        assert provider.request.name == "kubernetes"
        # server-side apply stays the provider's default (a create takes a kept object over)
        assert "enableServerSideApply" not in provider.inputs
        # a changed ConfigMap is updated in place, not deleted under the job that mounts it
        assert provider.inputs["enableConfigMapMutable"] == "true"
        assert provider.inputs["clusterIdentifier"] == CLUSTER_NAMES[name]
        urns = {r.type: r.urn for r in regs if r.type.startswith("ascend-resumable:")}
        kept = ("Namespace", "CustomResourceDefinition", "Queue", "PersistentVolume", "PersistentVolumeClaim")
        for r in kubernetes_objects():
            assert r.request.provider.startswith(provider.urn + "::"), f"{r.key} not on the stack's provider"
            # a take-over followed by the delete of the old object would delete what it took over
            assert bool(r.request.deleteBeforeReplace) or r.inputs["kind"] not in kept, r.key
            assert r.request.parent in urns.values(), f"{r.key} is not a component's child"
        objs = {r.key: r for r in kubernetes_objects()}
        job = next(r for r in kubernetes_objects() if is_training_job(r))
        waits = set(job.request.dependencies)
        needs = ("CustomResourceDefinition/ascendjobs.mindxdl.gitee.com", "Deployment/mindx-dl/ascend-operator-manager")
        for needed in needs if EXPECTED[name].role == "all" else ():
            assert objs[needed].urn in waits, f"{job.key} does not wait for {needed}"
        for claim in keys("PersistentVolumeClaim"):
            assert objs["PersistentVolumeClaim/" + claim].urn in waits, f"{job.key} does not wait for {claim}"
        for prepare in [r for r in kubernetes_objects() if is_storage_prepare(r)]:
            assert prepare.urn in waits, f"{job.key} does not wait for {prepare.key} (its directories on the export)"
        if EXPECTED[name].role == "workload":  # no object before the cluster stack's release is checked
            for component in [r for r in regs if r.type.startswith("ascend-resumable:")]:
                refs = [u for u in component.request.dependencies if "pulumi:pulumi:StackReference::" in u]
                assert refs, (
                    f"{component.type} {component.request.name} does not wait for the cluster stack's release check"
                )
        for key, r in objs.items():  # one node that cannot run an agent must not hold back the jobs
            if r.inputs["kind"] == "DaemonSet":
                assert r.urn not in waits, f"{job.key} waits for {key}"
        for cm in [r for r in kubernetes_objects() if r.request.parent == job.request.parent]:
            if cm.inputs["kind"] == "ConfigMap" and cm.key.split("/")[1] == job.key.split("/")[1]:
                assert cm.urn in job.request.dependencies, f"{job.key} does not wait for {cm.key}"
        for key, r in objs.items():
            kind = r.inputs["kind"]
            keep = kind in (
                "Namespace",
                "CustomResourceDefinition",
                "Queue",
                "PersistentVolume",
                "PersistentVolumeClaim",
            )
            keep = keep or is_storage_prepare(r)
            assert bool(r.request.retainOnDelete) == keep, key
            if kind == "PersistentVolumeClaim" and r.inputs["spec"].get("volumeName"):
                pv = objs["PersistentVolume/" + r.inputs["spec"]["volumeName"]]
                assert pv.urn in r.request.dependencies

    return done(deployment, check)


@pytest.mark.parametrize("name", STACKS)
@pulumi_test
def test_job_runs_the_image_digest_or_the_configured_reference(program: Any, name: str) -> Any:
    exp = EXPECTED[name]
    config = stack_config(ROOT / f"Pulumi.{name}.yaml")
    deployment = program(name)
    (job_name,) = list(deployment["images"])

    def check(_: Any) -> None:
        built = [r for r in registered() if r.type == "docker-build:index:Image"]
        if exp.built:
            (image,) = built
            assert image.inputs["tags"] == [exp.built]
            assert image.inputs["push"] is True
            wanted = f"{exp.built}@{image_digest(image.request.name)}"
            arch = "linux/arm64" if "arch: aarch64" in (ROOT / f"examples/{name}.yaml").read_text() else "linux/amd64"
            assert image.inputs["platforms"] == [arch]
        else:
            assert built == []
            wanted = config["ascend-resumable:images"][job_name]
        job = next(r for r in kubernetes_objects() if is_training_job(r))
        for spec in job.inputs["spec"]["replicaSpecs"].values():
            assert spec["template"]["spec"]["containers"][0]["image"] == wanted
        record = next(r for r in kubernetes_objects() if r.key.endswith("/resumable-image-" + job_name))
        assert f'"image": "{wanted}"' in record.inputs["data"]["build.json"]

    return done(deployment, check)


@pytest.mark.parametrize("name", STACKS)
@pulumi_test
def test_every_object_validates(program: Any, name: str) -> Any:
    import kubernetes_validate

    exp = EXPECTED[name]
    root = release_dir(exp.release)
    crds = {
        "AscendJob": first(load_objects(root / "ascend-operator.yaml"), "CustomResourceDefinition"),
        "Job": first(load_objects(root / "volcano-v1.9.0.yaml"), "CustomResourceDefinition", "jobs.batch.volcano.sh"),
    }
    queue_crd = first(
        load_objects(root / "volcano-v1.9.0.yaml"), "CustomResourceDefinition", "queues.scheduling.volcano.sh"
    )
    deployment = program(name)

    def check(_: Any) -> None:
        for r in kubernetes_objects():
            obj = dict(r.inputs)
            if obj["kind"] in crds and obj["apiVersion"].endswith(("mindxdl.gitee.com/v1", "volcano.sh/v1alpha1")):
                assert validate_cr(obj, crds[obj["kind"]]) == [], r.key
            elif obj["kind"] == "Queue":  # the stack's queue (D18): against Volcano's own CRD
                assert validate_cr(obj, queue_crd) == [], r.key
            else:
                kubernetes_validate.validate(obj, exp.kube, strict=True)

    return done(deployment, check)


@pulumi_test
def test_secrets_stay_secret(program: Any) -> Any:
    deployment = program(
        "mindspore-process-recovery",
        {
            "kubeconfig": "apiVersion: v1\nkind: Config\n",
            "registryUsername": "robot-ascend",
            "registryPassword": "hunter2",
        },
        secrets=["kubeconfig", "registryPassword"],
    )

    def check(_: Any) -> None:
        provider = next(r for r in registered() if r.type == "pulumi:providers:kubernetes")
        assert SECRET_SIG in str(provider.inputs.get("kubeconfig"))
        image = next(r for r in registered() if r.type == "docker-build:index:Image")
        registries = image.inputs["registries"]
        assert SECRET_SIG in registries, "the registry password travels in plain text"
        (registry,) = registries["value"]
        assert registry["address"] == "registry.example.com" and registry["username"] == "robot-ascend"
        # the training pods pull with the same login, from a Secret whose content stays secret
        secret = next(r for r in kubernetes_objects() if r.key == "Secret/training/qwen-mindformers-registry")
        assert SECRET_SIG in str(secret.inputs["stringData"])
        job = next(r for r in kubernetes_objects() if r.inputs["kind"] == "AscendJob")
        assert secret.urn in job.request.dependencies
        for spec in job.inputs["spec"]["replicaSpecs"].values():
            assert spec["template"]["spec"]["imagePullSecrets"] == [{"name": "qwen-mindformers-registry"}]
        # the login is for the registry the image is pushed to and pulled from
        content = secret.inputs["stringData"]["value"]  # a secret on the wire: {SECRET_SIG: ..., "value": ...}
        auths = json.loads(content[".dockerconfigjson"])["auths"]
        assert auths == {
            "registry.example.com": {
                "username": "robot-ascend",
                "password": "hunter2",
                "auth": "cm9ib3QtYXNjZW5kOmh1bnRlcjI=",
            }
        }

    return done(deployment, check)
