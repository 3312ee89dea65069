"""A MindCluster upgrade in place (26.0.0 -> 26.1.0) and the destroys, with the real engine on a real
API server: what the jobs need is never deleted and re-created, the objects upstream renamed move
through their aliases, a job stack's destroy and then the cluster stack's keep what they must.

Breaks this module catches (each run by hand): the alias of the renamed device-plugin objects removed,
or the DaemonSet's delete-before-replace (the upgrade creates the new DaemonSet before it deletes the
old one: two device plugins on every NPU node for a while; the end state is the same, so a watch of
the DaemonSets during the ``up`` sees it); ``retainOnDelete`` off (claims, CRDs gone);
``enableConfigMapMutable`` off (the profile ConfigMap deleted and re-created).
"""

from __future__ import annotations

import json
import subprocess
from typing import Dict, Iterator, List, Set, Tuple

import pytest
import yaml
from conftest import EXAMPLES

from .fixtures import PROJECT, Plane, Project, built, plan_nodes

CLUSTER = "upgrade-cluster"
JOBS = "upgrade-jobs"
JOB = "llama-pretrain"
IMAGE = "registry.example.com/ai/mindspeed-llm:2.3.0"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    built(("kubernetes", "etcd", "kwok", "pulumi", "pulumi-kubernetes"))
    plane = Plane(tmp_path_factory.mktemp("upgrade-plane"))
    try:
        plane.start(plan_nodes(EXAMPLES / "pytorch-process-recovery.yaml"))
        yield Project(tmp_path_factory.mktemp("upgrade") / "project", plane)
    finally:
        plane.stop()


def release(project: Project, stack: str, version: str) -> None:
    """profiles/<stack>.yaml: the A2 example on MindCluster ``version`` (Volcano 1.9.0 both times)."""
    doc = yaml.safe_load((project.dir / "profiles" / "pytorch-process-recovery.yaml").read_text())
    doc["cluster"]["mindcluster"] = version
    (project.dir / "profiles" / f"{stack}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))


def uids(plane: Plane, *what: str) -> Dict[str, str]:
    items = plane.get_json(*what)["items"]
    return {
        f"{i['kind']}/{i['metadata'].get('namespace', '')}/{i['metadata']['name']}": i["metadata"]["uid"] for i in items
    }


def needed_by_jobs(plane: Plane) -> Dict[str, str]:
    """What a running job needs of the cluster: the CRDs, the namespaces, the operator and Volcano,
    and the job's own objects."""
    found = uids(plane, "crd")
    found.update(uids(plane, "namespace"))
    found.update(uids(plane, "deployment", "-n", "mindx-dl"))
    found.update(uids(plane, "deployment", "-n", "volcano-system"))
    for kind in ("ascendjob", "persistentvolumeclaim", "configmap"):
        found.update(uids(plane, kind, "-n", "training"))
    found.update(uids(plane, "persistentvolume"))
    return found


def test_upgrade_in_place_then_destroy_the_job_stack_and_the_cluster_stack(project: Project) -> None:
    plane = project.plane
    assert plane is not None
    release(project, CLUSTER, "26.0.0")
    release(project, JOBS, "26.0.0")
    project.configure(CLUSTER, profile=f"profiles/{CLUSTER}.yaml", stackRole="cluster", context="ascend-a2")
    project.configure(JOBS, profile=f"profiles/{JOBS}.yaml", stackRole="workload", context="ascend-a2",
                      clusterStack=f"organization/{PROJECT}/{CLUSTER}", images={JOB: IMAGE})  # fmt: skip
    project.pulumi("up", CLUSTER)
    project.pulumi("up", JOBS)
    assert plane.kubectl("get", "daemonset", "ascend-device-plugin-daemonset-910", "-n", "kube-system").returncode == 0
    before = needed_by_jobs(plane)

    release(project, CLUSTER, "26.1.0")
    argv = ["get", "daemonsets", "-n", "kube-system", "--watch", "--output-watch-events", "-o", "json"]
    watch = subprocess.Popen([str(plane.bins["kubectl"]), *argv], env=plane.env(), stdout=subprocess.PIPE, text=True)
    try:
        project.pulumi("up", CLUSTER)
    finally:
        watch.terminate()
        seen, _ = watch.communicate(timeout=30)
    events = watch_events(seen)
    # never two device plugins at once: the old DaemonSet is gone before the new one is created
    assert most_at_once(events) == 1, [e for e in events if e[0] != "MODIFIED"]
    # the renamed device plugin: the new name only, one DaemonSet (delete-before-create through the alias)
    daemonsets = uids(plane, "daemonset", "-n", "kube-system")
    assert list(daemonsets) == ["DaemonSet/kube-system/ascend-device-plugin-daemonset"], daemonsets
    for kind in ("serviceaccount", "clusterrole", "clusterrolebinding"):
        names = " ".join(uids(plane, kind, "-A") if kind == "serviceaccount" else uids(plane, kind))
        assert "ascend-device-plugin-sa-910" not in names and "pods-node-ascend-device-plugin-role-910" not in names
    # the workload stack refuses until it plans the new release too, and then changes nothing it need not
    refused = project.pulumi("up", JOBS, check=False)
    assert refused.returncode != 0 and "runs MindCluster 26.1.0" in refused.stdout + refused.stderr
    release(project, JOBS, "26.1.0")
    project.pulumi("up", JOBS)
    after = needed_by_jobs(plane)
    recreated = sorted(k for k in before if k in after and before[k] != after[k])
    assert recreated == [], f"deleted and re-created by the upgrade: {recreated}"
    assert sorted(set(before) - set(after)) == [], "deleted by the upgrade"
    project.pulumi("preview", CLUSTER, "--expect-no-changes")
    project.pulumi("preview", JOBS, "--expect-no-changes")

    # a job stack's destroy: its job and ConfigMaps go; claims, volumes and the namespace stay
    project.pulumi("destroy", JOBS)
    assert uids(plane, "ascendjob", "-n", "training") == {}
    kept = uids(plane, "persistentvolumeclaim", "-n", "training")
    assert kept and all(after[k] == v for k, v in kept.items())
    # the cluster stack's destroy: its workloads go; CRDs and namespaces stay (other stacks' jobs with them)
    crds, namespaces = uids(plane, "crd"), uids(plane, "namespace")
    project.pulumi("destroy", CLUSTER)
    assert uids(plane, "deployment", "-n", "mindx-dl") == {}
    assert uids(plane, "daemonset", "-n", "kube-system") == {}
    assert uids(plane, "crd") == crds
    assert {k: v for k, v in uids(plane, "namespace").items() if k in namespaces} == namespaces
    # and a later up of both takes the kept objects over (nothing re-created)
    project.pulumi("up", CLUSTER)
    project.pulumi("up", JOBS)
    assert uids(plane, "crd") == crds and uids(plane, "persistentvolumeclaim", "-n", "training") == kept


def watch_events(out: str) -> List[Tuple[str, str]]:
    """(type, name) of each event ``kubectl get --watch --output-watch-events -o json`` printed (the
    last one may be cut off by the terminate)."""
    decoder, pos = json.JSONDecoder(), 0
    events: List[Tuple[str, str]] = []
    while True:
        while pos < len(out) and out[pos].isspace():
            pos += 1
        if pos >= len(out):
            return events
        try:
            event, pos = decoder.raw_decode(out, pos)
        except json.JSONDecodeError:
            return events
        events.append((str(event["type"]), str(event["object"]["metadata"]["name"])))


def most_at_once(events: List[Tuple[str, str]]) -> int:
    live: Set[str] = set()
    most = 0
    for kind, name in events:
        if kind == "ADDED":
            live.add(name)
        elif kind == "DELETED":
            live.discard(name)
        most = max(most, len(live))
    return most
