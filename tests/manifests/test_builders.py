"""Behaviour of the stack builders: order, names, resilience settings, release differences."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest
import yaml

from resumable.constants import CLUSTERD_GRPC_PORT, CLUSTERD_SERVICE, LOG_ROOT
from resumable.manifests import build_stack, build_stages
from resumable.manifests.volcano import default_init_params
from resumable.plan.scheduler import volcano_plugin_name

from .facts import arg_tokens, effective_args, first
from .plans import scheduler_plan

Obj = Dict[str, Any]


def container(objects: List[Obj], kind: str, name: str) -> Obj:
    pod = first(objects, kind, name)["spec"]["template"]["spec"]
    c: Obj = pod["containers"][0]
    return c


def flags(objects: List[Obj], kind: str, name: str) -> Dict[str, str]:
    return effective_args(arg_tokens(container(objects, kind, name)))[1]


def scheduler_conf(objects: List[Obj]) -> Obj:
    cm = first(objects, "ConfigMap", "volcano-scheduler-configmap")
    conf: Obj = yaml.safe_load(cm["data"]["volcano-scheduler.conf"])
    return conf


def init_params(objects: List[Obj]) -> Dict[str, str]:
    for c in scheduler_conf(objects)["configurations"]:
        if c["name"] == "init-params":
            return dict(c["arguments"])
    raise AssertionError("no init-params")


def test_install_order_namespaces_crds_volcano_operator_clusterd_agents() -> None:
    stages = build_stages(scheduler_plan())
    assert [s.name for s in stages] == ["namespaces", "crds", "volcano", "ascend-operator", "clusterd", "node-agents"]
    objects = build_stack(scheduler_plan())
    kinds = [o["kind"] for o in objects]
    last_namespace = max(i for i, k in enumerate(kinds) if k == "Namespace")
    first_crd = kinds.index("CustomResourceDefinition")
    last_crd = max(i for i, k in enumerate(kinds) if k == "CustomResourceDefinition")
    assert last_namespace < first_crd and last_crd < kinds.index("ConfigMap")
    position = {o["metadata"]["name"]: i for i, o in enumerate(objects)}
    assert position["volcano-scheduler"] < position["ascend-operator-manager"] < position["clusterd"]
    assert (
        position["clusterd"]
        < position["ascend-device-plugin-daemonset-910"]
        < position["noded"]
        < position["npu-exporter"]
    )


def test_required_namespaces_are_created() -> None:
    names = {o["metadata"]["name"] for o in build_stack(scheduler_plan()) if o["kind"] == "Namespace"}
    assert {"mindx-dl", "cluster-system", "volcano-system", "npu-exporter"} <= names


def test_build_is_deterministic() -> None:
    assert yaml.safe_dump_all(build_stack(scheduler_plan())) == yaml.safe_dump_all(build_stack(scheduler_plan()))


@pytest.mark.parametrize(
    "release, volcano", [("6.0.0", "1.9.0"), ("7.3.0", "1.7.0"), ("26.0.0", "1.9.0"), ("26.1.0", "1.12.0")]
)
def test_device_plugin_gets_the_resilience_args(release: str, volcano: str) -> None:
    objects = build_stack(scheduler_plan(release, volcano))
    ds = next(o for o in objects if o["kind"] == "DaemonSet" and o["metadata"]["namespace"] == "kube-system")
    args = effective_args(arg_tokens(ds["spec"]["template"]["spec"]["containers"][0]))[1]
    assert args["-volcanoType"] == "true"
    assert args["-hotReset"] == "2"
    assert args["-listWatchPeriod"] == "5"
    assert args["-logFile"] == f"{LOG_ROOT}/devicePlugin/devicePlugin.log"


def test_hot_reset_follows_the_plan_and_is_absent_without_it() -> None:
    without = scheduler_plan(hot_reset=None, list_watch_period=7)
    args = flags(build_stack(without), "DaemonSet", "ascend-device-plugin-daemonset-910")
    assert "-hotReset" not in args and args["-listWatchPeriod"] == "7"
    args = flags(build_stack(scheduler_plan(hot_reset=1)), "DaemonSet", "ascend-device-plugin-daemonset-910")
    assert args["-hotReset"] == "1"


def test_noded_report_interval_from_plan() -> None:
    objects = build_stack(scheduler_plan(report_interval=12))
    assert flags(objects, "DaemonSet", "noded")["-reportInterval"] == "12"


def test_grace_over_time_in_volcano_configmap_follows_the_plan() -> None:
    assert init_params(build_stack(scheduler_plan(grace_over_time=1200)))["grace-over-time"] == "1200"
    assert init_params(build_stack(scheduler_plan(grace_over_time=600)))["grace-over-time"] == "600"


def test_init_params_keep_the_release_defaults() -> None:
    params = init_params(build_stack(scheduler_plan()))
    assert params["shared-tor-num"] == "2" and params["nslb-version"] == "1.0"
    assert params["useClusterInfoManager"] == "true" and params["forceEnqueue"] == "true"


def test_init_params_per_release() -> None:
    assert "forceEnqueue" not in default_init_params("6.0.0")
    assert default_init_params("7.3.0")["self-maintain-available-card"] == "true"
    assert "prefer-previous-node" not in default_init_params("26.0.0")
    assert default_init_params("26.1.0")["prefer-previous-node"] == "true"


@pytest.mark.parametrize("arch", ["aarch64", "x86_64"])
def test_plugin_named_as_the_release_build_names_it(arch: str) -> None:
    """build.sh appends _linux-<arch> up to 7.3.0 (MC:@v7.3.0 build.sh:54), not from 7.3.1 and 26.0.0
    (MC:@v7.3.1, @v26.0.0 build.sh:54): the scheduler loads the plugin by that name."""
    for release, name in (
        ("7.3.0", f"volcano-npu_v7.3.0_linux-{arch}"),
        ("7.3.1", "volcano-npu_v7.3.1"),
        ("26.0.0", "volcano-npu_v26.0.0"),
    ):
        plan = scheduler_plan(release, "1.9.0", arch, volcano_plugin_name=volcano_plugin_name(release, arch))
        assert plan.volcano_plugin_name == name
        names = [p["name"] for p in scheduler_conf(build_stack(plan))["tiers"][0]["plugins"]]
        assert names == ["priority", "gang", "conformance", name]


def test_volcano_112_tier_order_and_preemption() -> None:
    objects = build_stack(scheduler_plan("26.1.0", "1.12.0"))
    tier = scheduler_conf(objects)["tiers"][0]["plugins"]
    assert [p["name"] for p in tier] == ["gang", "volcano-npu_v26.1.0", "priority", "conformance"]
    assert tier[1]["enablePreemptable"] is True and tier[1]["enableReclaimable"] is True


def test_clusterd_service_on_grpc_port() -> None:
    svc = first(build_stack(scheduler_plan()), "Service", CLUSTERD_SERVICE)
    assert svc["metadata"]["namespace"] == "mindx-dl"
    assert svc["spec"]["ports"] == [{"protocol": "TCP", "port": CLUSTERD_GRPC_PORT, "targetPort": CLUSTERD_GRPC_PORT}]
    assert svc["spec"]["selector"] == {"app": "clusterd"}


def test_release_26_1_healthz_init_containers_and_merged_device_plugin() -> None:
    objects = build_stack(scheduler_plan("26.1.0", "1.12.0"))
    for kind, name, port in [
        ("DaemonSet", "ascend-device-plugin-daemonset", 11251),
        ("Deployment", "ascend-operator-manager", 11252),
        ("Deployment", "clusterd", 11253),
        ("DaemonSet", "noded", 11255),
        ("DaemonSet", "npu-exporter", 11256),
    ]:
        c = container(objects, kind, name)
        assert c["livenessProbe"]["httpGet"]["port"] == port, name
        assert flags(objects, kind, name)["--healthz-address"] == str(port)
        pod = first(objects, kind, name)["spec"]["template"]["spec"]
        assert [i["name"] for i in pod["initContainers"]] == ["init-log-setup"]
        assert {"path": "/var/log", "type": "Directory"} in [v.get("hostPath") for v in pod["volumes"]]
    ds = first(objects, "DaemonSet", "ascend-device-plugin-daemonset")["spec"]["template"]["spec"]
    assert ds["serviceAccountName"] == "ascend-device-plugin-sa"
    assert ds["nodeSelector"] == {"workerselector": "dls-worker-node"}
    assert first(objects, "DaemonSet", "noded")["spec"]["template"]["spec"]["hostNetwork"] is True


def test_release_26_0_has_no_healthz_but_noded_on_host_network() -> None:
    objects = build_stack(scheduler_plan("26.0.0", "1.9.0"))
    for kind, name in [("Deployment", "clusterd"), ("DaemonSet", "noded"), ("Deployment", "ascend-operator-manager")]:
        assert "livenessProbe" not in container(objects, kind, name)
        assert "initContainers" not in first(objects, kind, name)["spec"]["template"]["spec"]
    assert first(objects, "DaemonSet", "noded")["spec"]["template"]["spec"]["hostNetwork"] is True
    ds = first(objects, "DaemonSet", "ascend-device-plugin-daemonset-910")["spec"]["template"]["spec"]
    assert ds["nodeSelector"] == {"accelerator": "huawei-Ascend910"}


def test_release_6_0_differences() -> None:
    objects = build_stack(scheduler_plan("6.0.0", "1.9.0"))
    assert first(objects, "Lease", "cluster-info-collector")["metadata"]["namespace"] == "mindx-dl"
    assert "hostNetwork" not in first(objects, "DaemonSet", "noded")["spec"]["template"]["spec"]
    assert "--percentage-nodes-to-find" not in flags(objects, "Deployment", "volcano-scheduler")
    newer = build_stack(scheduler_plan("7.3.0", "1.9.0"))
    assert flags(newer, "Deployment", "volcano-scheduler")["--percentage-nodes-to-find"] == "100"


def test_images_pull_policy_and_registry() -> None:
    objects = build_stack(scheduler_plan("26.0.0", "1.9.0"))
    assert container(objects, "DaemonSet", "noded")["image"] == "noded:v26.0.0"
    assert container(objects, "DaemonSet", "noded")["imagePullPolicy"] == "Never"
    assert container(objects, "Deployment", "volcano-scheduler")["image"] == "volcanosh/vc-scheduler:v1.9.0"
    assert container(objects, "Deployment", "volcano-scheduler")["imagePullPolicy"] == "IfNotPresent"
    new = build_stack(scheduler_plan("26.1.0", "1.12.0"))
    assert (
        container(new, "Deployment", "volcano-controllers")["image"]
        == "volcanosh/vc-controller-manager:v1.12.0-v26.1.0"
    )
    swr = scheduler_plan(
        "26.0.0",
        "1.9.0",
        image_registry="swr.example.com/ascendhub/",
        image_pull_policy="IfNotPresent",
        image_pull_secrets=["regcred"],
    )
    objects = build_stack(swr)
    assert container(objects, "Deployment", "clusterd")["image"] == "swr.example.com/ascendhub/clusterd:v26.0.0"
    assert (
        container(objects, "Deployment", "volcano-scheduler")["image"]
        == "swr.example.com/ascendhub/vc-scheduler:v1.9.0-v26.0.0"
    )
    for o in objects:
        if o["kind"] in ("Deployment", "DaemonSet"):
            pod = o["spec"]["template"]["spec"]
            assert pod["imagePullSecrets"] == [{"name": "regcred"}], o["metadata"]["name"]
            for c in pod["containers"] + pod.get("initContainers", []):
                assert c["imagePullPolicy"] == "IfNotPresent"


def test_image_override_by_component() -> None:
    objects = build_stack(scheduler_plan(), images={"clusterd": "my/clusterd:patched"})
    assert container(objects, "Deployment", "clusterd")["image"] == "my/clusterd:patched"


def test_resources_from_plan_and_node_selectors_from_the_node_labels() -> None:
    plan = scheduler_plan(
        resources={"volcano-scheduler": {"cpu": "8", "memory": "16Gi"}, "noded": {"memory": "512Mi"}},
    )
    objects = build_stack(plan)
    assert container(objects, "Deployment", "volcano-scheduler")["resources"] == {
        "requests": {"cpu": "8", "memory": "16Gi"},
        "limits": {"cpu": "8", "memory": "16Gi"},
    }
    assert container(objects, "DaemonSet", "noded")["resources"]["limits"] == {"cpu": "500m", "memory": "512Mi"}
    for name in ("volcano-scheduler", "volcano-controllers", "ascend-operator-manager", "clusterd"):
        selector = first(objects, "Deployment", name)["spec"]["template"]["spec"]["nodeSelector"]
        assert selector == {"masterselector": "dls-master-node"}
    for name in ("noded", "npu-exporter"):
        selector = first(objects, "DaemonSet", name)["spec"]["template"]["spec"]["nodeSelector"]
        assert selector == {"workerselector": "dls-worker-node"}


def test_npu_exporter_mounts_only_the_runtime_sockets() -> None:
    def paths(runtime: str) -> List[str]:
        pod = first(build_stack(scheduler_plan(container_runtime=runtime)), "DaemonSet", "npu-exporter")["spec"][
            "template"
        ]["spec"]
        return [v["hostPath"]["path"] for v in pod["volumes"]]

    assert "/run/containerd" in paths("containerd") and "/var/run/docker" not in paths("containerd")
    assert "/var/run/docker" in paths("docker")
    assert (
        flags(build_stack(scheduler_plan(container_runtime="containerd")), "DaemonSet", "npu-exporter")[
            "-containerMode"
        ]
        == "containerd"
    )


def test_crd_sources_are_deployed_verbatim(tmp_path: Any) -> None:
    from resumable.manifests.crds import ascendjob_crd

    user_crd = ascendjob_crd()
    user_crd["metadata"]["creationTimestamp"] = None
    user_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = "from-the-user"
    user_crd["status"] = {"acceptedNames": {}}
    path = tmp_path / "ascend-operator-v7.3.0.yaml"
    path.write_text(yaml.safe_dump_all([{"kind": "ServiceAccount", "metadata": {"name": "x"}}, user_crd]))
    objects = build_stack(scheduler_plan(), crd_sources=[str(path)])
    crd = first(objects, "CustomResourceDefinition", "ascendjobs.mindxdl.gitee.com")
    assert crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] == "from-the-user"
    assert "creationTimestamp" not in crd["metadata"] and "status" not in crd
    assert first(objects, "CustomResourceDefinition", "jobs.batch.volcano.sh")["spec"]["group"] == "batch.volcano.sh"


def test_crd_source_errors_are_one_paragraph(tmp_path: Any) -> None:
    from resumable.manifests import CrdSourceError

    empty = tmp_path / "empty.yaml"
    empty.write_text("kind: ServiceAccount\nmetadata: {name: x}\n")
    with pytest.raises(CrdSourceError, match="no CustomResourceDefinition"):
        build_stack(scheduler_plan(), crd_sources=[str(empty)])
    with pytest.raises(CrdSourceError, match="no such file"):
        build_stack(scheduler_plan(), crd_sources=[str(tmp_path / "missing.yaml")])
