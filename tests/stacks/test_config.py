"""Bad stack configuration and bad profiles fail the preview with one paragraph naming the key or
the profile's violations, before any resource is registered (no stack trace, nothing created)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

import pulumi
import pytest
import yaml
from conftest import EXAMPLES

from .pulumi_mocks import MOCKS, install_program, reset, run_program, shipped_config

STACK = "pytorch-process-recovery"


def fails(monkeypatch: Any, tmp_path: Path, config: Dict[str, Any], pattern: str) -> str:
    reset()
    install_program(monkeypatch, tmp_path)
    with pytest.raises(pulumi.RunError, match=pattern) as info:
        run_program(config)
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    assert MOCKS.kubernetes() == [], "resources were registered before the config was checked"
    return message


def base(tmp_path: Path, **changes: Any) -> Dict[str, Any]:
    # the stack as one that installs the scheduling stack too (it is a workload stack as shipped)
    config = {
        **shipped_config(STACK, tmp_path),
        "ascend-resumable:stackRole": "all",
        "ascend-resumable:clusterStack": "",
    }
    for key, value in changes.items():
        full = f"ascend-resumable:{key}"
        if value is None:
            config.pop(full, None)
        else:
            config[full] = value
    return config


#: mistakes the CLI's type check catches before the program (Pulumi.yaml declares the types; the
#: real CLI's refusal of each is tests/cluster/test_pulumi_config.py)
TYPED = [
    ({"readyTimeout": "soon"}, "readyTimeout", "integer", r"stack config readyTimeout: is not an integer"),
    ({"pushImages": "maybe"}, "pushImages", "boolean", r"stack config pushImages: is not true or false"),
    ({"retainOnDelete": "keep"}, "retainOnDelete", "boolean", r"stack config retainOnDelete: is not true or false"),
    ({"images": "just-a-string"}, "images", "object", r"stack config images: is not a mapping"),
    (
        {"crdSources": "ascend-operator.yaml"},
        "crdSources",
        "array<string>",
        r"stack config crdSources: is not a list of file paths",
    ),
]


@pytest.mark.parametrize("changes, _key, _type, pattern", TYPED)
def test_the_program_says_the_same_when_validation_is_skipped(
    monkeypatch: Any, tmp_path: Path, changes: Dict[str, Any], _key: str, _type: str, pattern: str
) -> None:
    """``--skip-config-validation`` (or an Automation API caller) still gets one clear error."""
    fails(monkeypatch, tmp_path, base(tmp_path, **changes), pattern)


def test_every_problem_in_one_error(monkeypatch: Any, tmp_path: Path) -> None:
    config = base(tmp_path, profile=None, readyTimeout="5", imageRegistry="https://r.example.com")
    message = fails(monkeypatch, tmp_path, config, r"stack config profile: is not set")
    assert "stack config readyTimeout: 5 is outside" in message
    assert "stack config imageRegistry: 'https://r.example.com' is not a registry prefix" in message


@pytest.mark.parametrize(
    "changes, pattern",
    [
        ({"readyTimeout": "5"}, r"stack config readyTimeout: 5 is outside 10\.\.3600"),
        ({"images": {"llama-pretrain": "Not A Reference"}}, r"stack config images\.llama-pretrain: .* is not an image"),
        ({"images": {"no-such-job": "r.example.com/a:1"}}, r"stack config images: no job named no-such-job"),
        ({"imageRegistry": "https://registry.example.com"}, r"stack config imageRegistry: .* is not a registry prefix"),
        ({"crdSources": ["/no/such/ascend-operator.yaml"]}, r"/no/such/ascend-operator\.yaml"),
        ({"stackRole": "everything"}, r"stack config stackRole: 'everything' is not all, cluster or workload"),
        ({"clusterStack": "org/ascend-resumable/a2"}, r"stack config clusterStack: only a workload stack"),
        ({"registryUsername": "robot"}, r"stack config registryPassword: is not set but registryUsername is"),
        ({"registryPassword": "t0ken"}, r"stack config registryUsername: is not set but registryPassword is"),
        ({"pushImages": False}, r"stack config pushImages: false leaves job llama-pretrain on an image no node"),
        (
            {"stackRole": "workload", "crdSources": ["ascend-operator.yaml"]},
            r"stack config crdSources: a workload stack deploys no CRD",
        ),
    ],
)
def test_bad_stack_config(monkeypatch: Any, tmp_path: Path, changes: Dict[str, Any], pattern: str) -> None:
    fails(monkeypatch, tmp_path, base(tmp_path, **changes), pattern)


def test_push_images_false_with_a_prebuilt_reference_is_fine(monkeypatch: Any, tmp_path: Path) -> None:
    reset()
    install_program(monkeypatch, tmp_path)
    config = base(tmp_path, pushImages=False, images={"llama-pretrain": "registry.example.com/ai/llama:1"})
    deployment = run_program(config)["deployment"]
    assert deployment["images"]["llama-pretrain"].image is None


def test_a_built_image_needs_somewhere_to_go(monkeypatch: Any, tmp_path: Path) -> None:
    config = shipped_config("pytorch-pod-rescheduling", tmp_path)
    del config["ascend-resumable:imageRegistry"]
    fails(
        monkeypatch, tmp_path, config, r"job gpt-pod-level has no image reference to push to; set jobs\[\]\.image\.name"
    )


def test_missing_profile_file(monkeypatch: Any, tmp_path: Path) -> None:
    fails(monkeypatch, tmp_path, base(tmp_path, profile=str(tmp_path / "nope.yaml")), r"nope\.yaml: no such file")


def test_profile_that_does_not_bind(monkeypatch: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("cluster:\n  name: x\n  mindcluster: '7.3.0'\n  no_such_key: 1\n")
    fails(monkeypatch, tmp_path, base(tmp_path, profile=str(bad)), r"bad.yaml: cluster: unknown key")


def test_invalid_profile_lists_its_violations(monkeypatch: Any, tmp_path: Path) -> None:
    profile = yaml.safe_load((EXAMPLES / "pytorch-process-recovery.yaml").read_text())
    recovery = profile["jobs"][0]["recovery"]
    recovery["restart_policy"] = "OnFailure"  # fault-retry-times needs Never (YAMLCFG)
    profile["jobs"][0]["volumes"] = [{"name": "code", "mount_path": "/dev/shm", "host_path": "/data"}]
    bad = tmp_path / "invalid.yaml"
    bad.write_text(yaml.safe_dump(profile))
    message = fails(monkeypatch, tmp_path, base(tmp_path, profile=str(bad)), r"invalid \(2 errors, 0 warnings\)")
    assert "[retry-restart-policy]" in message and "[job-volumes]" in message
