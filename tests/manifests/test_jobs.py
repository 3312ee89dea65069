"""Job templates: for every example `resumable render` writes a job that validates against the
upstream CRD of its release and carries what its strategy requires; the Volcano Job, per-job
hostNetwork, user volumes, topology labels and the optional grace period.

Requirements are written from the sources (YAMLCFG, RT04-RT06, seed 表10), not read back from the
plan: a test states what a job with these settings must have.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml
from conftest import EXAMPLE_FILES, EXAMPLES

from resumable.api import load_plan_text
from resumable.cli import main
from resumable.manifests import build_deployment
from resumable.operatorenv import injected_into
from resumable.versions import Version

from .crdschema import validate_cr
from .facts import first, load_objects
from .upstream import release_dir

EXAMPLE_NAMES = [p.stem for p in EXAMPLE_FILES]
#: examples whose MindCluster release folder holds the CRD their job must satisfy
RELEASE_OF = {
    "job-level-minimal": "6.0.0",
    "legacy-6.0-pod-rescheduling": "6.0.0",
    "mindspore-process-recovery": "7.3.0",
    "pytorch-pod-rescheduling": "7.3.0",
    "pytorch-process-recovery": "7.3.0",
}
PROCESS_RECOVERY = ["pytorch-process-recovery", "mindspore-process-recovery"]


def render(profile: Path, out: Path) -> List[Dict[str, Any]]:
    assert main(["render", str(profile), "--out", str(out)]) == 0
    return [yaml.safe_load(p.read_text()) for p in sorted(out.rglob("*.yaml"))]


def the_job(objs: List[Dict[str, Any]]) -> Dict[str, Any]:
    training = ("mindxdl.gitee.com/v1", "AscendJob"), ("batch.volcano.sh/v1alpha1", "Job")
    (job,) = [o for o in objs if (o["apiVersion"], o["kind"]) in training]
    return job


def pod_specs(job: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    if job["kind"] == "AscendJob":
        return {k: v["template"]["spec"] for k, v in job["spec"]["replicaSpecs"].items()}
    return {t["name"]: t["template"]["spec"] for t in job["spec"]["tasks"]}


def env_of(container: Dict[str, Any]) -> Dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def mounts_of(spec: Dict[str, Any]) -> Dict[str, str]:
    """mount path -> the volume's source description."""
    volumes = {v["name"]: v for v in spec["volumes"]}
    out = {}
    for m in spec["containers"][0]["volumeMounts"]:
        v = volumes[m["name"]]
        source = next(k for k in v if k != "name")
        detail = v[source]
        out[m["mountPath"]] = f"{source}:{detail.get('claimName') or detail.get('name') or detail.get('path') or ''}"
    return out


def upstream_crd(release: str, kind: str) -> Dict[str, Any]:
    root = release_dir(release)
    if kind == "AscendJob":
        return first(load_objects(root / "ascend-operator.yaml"), "CustomResourceDefinition")
    return first(load_objects(root / "volcano-v1.9.0.yaml"), "CustomResourceDefinition", "jobs.batch.volcano.sh")


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_rendered_job_validates_against_the_upstream_crd(example: str, tmp_path: Path) -> None:
    objs = render(EXAMPLES / f"{example}.yaml", tmp_path / "out")
    job = the_job(objs)
    assert validate_cr(job, upstream_crd(RELEASE_OF[example], job["kind"])) == []
    profile = yaml.safe_load((EXAMPLES / f"{example}.yaml").read_text())
    spec = profile["jobs"][0]
    for name, pod in pod_specs(job).items():
        (container,) = pod["containers"]
        assert container["name"] == "ascend"
        assert container["command"] == [
            "resumable",
            "launch",
            "--",
            spec.get("script", "train.py"),
            *spec.get("script_args", []),
        ]
        env = env_of(container)
        assert env["RESUMABLE_PROFILE"] == "/etc/resumable/profile.yaml" and env["RESUMABLE_JOB"] == spec["name"]
        assert mounts_of(pod)["/etc/resumable"] == f"configMap:resumable-profile-{spec['name']}"
        resources = container.get("resources")
        if resources:
            assert resources["requests"] == resources["limits"] == {"huawei.com/Ascend910": str(spec["npus_per_node"])}
        else:
            assert name == "Scheduler", "only the MindSpore scheduler runs without NPUs"
        assert pod["nodeSelector"] == {
            "host-arch": "huawei-arm" if profile["cluster"]["arch"] == "aarch64" else "huawei-x86",
            "accelerator-type": profile["cluster"]["accelerator_type"],
        }
        assert mounts_of(pod)["/usr/local/Ascend/driver"] == "hostPath:/usr/local/Ascend/driver"
        assert mounts_of(pod)["/dev/shm"].startswith("emptyDir")
    profile_cm = next(o for o in objs if o["metadata"]["name"] == f"resumable-profile-{spec['name']}")
    # the job's own profile: every setting of the example, with this job alone under jobs
    whole = yaml.safe_load((EXAMPLES / f"{example}.yaml").read_text())
    assert yaml.safe_load(profile_cm["data"]["profile.yaml"]) == {**whole, "jobs": [spec]}


@pytest.mark.parametrize("example", PROCESS_RECOVERY)
def test_process_recovery_mounts_the_shared_cache_everywhere(example: str, tmp_path: Path) -> None:
    """Seed 恢复时间优化 表10: the compile cache on shared storage at ASCEND_CACHE_PATH on every pod,
    ASCEND_MAX_OP_CACHE_SIZE=-1; RT04: taskd-port 9601 on every pod, ttp-port with dump; RT01:
    the reset-config ConfigMap exists (the device plugin only updates it:
    MC:component/ascend-device-plugin/pkg/kubeclient/client_server.go WriteResetInfoDataIntoCM) and
    the pods mount the host directory the device plugin copies its reset.json into
    (pkg/common/file_manager.go GenResetDirName, pkg/device/ascendtolerance.go writeCMToFile), read-only
    at /user/restore/reset/config, as every upstream sample does
    (MCD:.../fault-tolerance/ranktable/mindspore/Qwen3/yamls/ms_multinodes_acjob_superpod.yaml):
    not the ConfigMap itself, whose keys are symlinks TaskD's reader refuses
    (MC:component/taskd/taskd/python/toolkit/validator/file_process.py)."""
    objs = render(EXAMPLES / f"{example}.yaml", tmp_path / "out")
    job = the_job(objs)
    claims = {o["metadata"]["name"] for o in objs if o["kind"] == "PersistentVolumeClaim"}
    name = job["metadata"]["name"]
    assert job["metadata"]["annotations"]["recover-strategy"]
    assert job["metadata"]["labels"]["fault-scheduling"] == "grace"
    for pod in pod_specs(job).values():
        env = env_of(pod["containers"][0])
        cache = env["ASCEND_CACHE_PATH"]
        assert env["ASCEND_MAX_OP_CACHE_SIZE"] == "-1"
        source = mounts_of(pod)[cache]
        assert source.startswith("persistentVolumeClaim:") and source.split(":", 1)[1] in claims
        ports = {p["name"]: p["containerPort"] for p in pod["containers"][0]["ports"]}
        assert ports["taskd-port"] == 9601 and ports["ascendjob-port"] == 2222
        assert "ttp-port" in ports, "dump needs the MindIO TTP port"
        namespace = job["metadata"]["namespace"]
        reset_dir = "/user/restore/reset/config"
        assert mounts_of(pod)[reset_dir] == f"hostPath:/user/restore/reset/{namespace}.reset-config-{name}"
        (reset_mount,) = [m for m in pod["containers"][0]["volumeMounts"] if m["mountPath"] == reset_dir]
        assert reset_mount.get("readOnly") is True
        (reset_volume,) = [v for v in pod["volumes"] if v["name"] == reset_mount["name"]]
        assert "type" not in reset_volume["hostPath"], "the samples give no type: the device plugin creates it"
        assert pod["terminationGracePeriodSeconds"] == 600  # below grace-over-time 900
        assert "ASCEND_VISIBLE_DEVICES" not in env, "the 7.3.0 operator sets it itself"
    reset = next(o for o in objs if o["metadata"]["name"] == f"reset-config-{name}")
    assert reset["metadata"]["labels"]["reset"] == "true" and "reset.json" in reset["data"]


def test_operator_before_7_0_gets_visible_devices_from_the_job(tmp_path: Path) -> None:
    objs = render(EXAMPLES / "legacy-6.0-pod-rescheduling.yaml", tmp_path / "out")
    for pod in pod_specs(the_job(objs)).values():
        env = env_of(pod["containers"][0])
        assert env["ASCEND_VISIBLE_DEVICES"] == {
            "fieldRef": {"fieldPath": "metadata.annotations['huawei.com/Ascend910']"}
        }


# --- variants of an example --------------------------------------------------------------------------


def variant(example: str, edit: Any) -> str:
    doc = yaml.safe_load((EXAMPLES / f"{example}.yaml").read_text())
    edit(doc["jobs"][0], doc)
    return yaml.safe_dump(doc, sort_keys=False)


def deployment_of(text: str) -> Any:
    plan = load_plan_text(text, "<variant>")
    return build_deployment(plan, profile_text=text)


def job_objects(text: str) -> List[Dict[str, Any]]:
    objs: List[Dict[str, Any]] = deployment_of(text).stage("jobs").objects
    return objs


def as_vcjob(job: Dict[str, Any], doc: Dict[str, Any]) -> None:
    job["kind"] = "vcjob"
    job["recovery"]["backoff_limit"] = 5


def test_volcano_job(tmp_path: Path) -> None:
    """RT06/VCAPI/YAMLCFG: one task with every pod, maxRetry, PodFailed->Ignore with
    fault-retry-times, the rings-config RankTable ConfigMap mounted at the fixed path, and
    ASCEND_VISIBLE_DEVICES because no operator injects it; no AscendJob-only label or port."""
    objs = job_objects(variant("job-level-minimal", as_vcjob))
    (job,) = [o for o in objs if o["apiVersion"] == "batch.volcano.sh/v1alpha1"]
    assert job["kind"] == "Job" and job["spec"]["schedulerName"] == "volcano"
    assert validate_cr(job, upstream_crd("6.0.0", "Job")) == []
    assert job["spec"]["minAvailable"] == 2 and job["spec"]["maxRetry"] == 5
    assert {"event": "PodFailed", "action": "Ignore"} in job["spec"]["policies"]
    (task,) = job["spec"]["tasks"]
    assert task["replicas"] == 2
    pod = task["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert "framework" not in job["metadata"]["labels"]
    assert job["metadata"]["labels"]["fault-retry-times"] == "5"
    container = pod["containers"][0]
    assert "ascendjob-port" not in {p["name"] for p in container["ports"]}
    env = env_of(container)
    assert env["ASCEND_VISIBLE_DEVICES"] == {"fieldRef": {"fieldPath": "metadata.annotations['huawei.com/Ascend910']"}}
    assert env["RANK_TABLE_FILE"] == "/user/serverid/devindex/config/hccl.json"
    assert mounts_of(pod)["/user/serverid/devindex/config"] == "configMap:rings-config-bert-job-level"
    assert {v["name"] for v in pod["volumes"]} >= {"ranktable"}
    rings = next(o for o in objs if o["metadata"]["name"] == "rings-config-bert-job-level")
    assert rings["metadata"]["labels"]["ring-controller.atlas"] == "ascend-910b" and "hccl.json" in rings["data"]


def test_ascendjob_backoff_limit_and_ranktable_file_mode() -> None:
    def edit(job: Dict[str, Any], doc: Dict[str, Any]) -> None:
        job["recovery"]["backoff_limit"] = 7
        job["ranktable"] = True

    objs = job_objects(variant("pytorch-process-recovery", edit))
    job = next(o for o in objs if o["kind"] == "AscendJob")
    assert job["spec"]["runPolicy"]["backoffLimit"] == 7
    for pod in pod_specs(job).values():
        assert (
            mounts_of(pod)["/user/serverid/devindex/config"]
            == "hostPath:/user/mindx-dl/ranktable/training.llama-pretrain"
        )
    assert validate_cr(job, upstream_crd("7.3.0", "AscendJob")) == []


def test_per_job_host_network() -> None:
    def edit(job: Dict[str, Any], doc: Dict[str, Any]) -> None:
        job["host_network"] = True

    objs = job_objects(variant("pytorch-pod-rescheduling", edit))
    for pod in pod_specs(next(o for o in objs if o["kind"] == "AscendJob")).values():
        assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"
        assert env_of(pod["containers"][0])["HCCL_IF_IP"] == {"fieldRef": {"fieldPath": "status.hostIP"}}
    plain = job_objects(variant("pytorch-pod-rescheduling", lambda j, d: None))
    for pod in pod_specs(next(o for o in plain if o["kind"] == "AscendJob")).values():
        assert "hostNetwork" not in pod and "HCCL_IF_IP" not in env_of(pod["containers"][0])


def test_user_volumes_topology_and_default_grace_period() -> None:
    def edit(job: Dict[str, Any], doc: Dict[str, Any]) -> None:
        job["volumes"] = [
            {"name": "code", "mount_path": "/job/code", "host_path": "/data/code", "read_only": True},
            {"name": "data", "mount_path": "/job/data", "claim": "datasets"},
        ]
        job["tor_affinity"] = "large-model-schema"
        job["sp_block"] = 16
        doc["cluster"]["accelerator_type"] = "module-a3-16-super-pod"  # sp-block is for SuperPoDs (issue 16)
        del job["recovery"]["termination_grace_period"]

    objs = job_objects(variant("pytorch-process-recovery", edit))
    job = next(o for o in objs if o["kind"] == "AscendJob")
    assert job["metadata"]["labels"]["tor-affinity"] == "large-model-schema"
    assert job["metadata"]["annotations"]["sp-block"] == "16"
    for pod in pod_specs(job).values():
        mounts = mounts_of(pod)
        assert mounts["/job/code"] == "hostPath:/data/code" and mounts["/job/data"] == "persistentVolumeClaim:datasets"
        ro = {m["mountPath"]: m.get("readOnly", False) for m in pod["containers"][0]["volumeMounts"]}
        assert ro["/job/code"] is True and ro["/job/data"] is False
        assert "terminationGracePeriodSeconds" not in pod
    assert validate_cr(job, upstream_crd("7.3.0", "AscendJob")) == []


def test_image_build_spec_names_the_wheels_and_the_reference() -> None:
    import json

    def edit(job: Dict[str, Any], doc: Dict[str, Any]) -> None:
        job["image"]["base"] = "registry.example.com/ascend/cann:8.5.0"
        job["image"]["wheels"] = {
            "taskd": {"file": "wheels/taskd-7.3.0-py3-none-linux_aarch64.whl", "sha256": "a" * 64}
        }

    objs = job_objects(variant("pytorch-process-recovery", edit))
    spec = json.loads(
        next(o for o in objs if o["metadata"]["name"] == "resumable-image-llama-pretrain")["data"]["build.json"]
    )
    assert spec["image"] == "registry.example.com/ai/mindspeed-llm:2.3.0"
    assert spec["base"] == "registry.example.com/ascend/cann:8.5.0"
    taskd = next(w for w in spec["wheels"] if w["name"] == "taskd")
    assert taskd["file"] == "taskd-7.3.0-py3-none-linux_aarch64.whl" and taskd["sha256"] == "a" * 64
    assert spec["runpy_patch"] == "import taskd.python.adaptor.patch"


def test_deployment_stages_in_order() -> None:
    text = (EXAMPLES / "pytorch-process-recovery.yaml").read_text()
    names = [s.name for s in deployment_of(text).stages]
    assert names[-3:] == ["workload-namespaces", "storage", "jobs"]
    assert names[0] == "namespaces"


def test_profile_text_is_read_from_the_plan_source() -> None:
    from resumable.api import load_plan

    path = EXAMPLES / "job-level-minimal.yaml"
    objs = build_deployment(load_plan(str(path))).stage("jobs").objects
    cm = next(o for o in objs if o["metadata"]["name"] == "resumable-profile-bert-job-level")
    assert yaml.safe_load(cm["data"]["profile.yaml"]) == yaml.safe_load(path.read_text())


#: What each example's strategy requires of its job, written from the sources: labels (YAMLCFG;
#: RT04), env (RTO 表1/表10, RT04 Table 3), ports (RT04, RT05), the reset-config mount (RT01).
STRATEGY: Dict[str, Dict[str, Any]] = {
    "job-level-minimal": {
        "labels": {"fault-scheduling": "grace", "fault-retry-times": "5"},
        "absent_labels": ["pod-rescheduling"],
        "env": {"HCCL_ASYNC_ERROR_HANDLING": "1", "RESUME_MODE_ENABLE": "1"},
        "ports": {"ascendjob-port"},
        "reset_config": False,
    },
    "legacy-6.0-pod-rescheduling": {
        "labels": {"fault-scheduling": "grace", "fault-retry-times": "5", "pod-rescheduling": "on"},
        "absent_labels": [],
        "env": {"RESUME_MODE_ENABLE": "1"},
        "ports": {"ascendjob-port"},
        "reset_config": True,
    },
    "pytorch-pod-rescheduling": {
        "labels": {"fault-scheduling": "grace", "fault-retry-times": "3", "pod-rescheduling": "on"},
        "absent_labels": [],
        "env": {"HCCL_ASYNC_ERROR_HANDLING": "1", "TASKD_PROCESS_ENABLE": "off"},
        "ports": {"ascendjob-port", "taskd-port"},
        "reset_config": True,
    },
    "pytorch-process-recovery": {
        "labels": {"fault-scheduling": "grace", "fault-retry-times": "10"},
        "absent_labels": ["pod-rescheduling"],
        "env": {"HCCL_ASYNC_ERROR_HANDLING": "0", "TASKD_PROCESS_ENABLE": "on", "ASCEND_MAX_OP_CACHE_SIZE": "-1"},
        # recover, recover-in-place, dump, exit (MC:@v7.3.0 component/ascend-operator/pkg/controllers/v1/
        # env.go:362-365, 380-455)
        "operator": {
            "HCCL_ASYNC_ERROR_HANDLING": "0",
            "HIGH_AVAILABILITY": "dump,recover",
            "PROCESS_RECOVER": "on",
            "ELASTIC_PROCESS_RECOVER_ENABLE": "1",
            "ENABLE_RESTART_FAULT_PROCESS": "on",
        },
        "ports": {"ascendjob-port", "taskd-port", "ttp-port"},
        "reset_config": True,
    },
    "mindspore-process-recovery": {
        "labels": {"fault-scheduling": "grace", "fault-retry-times": "10", "framework": "mindspore"},
        "absent_labels": ["pod-rescheduling"],
        "env": {
            "MS_COMPILER_CACHE_ENABLE": "1",
            "ASCEND_MAX_OP_CACHE_SIZE": "-1",
            "TASKD_PROCESS_ENABLE": "on",
            "MS_ENABLE_THM": "{HCCL_WATCHDOG:0}",
        },
        # retry, recover, dump, exit (MC:@v7.3.0 component/ascend-operator/pkg/controllers/v1/env.go:366-373,
        # 380-455): no HIGH_AVAILABILITY, the quotes are part of MS_ENABLE_TFT's value at 7.3
        "operator": {
            "MS_ENABLE_TFT": "'{ARF:1,HCCE:1,TTP:1,UCE:1}'",
            "MINDIO_FOR_MINDSPORE": "1",
            "MS_ENABLE_THM": "{HCCL_WATCHDOG:0}",
            "PROCESS_RECOVER": "on",
            "ELASTIC_PROCESS_RECOVER_ENABLE": "1",
        },
        "ports": {"ascendjob-port", "taskd-port", "ttp-port"},
        "reset_config": True,
    },
}


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_each_job_carries_what_its_strategy_requires(example: str, tmp_path: Path) -> None:
    """The env a pod gets is the template's and what the Ascend Operator appends (operatorenv, applied
    to the rendered job's metadata as the operator reads it); no variable is in both."""
    want = STRATEGY[example]
    job = the_job(render(EXAMPLES / f"{example}.yaml", tmp_path / "out"))
    labels = job["metadata"]["labels"]
    assert {k: labels.get(k) for k in want["labels"]} == want["labels"]
    assert not [k for k in want["absent_labels"] if k in labels]
    release = yaml.safe_load((EXAMPLES / f"{example}.yaml").read_text())["cluster"]["mindcluster"]
    operator = {i.name: i.value for i in injected_into(job, Version(release))}
    assert operator == want.get("operator", {})
    for pod in pod_specs(job).values():
        container = pod["containers"][0]
        assert not set(env_of(container)) & set(operator)
        env = {**env_of(container), **operator}
        assert {k: env.get(k) for k in want["env"]} == want["env"]
        assert {p["name"] for p in container["ports"]} == want["ports"]
        assert ("/user/restore/reset/config" in mounts_of(pod)) is want["reset_config"]
        if "fault-retry-times" in labels:
            assert pod.get("restartPolicy", "Never") == "Never"
    if job["kind"] == "AscendJob":
        for spec in job["spec"]["replicaSpecs"].values():
            assert spec["restartPolicy"] == "Never"


def test_every_job_names_its_volcano_queue() -> None:
    """With gang scheduling the Ascend Operator gets the queue of runPolicy.schedulingPolicy by name and
    refuses the job when it cannot (MC:component/ascend-operator/pkg/controllers/v1/ascendjob_validate.go
    validateBasicInfo, lines 72-80 at v7.3.0, 81-89 at v26.1.0); every upstream sample names queue
    default, the queue Volcano creates (MCD: ms_multinodes_acjob_superpod.yaml, pytorch_vcjob_910b.yaml
    spec.queue). scheduler.queue sets it for every job, jobs[].queue for one."""

    def queue_of(job: Dict[str, Any]) -> Any:
        if job["kind"] == "AscendJob":
            return job["spec"]["runPolicy"]["schedulingPolicy"]["queue"]
        return job["spec"]["queue"]

    def first_job(text: str) -> Dict[str, Any]:
        kinds = ("AscendJob", "Job")
        (job,) = [o for o in job_objects(text) if o["kind"] in kinds and "spec" in o and "apiVersion" in o]
        return job

    for kind in ("ascendjob", "vcjob"):

        def as_kind(job: Dict[str, Any], doc: Dict[str, Any], kind: str = kind) -> None:
            job["kind"] = kind

        assert queue_of(first_job(variant("job-level-minimal", as_kind))) == "default"

        def team(job: Dict[str, Any], doc: Dict[str, Any], kind: str = kind) -> None:
            job["kind"] = kind
            doc.setdefault("scheduler", {})["queue"] = "team-a"

        assert queue_of(first_job(variant("job-level-minimal", team))) == "team-a"

        def own(job: Dict[str, Any], doc: Dict[str, Any], kind: str = kind) -> None:
            team(job, doc)
            job["queue"] = "urgent"

        assert queue_of(first_job(variant("job-level-minimal", own))) == "urgent"
    job = first_job(variant("job-level-minimal", as_vcjob))
    assert validate_cr(job, upstream_crd("6.0.0", "Job")) == []


@pytest.mark.parametrize("where", ["jobs[0].queue", "scheduler.queue"])
@pytest.mark.parametrize("queue", ["Team_A", "", "-a", "a" * 254])
def test_a_queue_that_is_no_kubernetes_name_is_refused(
    queue: str, where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Volcano Queue is a cluster-scoped object: its name is a DNS subdomain (KUBE object names)."""
    doc = yaml.safe_load((EXAMPLES / "job-level-minimal.yaml").read_text())
    if where == "scheduler.queue":
        doc.setdefault("scheduler", {})["queue"] = queue
    else:
        doc["jobs"][0]["queue"] = queue
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "%s: " % where in err and "Write a Kubernetes object name (DNS subdomain)" in err
