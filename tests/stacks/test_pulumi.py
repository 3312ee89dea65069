"""MindClusterScheduler under Pulumi mocks, checked against independent expectations.

The objects the component registers are compared with the upstream release manifests
(../shared/upstream, read here, never by the builders), the wiring with what the engine receives
(tests/stacks/pulumi_mocks.py records every RegisterResource request), and the lifecycle
options with hand-written tables of this project's decisions (docs/pulumi.md).
"""

from __future__ import annotations

from typing import Any, Dict, List, Set

import pulumi
import pytest
from manifests.facts import key_of, load_objects
from manifests.plans import scheduler_plan
from manifests.upstream import release_dir

from resumable.releases import STACK_RELEASES, VOLCANO_BUILDS
from resumable_pulumi import MindClusterScheduler, MindClusterSchedulerArgs
from resumable_pulumi.scheduler import TYPE_TOKEN

from .pulumi_mocks import MOCKS, SECRET_SIG, by_key, kubernetes_objects, pulumi_test, reset, settled

#: Namespaces upstream leaves to the user (INST01 "Creating a Namespace"), created by the stack.
HAND_MADE_NAMESPACES = {"Namespace/mindx-dl", "Namespace/cluster-system"}
#: the Volcano queues the jobs name, created with the stack (D18; upstream leaves them to Volcano)
STACK_QUEUES = {"Queue/default"}
#: The device plugin objects upstream renamed in 26.1 (ascendplugin-volcano.yaml at v26.0.0 vs v26.1.0).
RENAMED_26_1 = {
    "ServiceAccount/kube-system/ascend-device-plugin-sa": "ServiceAccount/kube-system/ascend-device-plugin-sa-910",
    "ClusterRole/pods-node-ascend-device-plugin-role": "ClusterRole/pods-node-ascend-device-plugin-role-910",
    "ClusterRoleBinding/pods-node-ascend-device-plugin-rolebinding": (
        "ClusterRoleBinding/pods-node-ascend-device-plugin-rolebinding-910"
    ),
    "DaemonSet/kube-system/ascend-device-plugin-daemonset": "DaemonSet/kube-system/ascend-device-plugin-daemonset-910",
}
#: Install order (INST05, INST06, INST08): each object waits for the ones listed.
MUST_WAIT_FOR = {
    "CustomResourceDefinition/ascendjobs.mindxdl.gitee.com": ["Namespace/mindx-dl"],
    "Deployment/volcano-system/volcano-scheduler": ["CustomResourceDefinition/jobs.batch.volcano.sh"],
    "Deployment/mindx-dl/ascend-operator-manager": [
        "Deployment/volcano-system/volcano-scheduler",
        "Deployment/volcano-system/volcano-controllers",
    ],
    "Deployment/mindx-dl/clusterd": ["Deployment/mindx-dl/ascend-operator-manager"],
    "DaemonSet/mindx-dl/noded": ["Deployment/mindx-dl/clusterd"],
}


def key_string(obj: Dict[str, Any]) -> str:
    kind, ns, name = key_of(obj)
    return f"{kind}/{ns}/{name}" if ns else f"{kind}/{name}"


def upstream_keys(release: str, volcano: str) -> Set[str]:
    root = release_dir(release)
    files = ["ascend-operator.yaml", "clusterd.yaml", "ascendplugin-volcano.yaml", "noded.yaml", "npu-exporter.yaml"]
    out: Set[str] = set()
    for name in [f"volcano-v{volcano}.yaml", *files]:
        out |= {key_string(o) for o in load_objects(root / name)}
    return out


def alias_names(request: Any) -> List[str]:
    return [a.spec.name for a in request.aliases if a.spec.name]


@pytest.fixture(autouse=True)
def fresh() -> None:
    reset()


def component(name: str, **kwargs: Any) -> MindClusterScheduler:
    return MindClusterScheduler(name, MindClusterSchedulerArgs(**kwargs))


def done(c: MindClusterScheduler, check: Any) -> Any:
    return settled(list(c.resources.values()), check)


@pytest.mark.parametrize("release", list(STACK_RELEASES))
@pulumi_test
def test_registers_what_upstream_ships(release: str) -> Any:
    """Per release, exactly the objects of the upstream files plus the two hand-made namespaces;
    every one parented to the component and valid for the Kubernetes version."""
    import kubernetes_validate

    volcano = STACK_RELEASES[release].default_volcano
    expected = upstream_keys(release, volcano) | HAND_MADE_NAMESPACES | STACK_QUEUES
    kube = VOLCANO_BUILDS[volcano].kubernetes_max
    c = component(f"rel-{release}", scheduler=scheduler_plan(release, volcano, kubernetes=kube))

    def check(_: Any) -> None:
        objs = kubernetes_objects()
        assert sorted(r.key for r in objs) == sorted(expected)
        for r in objs:
            assert f"{TYPE_TOKEN}$kubernetes:" in r.urn, r.key
            assert r.request.parent.endswith(f"{TYPE_TOKEN}::rel-{release}"), r.key
            if r.inputs["kind"] != "Queue":  # a custom resource: no schema in kubernetes-validate
                kubernetes_validate.validate(dict(r.inputs), kube, strict=True)

    return done(c, check)


@pulumi_test
def test_install_order_reaches_the_engine() -> Any:
    c = component("order", scheduler=scheduler_plan("26.1.0", "1.12.0"))

    def check(_: Any) -> None:
        objs = by_key()
        for key, waits in MUST_WAIT_FOR.items():
            deps = set(objs[key].request.dependencies)
            for w in waits:
                assert objs[w].urn in deps, f"{key} does not wait for {w}"
        assert not objs["Namespace/mindx-dl"].request.dependencies

    return done(c, check)


@pytest.mark.parametrize("retain", [True, False])
@pulumi_test
def test_namespaces_and_crds_survive_destroy(retain: bool) -> Any:
    c = component("keep", scheduler=scheduler_plan("7.3.0", "1.9.0"), retain_on_delete=retain)

    def check(_: Any) -> None:
        kept = {r.key for r in kubernetes_objects() if r.request.retainOnDelete}
        wanted = {
            r.key
            for r in kubernetes_objects()
            if r.inputs["kind"] in ("Namespace", "CustomResourceDefinition", "Queue")
        }
        assert "CustomResourceDefinition/ascendjobs.mindxdl.gitee.com" in wanted
        assert kept == (wanted if retain else set())
        assert not any(r.request.protect for r in kubernetes_objects())

    return done(c, check)


@pulumi_test
def test_26_1_upgrade_aliases_the_renamed_device_plugin() -> Any:
    c = component("up", scheduler=scheduler_plan("26.1.0", "1.12.0"))

    def check(_: Any) -> None:
        objs = by_key()
        for new, old in RENAMED_26_1.items():
            request = objs[new].request
            assert alias_names(request) == ["up-" + old.replace("/", "-").lower()], new
        ds = objs["DaemonSet/kube-system/ascend-device-plugin-daemonset"].request
        assert ds.deleteBeforeReplace, "two device plugins per node during the upgrade"
        others = [r.key for r in kubernetes_objects() if alias_names(r.request) and r.key not in RENAMED_26_1]
        assert others == []

    return done(c, check)


@pulumi_test
def test_older_release_has_no_aliases() -> Any:
    c = component("old", scheduler=scheduler_plan("26.0.0", "1.9.0"))

    def check(_: Any) -> None:
        assert [r.key for r in kubernetes_objects() if alias_names(r.request)] == []
        # only the kept kinds (a create takes them over) are replaced delete-before-create
        replaced_first = {r.inputs["kind"] for r in kubernetes_objects() if r.request.deleteBeforeReplace}
        assert replaced_first == {"Namespace", "CustomResourceDefinition", "Queue"}

    return done(c, check)


@pulumi_test
def test_workloads_wait_a_bounded_time() -> Any:
    c = component("ready", scheduler=scheduler_plan("7.3.0", "1.9.0"), ready_timeout=120)

    def check(_: Any) -> None:
        for r in kubernetes_objects():
            timeouts = r.request.customTimeouts
            if r.inputs["kind"] in ("Deployment", "DaemonSet"):
                assert (timeouts.create, timeouts.update) == ("120s", "120s"), r.key
            else:
                assert not timeouts.create, r.key

    return done(c, check)


@pulumi_test
def test_registered_manifests_carry_the_resilience_settings() -> Any:
    plan = scheduler_plan("26.0.0", "1.9.0", grace_over_time=1200, report_interval=7)
    c = component("res", scheduler=plan)

    def check(_: Any) -> None:
        objs = by_key()
        ds = objs["DaemonSet/kube-system/ascend-device-plugin-daemonset-910"].inputs
        args = " ".join(ds["spec"]["template"]["spec"]["containers"][0]["args"])
        assert "-hotReset=2" in args and "-volcanoType=true" in args and "-listWatchPeriod=5" in args
        noded = objs["DaemonSet/mindx-dl/noded"].inputs
        assert "-reportInterval=7" in " ".join(noded["spec"]["template"]["spec"]["containers"][0]["args"])
        conf = objs["ConfigMap/volcano-system/volcano-scheduler-configmap"].inputs["data"]["volcano-scheduler.conf"]
        assert "grace-over-time: '1200'" in conf and "name: volcano-npu_v26.0.0\n" in conf
        assert objs["Service/mindx-dl/clusterd-grpc-svc"].inputs["spec"]["ports"][0]["port"] == 8899

    return done(c, check)


@pulumi_test
def test_verbatim_crds_from_the_release_files() -> Any:
    import kubernetes_validate

    root = release_dir("7.3.0")
    sources = [str(root / "ascend-operator.yaml"), str(root / "volcano-v1.9.0.yaml")]
    c = component("verbatim", scheduler=scheduler_plan("7.3.0", "1.9.0"), crd_sources=sources)

    def check(_: Any) -> None:
        crd = by_key()["CustomResourceDefinition/ascendjobs.mindxdl.gitee.com"].inputs
        spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        template = spec["properties"]["replicaSpecs"]["additionalProperties"]["properties"]["template"]
        assert "properties" in template, "the full upstream PodTemplateSpec schema was not deployed"
        assert "status" not in crd
        kubernetes_validate.validate(crd, "1.28", strict=True)

    return done(c, check)


def test_unsupported_plan_fails_at_preview() -> None:
    with pytest.raises(pulumi.RunError, match=r"Volcano 1.12.0 is not shipped with MindCluster 7.3.0"):
        component("bad", scheduler=scheduler_plan("7.3.0", "1.12.0"))


@pulumi_test
def test_pull_secret_data_is_a_secret() -> Any:
    c = component("sec", scheduler=scheduler_plan(image_pull_secrets=["regcred"]), docker_config_json='{"auths": {}}')

    def check(_: Any) -> None:
        secrets = [r for r in MOCKS.kubernetes() if r.inputs.get("kind") == "Secret"]
        assert sorted(s.inputs["metadata"]["namespace"] for s in secrets) == sorted(
            ["volcano-system", "mindx-dl", "kube-system", "npu-exporter"]
        )
        for s in secrets:
            assert s.inputs["type"] == "kubernetes.io/dockerconfigjson"
            assert SECRET_SIG in s.inputs["stringData"], "pull secret content is not marked secret"
        ds = by_key()["DaemonSet/mindx-dl/noded"].inputs
        assert ds["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "regcred"}]

    return done(c, check)


def test_pull_secret_without_a_name_is_refused() -> None:
    with pytest.raises(pulumi.RunError, match="image_pull_secrets"):
        component("nosecretname", scheduler=scheduler_plan(), docker_config_json="{}")
