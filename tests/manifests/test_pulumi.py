"""MindClusterScheduler and the Pulumi program under Pulumi mocks (no CLI, no cluster).

Mocks are installed before ``components`` is imported (testinfra.md section 6); the inputs the
mocks receive are the manifests the provider would apply, so they are validated too.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, cast

import pulumi
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SECRET_SIG = "4dabf18193072939515e22adb298388d"  # pulumi's marker of a secret value in inputs


def pulumi_test(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``pulumi.runtime.test`` (untyped in the SDK) with a type, so the tests stay checked."""
    decorate: Callable[[Callable[..., Any]], Callable[..., Any]] = pulumi.runtime.test
    return decorate(fn)


def depends_on(options: pulumi.ResourceOptions) -> List[Any]:
    """The resources a child was told to wait for (a plain list in this component)."""
    return list(cast(List[Any], options.depends_on or []))


class Mocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.resources: List[pulumi.runtime.MockResourceArgs] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> Any:
        self.resources.append(args)
        return [f"{args.name}_id", dict(args.inputs)]

    def call(self, args: pulumi.runtime.MockCallArgs) -> Any:
        return {}

    def kubernetes(self) -> List[pulumi.runtime.MockResourceArgs]:
        return [r for r in self.resources if r.typ.startswith("kubernetes:")]


MOCKS = Mocks()
pulumi.runtime.set_mocks(MOCKS, preview=False)

from components import MindClusterScheduler, MindClusterSchedulerArgs  # noqa: E402
from components.scheduler import TYPE_TOKEN  # noqa: E402
from resumable.manifests import build_stack  # noqa: E402
from resumable.releases import STACK_RELEASES, VOLCANO_BUILDS  # noqa: E402

from .plans import scheduler_plan  # noqa: E402


def settled(component: MindClusterScheduler, check: Any) -> Any:
    """Run ``check`` once every child has been registered with the mocks."""
    outputs = [r.urn for r in component.resources.values()]
    return pulumi.Output.all(*outputs).apply(check)


def inputs_of(kind: str, name: str) -> Dict[str, Any]:
    for r in MOCKS.kubernetes():
        if r.inputs.get("kind") == kind and r.inputs.get("metadata", {}).get("name") == name:
            return dict(r.inputs)
    raise AssertionError(f"{kind}/{name} was not registered")


def container_args(obj: Dict[str, Any]) -> str:
    return " ".join(obj["spec"]["template"]["spec"]["containers"][0]["args"])


@pytest.fixture
def fresh() -> None:
    MOCKS.resources.clear()


@pulumi_test
def test_children_parented_and_ordered(fresh: None) -> Any:
    component = MindClusterScheduler("mc", MindClusterSchedulerArgs(scheduler_plan("7.3.0", "1.9.0")))
    stage_keys = _stage_keys(component)
    stage_resources = [[component.resources[key] for key in keys] for keys in stage_keys]

    for index, keys in enumerate(stage_keys):
        expected = stage_resources[index - 1] if index else []
        for key in keys:
            options = component.child_options[key]
            assert options.parent is component, key
            assert depends_on(options) == expected, key

    def check(urns: List[str]) -> None:
        assert all(f"{TYPE_TOKEN}$kubernetes:" in urn for urn in urns), "child not parented to the component"
        registered = {(r.inputs["kind"], r.inputs["metadata"]["name"]) for r in MOCKS.kubernetes()}
        assert ("Deployment", "volcano-scheduler") in registered
        assert ("CustomResourceDefinition", "ascendjobs.mindxdl.gitee.com") in registered
        assert len(MOCKS.kubernetes()) == len(component.resources)

    return settled(component, check)


def _stage_keys(component: MindClusterScheduler) -> List[List[str]]:
    from components.scheduler import object_key

    return [[object_key(o) for o in stage.objects] for stage in component.stages]


@pytest.mark.parametrize("release", list(STACK_RELEASES))
@pulumi_test
def test_component_for_each_release(fresh: None, release: str) -> Any:
    import kubernetes_validate

    volcano = STACK_RELEASES[release].default_volcano
    plan = scheduler_plan(release, volcano, kubernetes=VOLCANO_BUILDS[volcano].kubernetes_max)
    component = MindClusterScheduler(f"rel-{release}", MindClusterSchedulerArgs(plan))

    def check(_: Any) -> None:
        registered = MOCKS.kubernetes()
        assert len(registered) == len(build_stack(plan))
        for r in registered:
            kubernetes_validate.validate(dict(r.inputs), plan.kubernetes, strict=True)
        ds = next(r.inputs for r in registered if r.inputs["kind"] == "DaemonSet" and "device-plugin" in r.name)
        assert "-hotReset=2" in container_args(ds)
        assert "-reportInterval=5" in container_args(inputs_of("DaemonSet", "noded"))
        conf = inputs_of("ConfigMap", "volcano-scheduler-configmap")["data"]["volcano-scheduler.conf"]
        assert "grace-over-time: '900'" in conf and f"volcano-npu_v{release}_linux-aarch64" in conf

    return settled(component, check)


@pulumi_test
def test_volcano_before_operator_before_clusterd(fresh: None) -> Any:
    component = MindClusterScheduler("order", MindClusterSchedulerArgs(scheduler_plan("26.1.0", "1.12.0")))
    opts = component.child_options
    volcano = component.resources["Deployment/volcano-system/volcano-controllers"]
    operator = component.resources["Deployment/mindx-dl/ascend-operator-manager"]
    assert volcano in depends_on(opts["Deployment/mindx-dl/ascend-operator-manager"])
    assert operator in depends_on(opts["Deployment/mindx-dl/clusterd"])
    clusterd = component.resources["Deployment/mindx-dl/clusterd"]
    assert clusterd in depends_on(opts["DaemonSet/kube-system/ascend-device-plugin-daemonset"])
    return settled(component, lambda _: None)


@pulumi_test
def test_registered_manifests_are_valid_and_carry_resilience_settings(fresh: None) -> Any:
    import kubernetes_validate

    plan = scheduler_plan(
        "26.0.0",
        "1.9.0",
        grace_over_time=1200,
        report_interval=7,
    )
    component = MindClusterScheduler("res", MindClusterSchedulerArgs(plan))

    def check(_: Any) -> None:
        for r in MOCKS.kubernetes():
            kubernetes_validate.validate(dict(r.inputs), "1.28", strict=True)
        ds = inputs_of("DaemonSet", "ascend-device-plugin-daemonset-910")
        assert "-hotReset=2" in container_args(ds) and "-volcanoType=true" in container_args(ds)
        assert "-listWatchPeriod=5" in container_args(ds)
        assert "-reportInterval=7" in container_args(inputs_of("DaemonSet", "noded"))
        conf = inputs_of("ConfigMap", "volcano-scheduler-configmap")["data"]["volcano-scheduler.conf"]
        assert "grace-over-time: '1200'" in conf
        assert "volcano-npu_v26.0.0_linux-aarch64" in conf
        svc = inputs_of("Service", "clusterd-grpc-svc")
        assert svc["spec"]["ports"][0]["port"] == 8899

    return settled(component, check)


@pulumi_test
def test_verbatim_crds_from_the_release_files(fresh: None) -> Any:
    import kubernetes_validate

    from .upstream import release_dir

    root = release_dir("7.3.0")
    sources = [str(root / "ascend-operator.yaml"), str(root / "volcano-v1.9.0.yaml")]
    component = MindClusterScheduler(
        "verbatim", MindClusterSchedulerArgs(scheduler_plan("7.3.0", "1.9.0"), crd_sources=sources)
    )

    def check(_: Any) -> None:
        crd = inputs_of("CustomResourceDefinition", "ascendjobs.mindxdl.gitee.com")
        spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        template = spec["properties"]["replicaSpecs"]["additionalProperties"]["properties"]["template"]
        assert "properties" in template, "the full upstream PodTemplateSpec schema was not deployed"
        assert "status" not in crd
        kubernetes_validate.validate(crd, "1.28", strict=True)

    return settled(component, check)


def test_unsupported_plan_fails_at_preview() -> None:
    with pytest.raises(pulumi.RunError, match=r"Volcano 1.12.0 is not shipped with MindCluster 7.3.0"):
        MindClusterScheduler("bad", MindClusterSchedulerArgs(scheduler_plan("7.3.0", "1.12.0")))


@pulumi_test
def test_pull_secret_data_is_a_secret(fresh: None) -> Any:
    plan = scheduler_plan(image_pull_secrets=["regcred"])
    args = MindClusterSchedulerArgs(plan, docker_config_json='{"auths": {}}')
    component = MindClusterScheduler("sec", args)

    def check(_: Any) -> None:
        secrets = [r for r in MOCKS.kubernetes() if r.inputs.get("kind") == "Secret"]
        assert sorted(s.inputs["metadata"]["namespace"] for s in secrets) == sorted(
            ["volcano-system", "mindx-dl", "kube-system", "npu-exporter"]
        )
        for s in secrets:
            assert s.inputs["type"] == "kubernetes.io/dockerconfigjson"
            assert SECRET_SIG in s.inputs["stringData"], "pull secret content is not marked secret"
        ds = inputs_of("DaemonSet", "noded")
        assert ds["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "regcred"}]

    return settled(component, check)


def test_pull_secret_without_a_name_is_refused() -> None:
    args = MindClusterSchedulerArgs(scheduler_plan(), docker_config_json="{}")
    with pytest.raises(pulumi.RunError, match="image_pull_secrets"):
        MindClusterScheduler("nosecretname", args)


# --- the program (__main__.py) ----------------------------------------------------------------------


def run_program(config: Dict[str, str]) -> Any:
    pulumi.runtime.set_all_config({f"project:{k}": v for k, v in config.items()})
    try:
        return runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")
    finally:
        pulumi.runtime.set_all_config({})


def _example() -> Optional[Path]:
    path = ROOT / "examples" / "pytorch-process-recovery.yaml"
    return path if path.exists() else None


@pulumi_test
def test_program_deploys_the_example_profile(fresh: None) -> Any:
    example = _example()
    if example is None:
        pytest.skip("examples/pytorch-process-recovery.yaml not present")
    program = run_program({"profile": str(example)})
    stack = program["stack"]

    def check(_: Any) -> None:
        assert not [r for r in MOCKS.resources if r.typ == "pulumi:providers:kubernetes"]
        ds = inputs_of("DaemonSet", "ascend-device-plugin-daemonset-910")
        assert "-hotReset=2" in container_args(ds)

    return settled(stack, check)


@pulumi_test
def test_program_makes_one_provider_from_config(fresh: None) -> Any:
    example = _example()
    if example is None:
        pytest.skip("examples/pytorch-process-recovery.yaml not present")
    program = run_program({"profile": str(example), "context": "ascend-prod"})
    stack = program["stack"]

    def check(_: Any) -> None:
        providers = [r for r in MOCKS.resources if r.typ == "pulumi:providers:kubernetes"]
        assert len(providers) == 1 and providers[0].inputs.get("context") == "ascend-prod"
        children = MOCKS.kubernetes()
        assert children and all(r.provider and "pulumi:providers:kubernetes" in r.provider for r in children)

    return settled(stack, check)


def test_program_reports_a_bad_profile_as_one_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("cluster:\n  name: x\n  mindcluster: '7.3.0'\n  no_such_key: 1\n")
    with pytest.raises(pulumi.RunError, match=r"bad.yaml: cluster: unknown key"):
        run_program({"profile": str(bad)})


def test_program_lists_the_violations_of_an_invalid_profile(tmp_path: Path) -> None:
    import yaml

    example = _example()
    if example is None:
        pytest.skip("examples/pytorch-process-recovery.yaml not present")
    profile = yaml.safe_load(example.read_text())
    recovery = profile["jobs"][0].setdefault("recovery", {})
    recovery["fault_retry_times"] = 3
    recovery["restart_policy"] = "OnFailure"  # fault-retry-times needs Never (YAMLCFG)
    bad = tmp_path / "invalid.yaml"
    bad.write_text(yaml.safe_dump(profile))
    pattern = r"invalid \(1 error, 0 warnings\): ERROR \[retry-restart-policy\]"
    with pytest.raises(pulumi.RunError, match=pattern) as info:
        run_program({"profile": str(bad)})
    assert "\n" not in str(info.value)
