"""``write_stack``: one numbered YAML file per object, deterministic, never half-written, and never
replacing a directory it did not write."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, List

import pytest
import yaml
from conftest import EXAMPLE_FILES, EXAMPLES

from resumable.fileio import MARKER, OutputError
from resumable.manifests import build_stack
from resumable.manifests import render as render_module
from resumable.manifests.render import KUSTOMIZATION, write_stack

from .plans import scheduler_plan


def objects() -> List[Any]:
    return build_stack(scheduler_plan("26.1.0", "1.12.0"))


def test_one_file_per_object_in_order(tmp_path: Path) -> None:
    objs = objects()
    written = write_stack(objs, tmp_path / "out")
    assert [p.name for p in written] == sorted(os.listdir(tmp_path / "out"))[1:-1]
    assert sorted(os.listdir(tmp_path / "out"))[0] == MARKER
    assert sorted(os.listdir(tmp_path / "out"))[-1] == KUSTOMIZATION
    assert len(written) == len(objs)
    assert written[0].name == "000-namespace-mindx-dl.yaml"
    assert all(p.name[:3] == f"{i:03d}" for i, p in enumerate(written))
    assert [yaml.safe_load(p.read_text()) for p in written] == objs
    crd_files = [p.name for p in written if "customresourcedefinition" in p.name]
    assert crd_files and all(name < min(p.name for p in written if "deployment" in p.name) for name in crd_files)


def test_scheduler_config_is_a_readable_literal_block(tmp_path: Path) -> None:
    written = write_stack(objects(), tmp_path / "out")
    cm = next(p for p in written if "volcano-scheduler-configmap" in p.name).read_text()
    assert "volcano-scheduler.conf: |" in cm and "prefer-previous-node" in cm


def test_deterministic(tmp_path: Path) -> None:
    a = write_stack(objects(), tmp_path / "a")
    b = write_stack(objects(), tmp_path / "b")
    assert [p.name for p in a] == [p.name for p in b]
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]


def test_replaces_its_own_previous_output_and_leaves_nothing_else(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_stack(objects(), out)
    (out / "stale.yaml").write_text("old")  # e.g. an object an older release rendered
    written = write_stack(objects(), out)
    assert sorted(os.listdir(out)) == sorted([MARKER, KUSTOMIZATION] + [p.name for p in written])
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_an_empty_directory_is_used(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    written = write_stack(objects(), out)
    assert sorted(os.listdir(out)) == sorted([MARKER, KUSTOMIZATION] + [p.name for p in written])


def test_refuses_a_directory_of_unrelated_files(tmp_path: Path) -> None:
    out = tmp_path / "home"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    with pytest.raises(OutputError, match="did not write"):
        write_stack(objects(), out)
    assert os.listdir(out) == ["thesis.tex"]
    assert sorted(os.listdir(tmp_path)) == ["home"]


def test_refuses_a_symbolic_link(tmp_path: Path) -> None:
    real = tmp_path / "real"
    write_stack(objects(), real)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(OutputError, match="symbolic link"):
        write_stack(objects(), link)
    assert link.is_symlink() and (real / MARKER).exists()


def test_failure_keeps_the_old_directory(tmp_path: Path, monkeypatch: Any) -> None:
    out = tmp_path / "out"
    first = write_stack(objects(), out)
    before = {p.name: p.read_bytes() for p in first}
    calls = {"n": 0}
    real = render_module.to_yaml

    def failing(obj: Any) -> str:
        calls["n"] += 1
        if calls["n"] == 5:
            raise RuntimeError("disk full")
        return real(obj)

    monkeypatch.setattr(render_module, "to_yaml", failing)
    with pytest.raises(RuntimeError):
        write_stack(objects(), out)
    assert {p.name: p.read_bytes() for p in out.glob("*.yaml")} == before
    assert sorted(os.listdir(tmp_path)) == ["out"]


@pytest.mark.parametrize("failing_call", [1, 2])
def test_a_failed_swap_restores_the_previous_output(tmp_path: Path, monkeypatch: Any, failing_call: int) -> None:
    """The swap is two renames (old output aside, staging into place); whichever fails, the
    previous output is back where it was and neither the staging nor the set-aside copy remains."""

    out = tmp_path / "out"
    first = write_stack(objects(), out)
    before = {p.name: p.read_bytes() for p in first}
    calls = {"n": 0}
    real_rename = os.rename

    def rename(src: str, dst: str) -> None:
        calls["n"] += 1
        if calls["n"] == failing_call:
            raise OSError(28, "No space left on device")
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(OutputError, match="No space left on device"):
        write_stack(objects(), out)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in out.glob("*.yaml")} == before
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_a_failed_write_removes_the_parents_it_created(tmp_path: Path, monkeypatch: Any) -> None:

    def chmod(*args: Any) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "chmod", chmod)
    with pytest.raises(OutputError, match="Input/output error"):
        write_stack(objects(), tmp_path / "a" / "b" / "out")
    assert os.listdir(tmp_path) == []


def test_refuses_a_file_as_output(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.write_text("not a directory")
    with pytest.raises(OutputError, match="not a directory"):
        write_stack(objects(), target)
    assert target.read_text() == "not a directory"
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_cli_render_of_the_example(tmp_path: Path) -> None:
    """The acceptance scenario: resumable render examples/pytorch-process-recovery.yaml --out DIR."""
    from resumable import cli

    example = EXAMPLES / "pytorch-process-recovery.yaml"
    if not example.exists():
        pytest.skip("examples/pytorch-process-recovery.yaml not present")
    out = tmp_path / "stack"
    assert cli.main(["render", str(example), "--out", str(out)]) == 0
    docs = {p.name: yaml.safe_load(p.read_text()) for p in sorted(out.glob("*.yaml"))}
    by = {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d for d in docs.values()}
    assert ("CustomResourceDefinition", "", "ascendjobs.mindxdl.gitee.com") in by
    assert ("CustomResourceDefinition", "", "jobs.batch.volcano.sh") in by
    assert ("Deployment", "volcano-system", "volcano-scheduler") in by
    assert ("Deployment", "volcano-system", "volcano-controllers") in by
    assert ("Deployment", "mindx-dl", "ascend-operator-manager") in by
    assert ("DaemonSet", "mindx-dl", "noded") in by
    assert ("DaemonSet", "npu-exporter", "npu-exporter") in by
    svc = by[("Service", "mindx-dl", "clusterd-grpc-svc")]
    assert svc["spec"]["ports"][0]["port"] == 8899
    conf = by[("ConfigMap", "volcano-system", "volcano-scheduler-configmap")]["data"]["volcano-scheduler.conf"]
    assert "volcano-npu_" in conf
    ds = next(d for k, d in by.items() if k[0] == "DaemonSet" and k[1] == "kube-system")
    assert "-hotReset=2" in " ".join(ds["spec"]["template"]["spec"]["containers"][0]["args"])


def test_no_yaml_anchors_or_aliases(tmp_path: Path) -> None:
    """Builders may share a sub-structure (e.g. one enum schema); the files must still spell it out."""
    for path in write_stack(objects(), tmp_path / "out"):
        text = path.read_text()
        assert "&id0" not in text and "*id0" not in text, path.name


def test_kustomization_lists_every_rendered_file_in_order(tmp_path: Path) -> None:
    """issue 16: no kustomization; `kubectl apply -k` and overlays need one. Its name has no .yaml
    extension, so `kubectl apply -f DIR` (which reads every *.yaml as an object) still works."""
    written = write_stack(objects(), tmp_path / "out")
    kustomization = yaml.safe_load((tmp_path / "out" / KUSTOMIZATION).read_text())
    assert kustomization["apiVersion"] == "kustomize.config.k8s.io/v1beta1"
    assert kustomization["kind"] == "Kustomization"
    assert kustomization["resources"] == [p.name for p in written]
    assert not [n for n in os.listdir(tmp_path / "out") if n.endswith(".yaml") and n not in kustomization["resources"]]


def test_every_rendered_object_carries_the_recommended_labels() -> None:
    """issue 16: app.kubernetes.io/* labels were on 6 of 50 rendered objects."""
    from resumable.api import load_plan
    from resumable.manifests import build_deployment

    for example in EXAMPLE_FILES:
        plan = load_plan(str(example))
        objs = build_deployment(plan).objects()
        for obj in objs:
            labels = obj["metadata"].get("labels") or {}
            where = "%s %s/%s" % (example.name, obj["kind"], obj["metadata"]["name"])
            assert labels.get("app.kubernetes.io/part-of") == "ascend-resumable", where
            assert labels.get("app.kubernetes.io/managed-by") == "resumable", where
            assert labels.get("app.kubernetes.io/name"), where
        jobs = {j.name for j in plan.jobs}
        for obj in build_deployment(plan).stage("jobs").objects:
            assert obj["metadata"]["labels"]["app.kubernetes.io/instance"] in jobs, obj["metadata"]["name"]
