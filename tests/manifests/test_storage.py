"""Shared storage objects: NFS volumes pre-bound to their claims with reclaim policy Retain, or
ReadWriteMany claims from a StorageClass; per job one claim for each purpose, named after the job and
the purpose (never a position); sizes from the profile."""

from __future__ import annotations

from typing import Any, Dict, List

import kubernetes_validate
import yaml

from resumable.api import load_plan_text
from resumable.manifests import build_deployment, storage
from resumable.manifests.deployment import JOBS_STAGE

PROFILE = """
cluster: {name: c1, mindcluster: "7.3.0", kubernetes: "1.28"}
storage:
  %s
  cache_size: 500Gi
  checkpoint_size: 3Ti
jobs:
  - name: a
    namespace: team-a
    image: {framework: pytorch, torch: "2.1.0", framework_pt_adapter: "6.0.0", cann: "8.0.0"}
    compile: {mode: cache}
    ranktable: false
  - name: b
    namespace: team-b
    image: {framework: pytorch, torch: "2.1.0", framework_pt_adapter: "6.0.0", cann: "8.0.0"}
"""
NFS = "nfs: {server: 192.0.2.10, path: /exports/ascend/}"
CLASS = "storage_class: cephfs"


def objects(store: str) -> List[Dict[str, Any]]:
    plan = load_plan_text(PROFILE % store, "<storage>")
    return storage.objects(plan.storage)


def job_objects(text: str) -> Dict[str, Dict[str, Any]]:
    """The objects of every job (image record, ConfigMaps, the job) of profile ``text``, by key."""
    plan = load_plan_text(text, "<storage>")
    objs = build_deployment(plan, profile_text=text).stage(JOBS_STAGE).objects
    return {f"{o['kind']}/{o['metadata']['name']}/{o['metadata'].get('namespace', '')}": o for o in objs}


def by(objs: List[Dict[str, Any]], kind: str) -> Dict[str, Dict[str, Any]]:
    return {f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}": o for o in objs if o["kind"] == kind}


def test_nfs_volumes_are_retained_and_pre_bound() -> None:
    objs = objects(NFS)
    pvs = by(objs, "PersistentVolume")
    claims = by(objs, "PersistentVolumeClaim")
    assert sorted(claims) == ["team-a/a-checkpoints", "team-a/a-op-cache", "team-b/b-checkpoints"]
    assert len(pvs) == 3
    for key, claim in claims.items():
        ns, name = key.split("/")
        pv = pvs["/" + claim["spec"]["volumeName"]]
        assert pv["spec"]["claimRef"] == {"namespace": ns, "name": name}
        assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
        assert pv["spec"]["accessModes"] == claim["spec"]["accessModes"] == ["ReadWriteMany"]
        assert pv["spec"]["storageClassName"] == claim["spec"]["storageClassName"] == ""
        size = "500Gi" if name.endswith("op-cache") else "3Ti"
        assert pv["spec"]["capacity"]["storage"] == claim["spec"]["resources"]["requests"]["storage"] == size
        job, sub = name.split("-", 1)
        assert pv["spec"]["nfs"] == {"server": "192.0.2.10", "path": f"/exports/ascend/{ns}/{job}/{sub}"}
    for o in objs:
        kubernetes_validate.validate(o, "1.28", strict=True)


def test_storage_class_claims_only() -> None:
    objs = objects(CLASS)
    assert by(objs, "PersistentVolume") == {}
    claims = by(objs, "PersistentVolumeClaim")
    assert len(claims) == 3
    for claim in claims.values():
        assert claim["spec"]["storageClassName"] == "cephfs" and "volumeName" not in claim["spec"]
        assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
        kubernetes_validate.validate(claim, "1.28", strict=True)


def test_no_shared_storage_no_objects() -> None:
    text = PROFILE % NFS
    doc = yaml.safe_load(text)
    doc["storage"] = {}
    doc["jobs"][0]["compile"] = {"mode": "binaries"}
    plan = load_plan_text(yaml.safe_dump(doc), "<none>")
    assert storage.objects(plan.storage) == []


def test_adding_a_job_in_front_changes_no_existing_object() -> None:
    """A job whose name, namespace and checkpoint path all sort first is added: every object the
    existing jobs had stays byte for byte (same name, same NFS directory, the same profile
    ConfigMap), so Pulumi updates nothing and no job is handed another job's checkpoints."""
    before = {f"{o['kind']}/{o['metadata']['name']}/{o['metadata'].get('namespace', '')}": o for o in objects(NFS)}
    doc = yaml.safe_load(PROFILE % NFS)
    doc["jobs"].insert(
        0,
        {
            "name": "aa-first",
            "namespace": "team-0",
            "image": {"framework": "pytorch", "torch": "2.1.0", "framework_pt_adapter": "6.0.0", "cann": "8.0.0"},
            "compile": {"mode": "cache"},
            "checkpoint": {"path": "/aaa/ckpt"},
            "ranktable": False,
        },
    )
    text = yaml.safe_dump(doc, sort_keys=False)
    plan = load_plan_text(text, "<storage>")
    after = {
        f"{o['kind']}/{o['metadata']['name']}/{o['metadata'].get('namespace', '')}": o
        for o in storage.objects(plan.storage)
    }
    for key, obj in before.items():
        assert after[key] == obj, f"{key} changed when a job was added in front"
    # the jobs' own objects too, their profile ConfigMaps (the profile with the job alone) among them
    jobs_before = job_objects(PROFILE % NFS)
    jobs_after = job_objects(text)
    assert {"ConfigMap/resumable-profile-a/team-a", "ConfigMap/resumable-profile-b/team-b"} <= set(jobs_before)
    for key, obj in jobs_before.items():
        assert jobs_after[key] == obj, f"{key} changed when a job was added in front"
    assert "ConfigMap/resumable-profile-aa-first/team-0" in jobs_after
    added = sorted(set(after) - set(before))
    assert added == [
        "Job/aa-first-prepare-storage/team-0",
        "PersistentVolume/aa-first-checkpoints-team-0/",
        "PersistentVolume/aa-first-op-cache-team-0/",
        "PersistentVolumeClaim/aa-first-checkpoints/team-0",
        "PersistentVolumeClaim/aa-first-op-cache/team-0",
    ]
    # and the existing jobs still mount their own claims
    mounts = {j.name: sorted(v.claim_name for v in j.volumes if v.claim_name) for j in plan.jobs}
    assert mounts["a"] == ["a-checkpoints", "a-op-cache"] and mounts["b"] == ["b-checkpoints"]
