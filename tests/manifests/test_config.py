"""Bad stack configuration and bad profiles fail the preview with one paragraph naming the key or
the profile's violations, before any resource is registered (no stack trace, nothing created)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

import pulumi
import pytest
import yaml

from .pulumi_mocks import MOCKS, ROOT, install_stub_context, reset, run_program, stack_config

BASE = "Pulumi.pytorch-process-recovery.yaml"


def fails(monkeypatch: Any, tmp_path: Path, config: Dict[str, Any], pattern: str) -> str:
    reset()
    install_stub_context(monkeypatch, tmp_path)
    with pytest.raises(pulumi.RunError, match=pattern) as info:
        run_program(config)
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    assert MOCKS.kubernetes() == [], "resources were registered before the config was checked"
    return message


def base(**changes: Any) -> Dict[str, Any]:
    config = dict(stack_config(ROOT / BASE))
    for key, value in changes.items():
        full = f"ascend-resumable:{key}"
        if value is None:
            config.pop(full, None)
        else:
            config[full] = value
    return config


@pytest.mark.parametrize(
    "changes, pattern",
    [
        ({"profile": None}, r"stack config profile: is not set\. Name the profile"),
        ({"readyTimeout": "soon"}, r"stack config readyTimeout: is not an integer"),
        ({"readyTimeout": "5"}, r"stack config readyTimeout: 5 is outside 10\.\.3600"),
        ({"pushImages": "maybe"}, r"stack config pushImages: is not true or false"),
        ({"retainOnDelete": "keep"}, r"stack config retainOnDelete: is not true or false"),
        ({"images": {"llama-pretrain": "Not A Reference"}}, r"stack config images\.llama-pretrain: .* is not an image"),
        ({"images": {"no-such-job": "r.example.com/a:1"}}, r"stack config images: no job named no-such-job"),
        ({"images": "just-a-string"}, r"stack config images: is not a mapping"),
        ({"imageRegistry": "https://registry.example.com"}, r"stack config imageRegistry: .* is not a registry prefix"),
        ({"crdSources": "ascend-operator.yaml"}, r"stack config crdSources: is not a list of file paths"),
        ({"crdSources": ["/no/such/ascend-operator.yaml"]}, r"/no/such/ascend-operator\.yaml"),
    ],
)
def test_bad_stack_config(monkeypatch: Any, tmp_path: Path, changes: Dict[str, Any], pattern: str) -> None:
    fails(monkeypatch, tmp_path, base(**changes), pattern)


def test_a_built_image_needs_somewhere_to_go(monkeypatch: Any, tmp_path: Path) -> None:
    config = dict(stack_config(ROOT / "Pulumi.pytorch-pod-rescheduling.yaml"))
    del config["ascend-resumable:imageRegistry"]
    fails(
        monkeypatch, tmp_path, config, r"job gpt-pod-level has no image reference to push to; set jobs\[\]\.image\.name"
    )


def test_missing_profile_file(monkeypatch: Any, tmp_path: Path) -> None:
    fails(monkeypatch, tmp_path, base(profile=str(tmp_path / "nope.yaml")), r"nope\.yaml: no such file")


def test_profile_that_does_not_bind(monkeypatch: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("cluster:\n  name: x\n  mindcluster: '7.3.0'\n  no_such_key: 1\n")
    fails(monkeypatch, tmp_path, base(profile=str(bad)), r"bad.yaml: cluster: unknown key")


def test_invalid_profile_lists_its_violations(monkeypatch: Any, tmp_path: Path) -> None:
    profile = yaml.safe_load((ROOT / "examples" / "pytorch-process-recovery.yaml").read_text())
    recovery = profile["jobs"][0]["recovery"]
    recovery["restart_policy"] = "OnFailure"  # fault-retry-times needs Never (YAMLCFG)
    profile["jobs"][0]["volumes"] = [{"name": "code", "mount_path": "/dev/shm", "host_path": "/data"}]
    bad = tmp_path / "invalid.yaml"
    bad.write_text(yaml.safe_dump(profile))
    message = fails(monkeypatch, tmp_path, base(profile=str(bad)), r"invalid \(2 errors, 0 warnings\)")
    assert "[retry-restart-policy]" in message and "[job-volumes]" in message
