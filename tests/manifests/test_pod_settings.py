"""Training pod settings beside the recovery plan (issue 24: only what we thought of reached the
pods, so a tainted NPU node, a quota or Pod Security admission meant editing our output): resources,
tolerations, node selection, priority class, labels, annotations, security context and extra
volumes from jobs[].pod and jobs[].volumes, rendered on every pod of both job kinds, and refused
where they would override what the recovery plan sets."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import kubernetes_validate
import pytest
import yaml
from conftest import EXAMPLES

from resumable.api import load_plan
from resumable.cli import main
from resumable.manifests import build_deployment

EXAMPLE = EXAMPLES / "pytorch-process-recovery.yaml"

POD = {
    "requests": {"cpu": "64", "memory": "512Gi"},
    "limits": {"cpu": "96", "memory": "512Gi"},
    "tolerations": [
        {"key": "npu-only", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "maintenance", "operator": "Equal", "value": "soon", "effect": "NoExecute", "toleration_seconds": 60},
    ],
    "node_selector": {"example.com/pool": "train-a"},
    "priority_class": "training-high",
    "labels": {"example.com/team": "llm", "kueue.x-k8s.io/queue-name": "npu"},
    "annotations": {"example.com/cost-centre": "4711"},
    "security_context": {"fs_group": 1000, "seccomp_profile": "RuntimeDefault", "capabilities_add": ["IPC_LOCK"]},
}
VOLUMES = [
    {"name": "code", "mount_path": "/job/code", "claim": "code"},
    {"name": "hf-token", "mount_path": "/etc/hf", "secret": "hf-token", "read_only": True},
    {"name": "settings", "mount_path": "/etc/train", "config_map": "train-settings"},
    {"name": "scratch", "mount_path": "/scratch", "empty_dir": "100Gi"},
]


def write(tmp_path: Path, kind: str = "ascendjob", **job: Any) -> Path:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["jobs"][0].update(job)
    doc["jobs"][0]["image"].pop("wheels", None)
    doc["acknowledge"] = ["wheel-file"]
    if kind == "vcjob":
        doc["jobs"][0].update(kind="vcjob", taskd_manager="off")
        doc["jobs"][0]["recovery"]["strategies"] = []
        doc["jobs"][0]["checkpoint"]["dump"] = False
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def pod_templates(path: Path) -> List[Dict[str, Any]]:
    objs = build_deployment(load_plan(str(path))).stage("jobs").objects
    (job,) = [o for o in objs if o["kind"] in ("AscendJob", "Job")]
    if job["kind"] == "AscendJob":
        return [s["template"] for s in job["spec"]["replicaSpecs"].values()]
    return [t["template"] for t in job["spec"]["tasks"]]


@pytest.mark.parametrize("kind", ["ascendjob", "vcjob"])
def test_pod_settings_reach_every_training_pod(tmp_path: Path, kind: str) -> None:
    templates = pod_templates(write(tmp_path, kind, pod=POD, volumes=VOLUMES))
    assert templates
    for template in templates:
        spec = template["spec"]
        (c,) = spec["containers"]
        npu = {k: v for k, v in c["resources"]["requests"].items() if k.startswith("huawei.com/")}
        assert npu == {"huawei.com/Ascend910": "8"}, "the plan's NPUs stay"
        assert c["resources"]["requests"] == {"cpu": "64", "memory": "512Gi", **npu}
        assert c["resources"]["limits"] == {"cpu": "96", "memory": "512Gi", **npu}
        assert spec["tolerations"] == [
            {"operator": "Exists", "key": "npu-only", "effect": "NoSchedule"},
            {
                "operator": "Equal",
                "key": "maintenance",
                "value": "soon",
                "effect": "NoExecute",
                "tolerationSeconds": 60,
            },
        ]
        assert spec["nodeSelector"]["example.com/pool"] == "train-a"
        assert spec["nodeSelector"]["accelerator-type"] == "module-910b-8", "added to the plan's selection"
        assert spec["priorityClassName"] == "training-high"
        assert template["metadata"]["labels"]["example.com/team"] == "llm"
        assert template["metadata"]["labels"]["ring-controller.atlas"] == "ascend-910b"
        assert template["metadata"]["annotations"]["example.com/cost-centre"] == "4711"
        assert spec["securityContext"] == {"fsGroup": 1000, "seccompProfile": {"type": "RuntimeDefault"}}
        assert c["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert volumes["hf-token"] == {"name": "hf-token", "secret": {"secretName": "hf-token"}}
        assert volumes["settings"] == {"name": "settings", "configMap": {"name": "train-settings"}}
        assert volumes["scratch"] == {"name": "scratch", "emptyDir": {"sizeLimit": "100Gi"}}
        mounts = {m["name"]: m for m in c["volumeMounts"]}
        assert mounts["hf-token"] == {"name": "hf-token", "mountPath": "/etc/hf", "readOnly": True}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", **template["metadata"]}, **template}
        kubernetes_validate.validate(dict(pod, spec=spec), "1.28", strict=True)


def test_without_pod_settings_nothing_is_added(tmp_path: Path) -> None:
    for template in pod_templates(write(tmp_path)):
        spec = template["spec"]
        assert not {"tolerations", "priorityClassName", "securityContext"} & set(spec)
        assert set(spec["containers"][0]["resources"]["requests"]) == {"huawei.com/Ascend910"}


@pytest.mark.parametrize(
    "part, key, owner",
    [
        ("labels", "fault-scheduling", "recovery.fault_scheduling"),
        ("labels", "ring-controller.atlas", "cluster.chip"),
        ("annotations", "recover-strategy", "recovery.strategies"),
        ("annotations", "huawei.com/schedule_policy", "schedule_policy"),
        ("annotations", "huawei.com/Ascend910", "MindCluster itself"),
        ("node_selector", "accelerator-type", "cluster.accelerator_type"),
    ],
)
def test_what_the_plan_owns_is_refused_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], part: str, key: str, owner: str
) -> None:
    assert main(["validate", str(write(tmp_path, pod={part: {key: "x"}}))]) == 2
    err = capsys.readouterr().err
    assert "[pod-settings]" in err and "jobs[0].pod.%s.%s" % (part, key) in err and owner in err, err


def test_a_volume_may_not_take_a_plan_volume_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    volumes = [{"name": "checkpoints", "mount_path": "/data", "claim": "data"}]
    assert main(["validate", str(write(tmp_path, volumes=volumes))]) == 2
    assert "volume name 'checkpoints' is the recovery plan's volume for checkpoints" in capsys.readouterr().err
    two = [{"name": "data", "mount_path": "/data", "claim": "data", "secret": "s"}]
    assert main(["validate", str(write(tmp_path, volumes=two))]) == 2
    assert "needs exactly one of host_path, claim, config_map, secret or empty_dir" in capsys.readouterr().err


@pytest.mark.parametrize(
    "pod, message",
    [
        ({"tolerations": [{"key": "a", "operator": "Exists", "value": "b"}]}, "operator Exists has no value"),
        ({"tolerations": [{"operator": "Equal", "value": "b"}]}, "without a key needs operator Exists"),
        ({"tolerations": [{"key": "a", "toleration_seconds": 5}]}, "applies to effect NoExecute only"),
        ({"requests": {"cpu": "64"}, "limits": {"cpu": "32000m"}}, "limit cpu 32000m is below the request 64"),
    ],
)
def test_what_kubernetes_refuses_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pod: Dict[str, Any], message: str
) -> None:
    assert main(["validate", str(write(tmp_path, pod=pod))]) == 2
    assert message in capsys.readouterr().err


def test_the_npu_resource_is_not_a_pod_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(write(tmp_path, pod={"requests": {"huawei.com/Ascend910": "4"}}))]) == 2
    assert "huawei.com/Ascend910" in capsys.readouterr().err
