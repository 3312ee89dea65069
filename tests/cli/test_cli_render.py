"""`resumable render`: the acceptance stack of the process-recovery example, and its flags."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml
from conftest import EXAMPLES

from resumable.cli import main

EXAMPLE = str(EXAMPLES / "pytorch-process-recovery.yaml")


def rendered(out: Path) -> List[Dict[str, Any]]:
    return [yaml.safe_load(p.read_text()) for p in sorted(out.rglob("*.yaml"))]


def find(objs: List[Dict[str, Any]], kind: str, name: str) -> Dict[str, Any]:
    return next(o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name)


def test_render_writes_the_whole_stack(tmp_path: Path) -> None:
    out = tmp_path / "stack"
    assert main(["render", EXAMPLE, "--out", str(out)]) == 0
    objs = rendered(out)
    crds = {o["metadata"]["name"] for o in objs if o["kind"] == "CustomResourceDefinition"}
    assert {"ascendjobs.mindxdl.gitee.com", "jobs.batch.volcano.sh", "podgroups.scheduling.volcano.sh"} <= crds
    first_other = min(i for i, o in enumerate(objs) if o["kind"] not in ("Namespace", "CustomResourceDefinition"))
    assert all(o["kind"] in ("Namespace", "CustomResourceDefinition") for o in objs[:first_other])
    for name in ("volcano-scheduler", "volcano-controllers"):
        assert find(objs, "Deployment", name)["metadata"]["namespace"] == "volcano-system"
    conf = yaml.safe_load(find(objs, "ConfigMap", "volcano-scheduler-configmap")["data"]["volcano-scheduler.conf"])
    plugins = [p["name"] for tier in conf["tiers"] for p in tier["plugins"]]
    assert "volcano-npu_v7.3.0_linux-aarch64" in plugins
    init = next(c for c in conf["configurations"] if c["name"] == "init-params")
    assert init["arguments"]["grace-over-time"] == "900"
    for kind, name in (("Deployment", "ascend-operator-manager"), ("Deployment", "clusterd"), ("DaemonSet", "noded")):
        assert find(objs, kind, name)["metadata"]["namespace"] == "mindx-dl"
    svc = find(objs, "Service", "clusterd-grpc-svc")
    assert [p["port"] for p in svc["spec"]["ports"]] == [8899]
    plugin = next(o for o in objs if o["kind"] == "DaemonSet" and o["metadata"]["namespace"] == "kube-system")
    args = " ".join(plugin["spec"]["template"]["spec"]["containers"][0]["args"])
    assert "-hotReset=2" in args and "-volcanoType=true" in args
    assert any(o["kind"] == "DaemonSet" and o["metadata"]["name"] == "npu-exporter" for o in objs)


def test_image_override_and_unknown_component(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "stack"
    assert main(["render", EXAMPLE, "--out", str(out), "--image", "clusterd=reg.example/clusterd:v7.3.0"]) == 0
    clusterd = find(rendered(out), "Deployment", "clusterd")
    assert clusterd["spec"]["template"]["spec"]["containers"][0]["image"] == "reg.example/clusterd:v7.3.0"
    assert main(["render", EXAMPLE, "--out", str(tmp_path / "x"), "--image", "clusterdd=reg/x:1"]) == 2
    assert "unknown component 'clusterdd'" in capsys.readouterr().err
    assert main(["render", EXAMPLE, "--out", str(tmp_path / "x"), "--image", "clusterd"]) == 2
    assert not (tmp_path / "x").exists()


def test_missing_crd_source_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", EXAMPLE, "--out", str(tmp_path / "x"), "--crd-source", str(tmp_path / "nope.yaml")]) == 2
    err = capsys.readouterr().err
    assert "nope.yaml" in err and "Traceback" not in err
    assert not (tmp_path / "x").exists()


def test_invalid_profile_renders_nothing(tmp_path: Path) -> None:
    doc = yaml.safe_load(Path(EXAMPLE).read_text())
    doc["jobs"][0]["recovery"]["watchdog"] = "on"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc))
    assert main(["render", str(bad), "--out", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()
