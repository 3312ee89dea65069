"""The node check before a deployment: no management node stops the preview at once with what to
do; missing compute nodes only warn; an unreachable API server leaves the decision to the provider."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

import pulumi
import pytest
from conftest import EXAMPLES

from resumable.api import load_plan
from resumable_pulumi.readiness import check_nodes, selector

from .pulumi_mocks import MOCKS, FakeNodes, install_program, reset, run_program, shipped_config

PLAN = load_plan(str(EXAMPLES / "pytorch-process-recovery.yaml"))
MASTER = {"masterselector": "dls-master-node"}
COMPUTE = {
    "workerselector": "dls-worker-node",
    "node-role.kubernetes.io/worker": "worker",
    "host-arch": "huawei-arm",
    "accelerator": "huawei-Ascend910",
    "accelerator-type": "module-910b-8",
    "nodeDEnable": "on",
}


def counter(labelled: Dict[str, str]) -> Any:
    return FakeNodes(labelled).counter(None, None)


def test_selectors_are_the_documented_labels() -> None:
    """INST01 Table 1 / K8S Table 4, written out here, against the plan's node labels."""
    assert selector(PLAN.nodes.master_labels) == "masterselector=dls-master-node"
    assert PLAN.nodes.labels == COMPUTE


@pytest.mark.parametrize(
    "labelled, errors, warnings",
    [
        ({**MASTER, **COMPUTE}, 0, 0),
        (COMPUTE, 1, 0),
        (MASTER, 0, 1),
        ({**MASTER, **COMPUTE, "accelerator-type": "module-a3-16"}, 0, 1),
        ({}, 1, 1),
    ],
)
def test_check_nodes(labelled: Dict[str, str], errors: int, warnings: int) -> None:
    result = check_nodes(counter(labelled), PLAN.nodes)
    assert (len(result.errors), len(result.warnings)) == (errors, warnings)
    for e in result.errors:
        assert "kubectl label node NAME masterselector=dls-master-node" in e


def run(monkeypatch: Any, tmp_path: Path, nodes: FakeNodes, **extra: str) -> Any:
    reset()
    install_program(monkeypatch, tmp_path, nodes)
    config = {**shipped_config("pytorch-process-recovery", tmp_path), **extra}
    return run_program(config)


def test_unlabelled_cluster_fails_before_anything_is_registered(monkeypatch: Any, tmp_path: Path) -> None:
    nodes = FakeNodes(COMPUTE)
    with pytest.raises(pulumi.RunError, match=r"no node carries masterselector=dls-master-node") as info:
        run(monkeypatch, tmp_path, nodes)
    assert "\n" not in str(info.value)
    assert nodes.asked and MOCKS.resources == []


def test_check_can_be_switched_off(monkeypatch: Any, tmp_path: Path) -> None:
    nodes = FakeNodes({})
    run(monkeypatch, tmp_path, nodes, **{"ascend-resumable:checkNodes": "false"})
    assert nodes.asked == []


def test_unreachable_cluster_only_warns(monkeypatch: Any, tmp_path: Path) -> None:
    warnings = []
    monkeypatch.setattr(pulumi.log, "warn", lambda msg, *a, **k: warnings.append(msg))
    run(monkeypatch, tmp_path, FakeNodes(fail=ConnectionError("connection refused")))
    assert any("node check skipped (ConnectionError: connection refused)" in w for w in warnings)


def test_kubeconfig_contents_reach_the_client(monkeypatch: Any, tmp_path: Path) -> None:
    """A kubeconfig given as contents (not a path) is handed to the client library as a file."""
    import kubernetes.config

    seen: Dict[str, Any] = {}

    def fake(config_file: Any = None, context: Any = None) -> Any:
        seen["text"] = Path(config_file).read_text()
        seen["context"] = context
        raise RuntimeError("stop here")

    monkeypatch.setattr(kubernetes.config, "new_client_from_config", fake)
    from resumable_pulumi.readiness import cluster_node_counter

    with pytest.raises(RuntimeError, match="stop here"):
        cluster_node_counter("apiVersion: v1\nkind: Config\n", "ctx")
    assert seen == {"text": "apiVersion: v1\nkind: Config\n", "context": "ctx"}
