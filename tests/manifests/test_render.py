"""``write_layers``: the deployment in four layers of numbered YAML files, each with its
Kustomization; deterministic, never half-written, never replacing a directory it did not write; and
the kubectl commands that apply, diff and delete them (:func:`apply_steps` and friends)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml
from conftest import EXAMPLE_FILES, EXAMPLES

from resumable.api import load_plan
from resumable.fileio import MARKER, OutputError
from resumable.manifests import build_deployment
from resumable.manifests import render as render_module
from resumable.manifests.render import (
    CLUSTER,
    CRDS,
    KUSTOMIZATION,
    STORAGE,
    Layer,
    apply_steps,
    delete_job_steps,
    diff_steps,
    file_name,
    steps_text,
    write_layers,
)

EXAMPLE = EXAMPLES / "pytorch-process-recovery.yaml"


def layers() -> List[Layer]:
    return build_deployment(load_plan(str(EXAMPLE))).layers()


def two_jobs(tmp_path: Path) -> Path:
    """The example with a second job (another name, the same settings) beside the first."""
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["jobs"].append(dict(doc["jobs"][0], name="llama-finetune"))
    path = tmp_path / "two-jobs.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def read_layer(out: Path, layer: str) -> List[Dict[str, Any]]:
    names = yaml.safe_load((out / layer / KUSTOMIZATION).read_text())["resources"]
    return [yaml.safe_load((out / layer / n).read_text()) for n in names]


def test_four_layers_each_with_its_kustomization(tmp_path: Path) -> None:
    """issue 24: everything was one directory, so the CRDs and an AscendJob went in one apply (kubectl
    refuses the job: "ensure CRDs are installed first") and `delete -k` of it took the CRDs along."""
    out = tmp_path / "out"
    written = write_layers(layers(), out)
    assert sorted(os.listdir(out)) == [MARKER, CRDS, CLUSTER, STORAGE, "4-jobs"]
    assert os.listdir(out / "4-jobs") == ["llama-pretrain"]
    crds = read_layer(out, CRDS)
    assert crds and all(o["kind"] == "CustomResourceDefinition" for o in crds)
    cluster = read_layer(out, CLUSTER)
    assert cluster[0]["kind"] == "Namespace" and not [o for o in cluster if o["kind"] == "CustomResourceDefinition"]
    storage = read_layer(out, STORAGE)
    assert [o["kind"] for o in storage][:3] == ["Namespace", "PersistentVolume", "PersistentVolume"]
    job = read_layer(out, "4-jobs/llama-pretrain")
    assert job[-1]["kind"] == "AscendJob" and {o["kind"] for o in job[:-1]} == {"ConfigMap"}
    # every object file is listed by its layer's kustomization, in file-name (install) order
    for layer in (CRDS, CLUSTER, STORAGE, "4-jobs/llama-pretrain"):
        resources = yaml.safe_load((out / layer / KUSTOMIZATION).read_text())["resources"]
        assert resources == sorted(p.name for p in (out / layer).glob("*.yaml"))
    assert len(written) == sum(len(layer.objects) for layer in layers())


def test_a_job_directory_holds_that_job_alone(tmp_path: Path) -> None:
    """`kubectl delete -k DIR/4-jobs/<job>` deletes what its kustomization lists: that job's objects
    and nothing shared (no CRD, namespace, volume or claim, nothing of another job)."""
    plan = load_plan(str(two_jobs(tmp_path)))
    out = tmp_path / "out"
    write_layers(build_deployment(plan).layers(), out)
    assert sorted(os.listdir(out / "4-jobs")) == ["llama-finetune", "llama-pretrain"]
    for job in ("llama-finetune", "llama-pretrain"):
        objs = read_layer(out, "4-jobs/" + job)
        assert {o["metadata"]["labels"]["app.kubernetes.io/instance"] for o in objs} == {job}
        assert {o["kind"] for o in objs} == {"ConfigMap", "AscendJob"}
        assert all(job in o["metadata"]["name"] for o in objs)
    (step,) = delete_job_steps(str(out), "llama-finetune")
    assert step.argv == ("kubectl", "delete", "-k", "%s/4-jobs/llama-finetune" % out)


def test_numbers_sort_in_install_order_at_any_size() -> None:
    """issue 24: past 999 objects `1000-` sorted before `101-`."""
    objs = [{"kind": "ConfigMap", "metadata": {"name": "cm-%d" % i, "namespace": "ns"}} for i in range(1200)]
    names = Layer("x", objs).names()
    assert names == sorted(names)
    assert names[0] == "0000-configmap-ns-cm-0.yaml" and names[-1] == "1199-configmap-ns-cm-1199.yaml"
    assert Layer("x", objs[:5]).names()[0] == "000-configmap-ns-cm-0.yaml"
    assert file_name(7, objs[7], 3) == "007-configmap-ns-cm-7.yaml"


def test_the_apply_steps_follow_the_layers() -> None:
    steps = [s.argv for s in apply_steps("out", ["a", "b"])]
    assert steps[0] == ("kubectl", "apply", "--server-side", "-k", "out/1-crds")
    assert steps[1][:3] == ("kubectl", "wait", "--for=condition=Established") and steps[1][-2:] == ("-f", "out/1-crds")
    assert steps[2] == ("kubectl", "apply", "-k", "out/2-cluster")
    assert steps[3] == ("kubectl", "apply", "-k", "out/3-storage")
    assert steps[4][:3] == ("kubectl", "wait", "--for=condition=Complete")
    assert "ascend-resumable/prepare=storage" in steps[4]
    assert steps[5:] == [("kubectl", "apply", "-k", "out/4-jobs/a"), ("kubectl", "apply", "-k", "out/4-jobs/b")]
    assert [s.argv for s in apply_steps("out", ["a"], prepare=False)][4] == ("kubectl", "apply", "-k", "out/4-jobs/a")
    diffs = [s.argv for s in diff_steps("out", ["a"])]
    assert diffs[0] == ("kubectl", "diff", "--server-side", "-k", "out/1-crds")
    assert diffs[1:] == [("kubectl", "diff", "-k", "out/%s" % p) for p in (CLUSTER, STORAGE, "4-jobs/a")]


def test_render_prints_the_steps_and_help_shows_the_same(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The commands the help, the render summary and the docs give are the ones of apply_steps."""
    from resumable import cli

    out = tmp_path / "out"
    assert cli.main(["render", str(EXAMPLE), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert steps_text(str(out), ["llama-pretrain"], prepare=True) in printed
    for step in apply_steps(str(out), ["llama-pretrain"]):
        for arg in step.argv:
            if arg.startswith(str(out)):
                assert os.path.exists(arg), arg
    with pytest.raises(SystemExit):
        cli.main(["render", "--help"])
    help_text = capsys.readouterr().out
    for line in steps_text().splitlines():
        assert line.strip() in help_text


def test_scheduler_config_is_a_readable_literal_block(tmp_path: Path) -> None:
    write_layers(layers(), tmp_path / "out")
    (cm,) = (tmp_path / "out" / CLUSTER).glob("*volcano-scheduler-configmap*")
    assert "volcano-scheduler.conf: |" in cm.read_text()


def test_deterministic(tmp_path: Path) -> None:
    a = write_layers(layers(), tmp_path / "a")
    b = write_layers(layers(), tmp_path / "b")
    assert [os.path.relpath(p, tmp_path / "a") for p in a] == [os.path.relpath(p, tmp_path / "b") for p in b]
    assert [Path(p).read_bytes() for p in a] == [Path(p).read_bytes() for p in b]


def test_replaces_its_own_previous_output_and_leaves_nothing_else(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_layers(layers(), out)
    (out / CLUSTER / "stale.yaml").write_text("old")  # e.g. an object an older release rendered
    (out / "4-jobs" / "removed-job").mkdir()
    write_layers(layers(), out)
    assert not (out / CLUSTER / "stale.yaml").exists() and not (out / "4-jobs" / "removed-job").exists()
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_an_empty_directory_is_used(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    write_layers(layers(), out)
    assert sorted(os.listdir(out)) == [MARKER, CRDS, CLUSTER, STORAGE, "4-jobs"]


def test_refuses_a_directory_of_unrelated_files(tmp_path: Path) -> None:
    out = tmp_path / "home"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    with pytest.raises(OutputError, match="did not write"):
        write_layers(layers(), out)
    assert os.listdir(out) == ["thesis.tex"]
    assert sorted(os.listdir(tmp_path)) == ["home"]


def test_refuses_a_symbolic_link(tmp_path: Path) -> None:
    real = tmp_path / "real"
    write_layers(layers(), real)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(OutputError, match="symbolic link"):
        write_layers(layers(), link)
    assert link.is_symlink() and (real / MARKER).exists()


def _files(out: Path) -> Dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def test_failure_keeps_the_old_directory(tmp_path: Path, monkeypatch: Any) -> None:
    out = tmp_path / "out"
    write_layers(layers(), out)
    before = _files(out)
    calls = {"n": 0}
    real = render_module.to_yaml

    def failing(obj: Any) -> str:
        calls["n"] += 1
        if calls["n"] == 5:
            raise RuntimeError("disk full")
        return real(obj)

    monkeypatch.setattr(render_module, "to_yaml", failing)
    with pytest.raises(RuntimeError):
        write_layers(layers(), out)
    assert _files(out) == before
    assert sorted(os.listdir(tmp_path)) == ["out"]


@pytest.mark.parametrize("failing_call", [1, 2])
def test_a_failed_swap_restores_the_previous_output(tmp_path: Path, monkeypatch: Any, failing_call: int) -> None:
    """The swap is two renames (old output aside, staging into place); whichever fails, the
    previous output is back where it was and neither the staging nor the set-aside copy remains."""

    out = tmp_path / "out"
    write_layers(layers(), out)
    before = _files(out)
    calls = {"n": 0}
    real_rename = os.rename

    def rename(src: str, dst: str) -> None:
        calls["n"] += 1
        if calls["n"] == failing_call:
            raise OSError(28, "No space left on device")
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(OutputError, match="No space left on device"):
        write_layers(layers(), out)
    monkeypatch.undo()
    assert _files(out) == before
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_a_failed_write_removes_the_parents_it_created(tmp_path: Path, monkeypatch: Any) -> None:
    def chmod(*args: Any) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "chmod", chmod)
    with pytest.raises(OutputError, match="Input/output error"):
        write_layers(layers(), tmp_path / "a" / "b" / "out")
    assert os.listdir(tmp_path) == []


def test_refuses_a_file_as_output(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.write_text("not a directory")
    with pytest.raises(OutputError, match="not a directory"):
        write_layers(layers(), target)
    assert target.read_text() == "not a directory"
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_cli_render_of_the_example(tmp_path: Path) -> None:
    """The acceptance scenario: resumable render examples/pytorch-process-recovery.yaml --out DIR."""
    from resumable import cli

    out = tmp_path / "stack"
    assert cli.main(["render", str(EXAMPLE), "--out", str(out)]) == 0
    docs = [yaml.safe_load(p.read_text()) for p in sorted(out.rglob("*.yaml"))]
    by = {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d for d in docs}
    assert ("CustomResourceDefinition", "", "ascendjobs.mindxdl.gitee.com") in by
    assert ("CustomResourceDefinition", "", "jobs.batch.volcano.sh") in by
    assert ("Deployment", "volcano-system", "volcano-scheduler") in by
    assert ("Deployment", "mindx-dl", "ascend-operator-manager") in by
    assert ("DaemonSet", "mindx-dl", "noded") in by
    assert by[("Service", "mindx-dl", "clusterd-grpc-svc")]["spec"]["ports"][0]["port"] == 8899
    ds = next(d for k, d in by.items() if k[0] == "DaemonSet" and k[1] == "kube-system")
    assert "-hotReset=2" in " ".join(ds["spec"]["template"]["spec"]["containers"][0]["args"])


def test_one_layer_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    from resumable import cli

    assert cli.main(["render", str(EXAMPLE), "--out", "-", "--layer", CRDS]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert docs and {d["kind"] for d in docs} == {"CustomResourceDefinition"}
    assert cli.main(["render", str(EXAMPLE), "--out", "-", "--layer", "4-jobs/nope"]) == 2
    assert "4-jobs/llama-pretrain" in capsys.readouterr().err
    assert cli.main(["render", str(EXAMPLE), "--out", "x", "--layer", CRDS]) == 2


def test_no_yaml_anchors_or_aliases(tmp_path: Path) -> None:
    """Builders may share a sub-structure (e.g. one enum schema); the files must still spell it out."""
    for path in write_layers(layers(), tmp_path / "out"):
        text = Path(path).read_text()
        assert "&id0" not in text and "*id0" not in text, path


def test_every_rendered_object_carries_the_recommended_labels() -> None:
    """issue 16: app.kubernetes.io/* labels were on 6 of 50 rendered objects."""
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
