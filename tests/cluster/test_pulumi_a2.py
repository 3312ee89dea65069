"""``pulumi up`` for real on the A2 cluster: the Pulumi engine and pulumi-kubernetes built from Go
modules, a real API server with controller-manager, scheduler and KWOK nodes labelled from the plan.

One control plane for the module: the cluster stack (Pulumi.ascend-a2-cluster.yaml) goes up once,
then the three shipped job stacks on it (Pulumi.<stack>.yaml as shipped, their profile the example
with its wheel files in place, a prebuilt image since no Docker engine runs here). Each test looks at
the cluster itself, not only at exit codes.
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest
import yaml
from conftest import EXAMPLES

from resumable.api import load_plan
from resumable.cli import main as resumable

from . import jobpods
from .fixtures import PROJECT, Plane, Project, built, plan_nodes

CLUSTER = "ascend-a2-cluster"
#: the shipped job stacks on the A2 cluster, with their job and the prebuilt image each runs here
WORKLOADS: Dict[str, Tuple[str, str]] = {
    "pytorch-process-recovery": ("llama-pretrain", "registry.example.com/ai/mindspeed-llm:2.3.0"),
    "mindspore-process-recovery": ("qwen-mindformers", "registry.example.com/ai/mindformers:1.5.0"),
    "pytorch-pod-rescheduling": ("gpt-pod-level", "registry.example.com/ai/mindspeed-llm:2.3.0"),
}
#: one per pod of the three job stacks at once (4 + 2 + 2): Volcano admits a job only when its PodGroup fits
NPU_NODES = 8
#: the job stacks whose claims bind here (NFS, pre-bound): their pods run; the MindSpore job's claims
#: wait for a CephFS provisioner that does not run here, and so do its pods
RUNNING_STACKS = ("pytorch-process-recovery", "pytorch-pod-rescheduling")
KEPT_KINDS = ("namespace", "persistentvolume", "persistentvolumeclaim")
#: the class the MindSpore example's claims name (storage.storage_class: cephfs), as ceph-csi installs
#: it with a late binding: no provisioner runs here, so its claims stay Pending until a pod uses them,
#: which is what pulumi-kubernetes waits for with that mode (provider/pkg/await/awaiters.go:284-302 at
#: v4.25.0); with an immediate binding and no provisioner the up fails after 5 minutes, as it should
CEPHFS_CLASS = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: cephfs}
provisioner: cephfs.csi.ceph.com
reclaimPolicy: Retain
volumeBindingMode: WaitForFirstConsumer
"""


@pytest.fixture(scope="module")
def a2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    built(("kubernetes", "etcd", "kwok", "pulumi", "pulumi-kubernetes"))
    plane = Plane(tmp_path_factory.mktemp("a2-plane"))
    try:
        plane.start(plan_nodes(EXAMPLES / "pytorch-process-recovery.yaml", compute=NPU_NODES))
        plane.kubectl("apply", "-f", "-", stdin=CEPHFS_CLASS)
        project = Project(tmp_path_factory.mktemp("a2") / "project", plane)
        project.configure(CLUSTER)
        project.pulumi("up", CLUSTER)
        yield project
    finally:
        plane.stop()


def rendered(profile: Path, out: Path, layers: Tuple[str, ...]) -> List[Dict[str, Any]]:
    """The objects ``resumable render`` writes into ``layers`` of its output."""
    assert resumable(["render", str(profile), "--out", str(out)]) == 0
    docs: List[Dict[str, Any]] = []
    for layer in layers:
        for path in sorted((out / layer).rglob("*.yaml")):
            docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def live(plane: Plane, obj: Dict[str, Any]) -> Dict[str, Any]:
    meta = obj["metadata"]
    where = ["-n", meta["namespace"]] if meta.get("namespace") else []
    kind = obj["kind"].lower() + "." + obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else obj["kind"]
    found: Dict[str, Any] = plane.get_json(kind, meta["name"], *where)
    return found


def uids(plane: Plane, kind: str, namespace: str = "") -> Dict[str, str]:
    where = ["-n", namespace] if namespace else []
    items = plane.get_json(kind, *where)["items"]
    return {i["metadata"]["name"]: i["metadata"]["uid"] for i in items}


def versions(plane: Plane, kind: str, namespace: str) -> Dict[str, Tuple[str, str]]:
    items = plane.get_json(kind, "-n", namespace)["items"]
    return {i["metadata"]["name"]: (i["metadata"]["uid"], i["metadata"]["resourceVersion"]) for i in items}


def workload(project: Project, stack: str, **extra: Any) -> None:
    job, image = WORKLOADS[stack]
    project.configure(stack, images={job: image}, **extra)


def subset(sent: Any, got: Any, path: str = "") -> List[str]:
    """Where ``got`` (the live object) lacks or changed what ``sent`` has: a pruned or altered field."""
    if sent is None:
        return []
    if isinstance(sent, dict):
        if not isinstance(got, dict):
            return [path or "/"]
        return [p for k, v in sent.items() for p in subset(v, got.get(k), f"{path}.{k}")]
    if isinstance(sent, list):
        if not isinstance(got, list) or len(got) != len(sent):
            return [path]
        return [p for i, (a, b) in enumerate(zip(sent, got)) for p in subset(a, b, f"{path}[{i}]")]
    if sent == "" and got is None:  # an empty string the API server stores as absent (omitempty)
        return []
    return [] if sent == got or str(sent) == str(got) else [path]


def test_the_cluster_stack_runs_every_component_ready_on_the_fake_nodes(a2: Project, tmp_path: Path) -> None:
    plane = a2.cluster
    expected = rendered(a2.dir / "profiles" / "pytorch-process-recovery.yaml", tmp_path / "r", ("1-crds", "2-cluster"))
    kinds = {o["kind"] for o in expected}
    assert {"Namespace", "CustomResourceDefinition", "ClusterRole", "Deployment", "DaemonSet"} <= kinds
    for obj in expected:  # every object of the scheduling stack, as render writes it, is on the cluster
        got = live(plane, obj)
        if obj["kind"] == "CustomResourceDefinition":
            established = {c["type"]: c["status"] for c in got["status"]["conditions"]}
            assert established["Established"] == "True", obj["metadata"]["name"]
        elif obj["kind"] == "Deployment":
            assert got["status"].get("availableReplicas") == obj["spec"].get("replicas", 1), obj["metadata"]
        elif obj["kind"] == "DaemonSet":
            status = got["status"]
            assert status["desiredNumberScheduled"] == status["numberReady"] == NPU_NODES, obj["metadata"]["name"]
    pods = plane.get_json("pods", "-A")["items"]
    by_app = {(p["metadata"]["namespace"], p["spec"]["nodeName"]) for p in pods}
    # management components on the management node, the NPU agents on the NPU nodes
    assert ("mindx-dl", "master-0") in by_app and ("volcano-system", "master-0") in by_app
    assert {("npu-exporter", "npu-0"), ("npu-exporter", "npu-1"), ("kube-system", "npu-0")} <= by_app
    assert all(p["status"]["phase"] == "Running" for p in pods), [
        (p["metadata"]["name"], p["status"]["phase"]) for p in pods if p["status"]["phase"] != "Running"
    ]
    # the state matches the cluster: nothing to change, nothing drifted
    a2.pulumi("preview", CLUSTER, "--expect-no-changes")
    a2.pulumi("refresh", CLUSTER, "--expect-no-changes")


def test_the_job_stacks_run_on_the_cluster_stack(a2: Project) -> None:
    plane = a2.cluster
    for stack in WORKLOADS:
        workload(a2, stack)
        a2.pulumi("up", stack)
    for stack, (job, _) in WORKLOADS.items():
        sent = a2.kubernetes_inputs(stack)
        assert {o["kind"] for o in sent} >= {"Namespace", "PersistentVolumeClaim", "ConfigMap", "AscendJob"}
        for obj in sent:
            if obj["kind"] == "Secret":
                continue
            got = live(plane, obj)
            # the API server kept every field the engine sent: the CRD pruned nothing, defaulting and
            # admission changed nothing we set
            for part in ("spec", "data"):
                assert subset(obj.get(part), got.get(part)) == [], (stack, obj["kind"], obj["metadata"]["name"], part)
            if obj["kind"] == "Job":  # the storage prepare Job: KWOK completes its pod
                assert got["status"].get("succeeded") == 1, obj["metadata"]["name"]
            if obj["kind"] == "PersistentVolumeClaim" and obj["spec"].get("volumeName"):  # NFS: pre-bound
                assert got["status"]["phase"] == "Bound" and got["spec"]["volumeName"] == obj["spec"]["volumeName"]
            elif obj["kind"] == "PersistentVolumeClaim":  # a storage class's: waits for its first pod
                assert got["status"]["phase"] == "Pending" and got["spec"]["storageClassName"] == "cephfs"
        outputs = a2.outputs(stack)
        assert job in outputs["jobs"] and '"7.3.0"' in outputs["clusterRelease"]
    # the real Ascend Operator and Volcano the cluster stack runs make each job's PodGroup and pods
    for stack in RUNNING_STACKS:
        jobpods.check_jobs_run(plane, load_plan(str(a2.dir / "profiles" / f"{stack}.yaml")).jobs)
    # a second up changes nothing; the cluster stack does not see the job stacks
    for stack in WORKLOADS:
        a2.pulumi("up", stack, "--expect-no-changes")
    a2.pulumi("preview", CLUSTER, "--expect-no-changes")
    # the namespace the three stacks share is one object each stack applies with its own field
    # manager (server-side apply): none overwrites another, and a destroy of one leaves it (kept)
    namespace = plane.get_json("namespace", "training", "--show-managed-fields")
    managers = [m["manager"] for m in namespace["metadata"]["managedFields"] if m["operation"] == "Apply"]
    assert len(managers) == len(WORKLOADS), managers


def test_destroy_keeps_the_claims_volumes_and_namespace_and_up_takes_them_over(a2: Project) -> None:
    plane = a2.cluster
    stack = "pytorch-process-recovery"
    job = WORKLOADS[stack][0]
    workload(a2, stack)
    a2.pulumi("up", stack)
    before = {kind: uids(plane, kind, "training" if kind == "persistentvolumeclaim" else "") for kind in KEPT_KINDS}
    others = versions(plane, "ascendjob", "training")
    a2.pulumi("destroy", stack)
    assert plane.kubectl("get", "ascendjob", job, "-n", "training", check=False).returncode != 0
    assert plane.kubectl("get", "configmap", f"resumable-profile-{job}", "-n", "training", check=False).returncode
    for kind, names in before.items():  # kept on destroy: the same objects, not new ones
        now = uids(plane, kind, "training" if kind == "persistentvolumeclaim" else "")
        assert {n: now.get(n) for n in names} == names, kind
    # the other job stacks' jobs were not touched
    after = versions(plane, "ascendjob", "training")
    assert {k: v for k, v in others.items() if k != job} == after
    a2.pulumi("up", stack)
    for kind, names in before.items():  # taken over, not re-created
        now = uids(plane, kind, "training" if kind == "persistentvolumeclaim" else "")
        assert {n: now.get(n) for n in names} == names, kind
    assert plane.kubectl("get", "ascendjob", job, "-n", "training", check=False).returncode == 0
    a2.pulumi("up", stack, "--expect-no-changes")


def two_job_profile(project: Project, jobs: List[Dict[str, Any]], name: str) -> Path:
    path = project.dir / "profiles" / f"{name}.yaml"
    doc = yaml.safe_load((project.dir / "profiles" / "pytorch-process-recovery.yaml").read_text())
    doc["jobs"] = jobs
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_job_added_in_front_changes_nothing_of_the_other_and_one_removed_comes_back(a2: Project) -> None:
    """Jobs in a namespace of their own (``ordering``): a job whose name sorts first is added, then
    removed (its claims stay), then added back (they are taken over)."""
    plane = a2.cluster
    base = yaml.safe_load((a2.dir / "profiles" / "pytorch-process-recovery.yaml").read_text())["jobs"][0]
    later = dict(copy.deepcopy(base), name="zz-later", namespace="ordering")
    first = dict(copy.deepcopy(base), name="aa-first", namespace="ordering")
    stack = "ordering"
    image = WORKLOADS["pytorch-process-recovery"][1]
    profile = two_job_profile(a2, [later], stack)
    a2.configure(stack, profile=f"profiles/{profile.name}", stackRole="workload", context="ascend-a2",
                 clusterStack=f"organization/{PROJECT}/{CLUSTER}", images={"zz-later": image})  # fmt: skip
    a2.pulumi("up", stack)
    kinds = ("configmap", "persistentvolumeclaim", "ascendjob")
    before = {kind: versions(plane, kind, "ordering") for kind in kinds}
    two_job_profile(a2, [first, later], stack)
    a2.configure(stack, images={"zz-later": image, "aa-first": image})
    a2.pulumi("up", stack)
    for kind in kinds:  # nothing of zz-later changed: same objects, same resource versions
        now = versions(plane, kind, "ordering")
        assert {n: now.get(n) for n in before[kind]} == before[kind], kind
    claims = uids(plane, "persistentvolumeclaim", "ordering")
    assert any(n.startswith("aa-first-") for n in claims)
    two_job_profile(a2, [later], stack)
    a2.configure(stack, images={"zz-later": image})
    a2.pulumi("up", stack)
    assert plane.kubectl("get", "ascendjob", "aa-first", "-n", "ordering", check=False).returncode != 0
    assert uids(plane, "persistentvolumeclaim", "ordering") == claims  # kept
    two_job_profile(a2, [first, later], stack)
    a2.configure(stack, images={"zz-later": image, "aa-first": image})
    a2.pulumi("up", stack)
    assert uids(plane, "persistentvolumeclaim", "ordering") == claims  # taken over, not re-created
    a2.pulumi("up", stack, "--expect-no-changes")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"profile": "profiles/missing.yaml"}, "profiles/missing.yaml: no such file"),
        ({"stackRole": "everything"}, "stackRole"),
        ({"readyTimeout": "soon"}, "readyTimeout"),
    ],
    ids=["missing-profile", "bad-role", "bad-timeout"],
)
def test_a_bad_profile_or_config_stops_the_preview_and_creates_nothing(
    a2: Project, change: Dict[str, Any], message: str
) -> None:
    stack = "mistake"
    a2.configure(stack, **{"profile": "profiles/pytorch-process-recovery.yaml", "context": "ascend-a2", **change})
    namespaces = set(uids(a2.cluster, "namespace"))
    done = a2.pulumi("preview", stack, check=False)
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors and message in errors[0], done.stderr
    up = a2.pulumi("up", stack, check=False)
    assert up.returncode != 0
    assert set(uids(a2.cluster, "namespace")) == namespaces
    assert "mistake" not in a2.outputs(stack).get("jobs", "")


def test_a_workload_stack_refuses_a_cluster_stack_of_another_release(a2: Project) -> None:
    stack = "other-release"
    doc = yaml.safe_load((a2.dir / "profiles" / "pytorch-process-recovery.yaml").read_text())
    doc["cluster"]["mindcluster"] = "26.0.0"
    doc["jobs"][0]["namespace"] = "other-release"
    (a2.dir / "profiles" / "other-release.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    a2.configure(stack, profile="profiles/other-release.yaml", context="ascend-a2", stackRole="workload",
                 clusterStack=f"organization/{PROJECT}/{CLUSTER}",
                 images={"llama-pretrain": WORKLOADS["pytorch-process-recovery"][1]})  # fmt: skip
    done = a2.pulumi("up", stack, check=False)
    assert done.returncode != 0 and "runs MindCluster 7.3.0, but" in done.stdout + done.stderr, done.stdout
    # stopped before any object: not the namespace, a volume or a ConfigMap of the job stack
    assert "other-release" not in uids(a2.cluster, "namespace")
    assert not [n for n in uids(a2.cluster, "persistentvolume") if n.endswith("-other-release")]
    lines = [line.split() for line in done.stdout.splitlines() if line.strip().startswith("+ ") and " created" in line]
    created = [words[1] for words in lines if not words[1].isdigit()]  # not the "+ 2 created" summary
    # plain `pulumi up` previews first, where the program already stops: nothing, or at most the stack and
    # its provider, is created
    assert set(created) <= {"pulumi:pulumi:Stack", "pulumi:providers:kubernetes"}, created


def test_what_mindcluster_writes_into_a_job_configmap_survives_refresh_and_up(a2: Project) -> None:
    """The device plugin writes a running job's fault state into ``reset-config-<job>`` with its own
    field manager; a later ``refresh`` + ``up`` (or an ``up`` alone) of the job stack keeps it."""
    plane = a2.cluster
    stack = "pytorch-pod-rescheduling"
    job = WORKLOADS[stack][0]
    workload(a2, stack)
    a2.pulumi("up", stack)
    name = f"reset-config-{job}"
    state = '{"status": "recovering", "RankList": [{"RankId": "3", "Status": "unrecovered"}]}'
    patch = json.dumps({"data": {"reset.json": state}})
    plane.kubectl("patch", "configmap", name, "-n", "training", "--type", "merge", "-p", patch,
                  "--field-manager", "device-plugin")  # fmt: skip
    a2.pulumi("up", stack, "--expect-no-changes")  # the state still has the first content: no diff
    assert plane.get_json("configmap", name, "-n", "training")["data"]["reset.json"] == state
    a2.pulumi("refresh", stack)
    a2.pulumi("up", stack, "--expect-no-changes")
    assert plane.get_json("configmap", name, "-n", "training")["data"]["reset.json"] == state
    # a change of the job (a new image) updates the job, never the data MindCluster owns
    a2.configure(stack, images={job: WORKLOADS[stack][1] + "-patched"})
    a2.pulumi("up", stack)
    assert plane.get_json("configmap", name, "-n", "training")["data"]["reset.json"] == state
    workload(a2, stack)
    a2.pulumi("up", stack)


def test_a_registry_login_reaches_the_training_pods_as_a_pull_secret(a2: Project) -> None:
    """``pulumi config set registryUsername`` and ``--secret registryPassword`` as the stack file's
    comment says: a ``<job>-registry`` Secret beside the job that its pods name; the password is
    a secret in the state (ciphertext only)."""
    plane = a2.cluster
    stack = "logins"
    doc = yaml.safe_load((a2.dir / "profiles" / "pytorch-pod-rescheduling.yaml").read_text())
    doc["jobs"][0]["namespace"] = "logins"
    (a2.dir / "profiles" / "logins.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    job, image = WORKLOADS["pytorch-pod-rescheduling"]
    a2.configure(stack, profile="profiles/logins.yaml", context="ascend-a2", stackRole="workload",
                 clusterStack=f"organization/{PROJECT}/{CLUSTER}", images={job: image})  # fmt: skip
    password = "s3cr3t-token-for-the-test"
    a2.cli("stack", "init", stack)
    a2.cli("config", "set", "--stack", stack, "registryUsername", "robot-ascend")
    a2.cli("config", "set", "--stack", stack, "--secret", "registryPassword", password)
    assert password not in a2.stack_file(stack).read_text()
    a2.pulumi("up", stack)
    secret = plane.get_json("secret", f"{job}-registry", "-n", "logins")
    assert secret["type"] == "kubernetes.io/dockerconfigjson"
    auths = json.loads(base64.b64decode(secret["data"][".dockerconfigjson"]))["auths"]
    assert set(auths) == {"registry.example.com"}
    assert auths["registry.example.com"]["username"] == "robot-ascend"
    assert auths["registry.example.com"]["password"] == password
    pods = plane.get_json("ascendjob", job, "-n", "logins")["spec"]["replicaSpecs"]
    for replica in pods.values():
        assert replica["template"]["spec"]["imagePullSecrets"] == [{"name": f"{job}-registry"}]
    assert password not in a2.cli("stack", "export", "--stack", stack).stdout  # ciphertext only
    a2.pulumi("up", stack, "--expect-no-changes")
    a2.pulumi("destroy", stack)
    assert plane.kubectl("get", "secret", f"{job}-registry", "-n", "logins", check=False).returncode != 0
