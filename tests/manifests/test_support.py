"""Unsupported combinations fail before anything is built, with a clear one-paragraph message."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Dict

import pytest

from resumable.manifests import UnsupportedStack, build_stack, check_supported

from .plans import scheduler_plan


@pytest.mark.parametrize(
    "overrides, words",
    [
        ({"stack_release": None, "release": "7.2.RC1"}, ["MindCluster 7.2.RC1", "6.0.0", "26.1.0"]),
        ({"arch": "riscv64"}, ["arch", "riscv64", "aarch64, x86_64"]),
        ({"volcano_version": "1.12.0"}, ["Volcano 1.12.0", "1.7.0, 1.9.0", "7.3.0"]),
        ({"kubernetes": "1.30"}, ["Kubernetes 1.30", "1.21 to 1.29", "Volcano 1.9.0"]),
        ({"kubernetes": "1.18", "volcano_version": "1.7.0"}, ["Kubernetes 1.18", "1.19 to 1.28"]),
        ({"container_runtime": "isula"}, ["container_runtime", "isula", "containerd, docker"]),
        ({"image_pull_policy": "Sometimes"}, ["image_pull_policy", "Always, IfNotPresent, Never"]),
        ({"volcano_plugin_name": "volcano-npu_v7.3.0_linux-x86_64"}, ["volcano_plugin_name", "aarch64"]),
        ({"resources": {"scheduler": {"cpu": "1"}}}, ["resources", "scheduler", "volcano-scheduler"]),
        ({"grace_over_time": 5000}, ["grace_over_time", "5000", "2..3600"]),
        ({"hot_reset": 3}, ["hot_reset", "3", "-1, 0, 1, 2"]),
        ({"list_watch_period": 1}, ["list_watch_period", "3..1800"]),
        ({"report_interval": 0}, ["report_interval", "1..300"]),
    ],
)
def test_unsupported_combination_is_rejected(overrides: Dict[str, Any], words: Any) -> None:
    plan = scheduler_plan(**overrides)
    with pytest.raises(UnsupportedStack) as info:
        check_supported(plan)
    message = str(info.value)
    for word in words:
        assert word in message, f"{word!r} not in: {message}"
    assert "\n" not in message and "Traceback" not in message
    with pytest.raises(UnsupportedStack):
        build_stack(plan)  # the builder refuses the same plans


@pytest.mark.parametrize(
    "release, volcano, kube", [("6.0.0", "1.7.0", "1.19"), ("7.3.0", "1.9.0", "1.29"), ("26.1.0", "1.12.0", "1.34")]
)
def test_supported_edges_pass(release: str, volcano: str, kube: str) -> None:
    check_supported(scheduler_plan(release, volcano, kubernetes=kube))


def test_service_pack_release_uses_its_base_manifests() -> None:
    plan = scheduler_plan("6.0.0", "1.9.0")
    plan.release = "6.0.0.SPC1"
    check_supported(plan)


def test_several_problems_are_reported_together() -> None:
    plan = scheduler_plan(arch="riscv64", container_runtime="isula")
    with pytest.raises(UnsupportedStack) as info:
        check_supported(plan)
    assert "riscv64" in str(info.value) and "isula" in str(info.value)


def test_render_cli_exits_2_with_one_paragraph(tmp_path: Any, capsys: Any, monkeypatch: Any) -> None:
    from resumable import cli

    plan = scheduler_plan(volcano_version="1.12.0")

    fake = SimpleNamespace(scheduler=plan, violations=[], notes=[])
    monkeypatch.setattr(cli, "load_plan", lambda path, strict=False: fake)
    out = tmp_path / "out"
    assert cli.main(["render", "profile.yaml", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Volcano 1.12.0" in err and err.count("\n") == 1
    assert not out.exists()
