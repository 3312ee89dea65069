"""Every shipped stack passes the config merge the Pulumi CLI runs before the program
(tests/manifests/pulumi_config.py, written from pulumi/pulumi pkg/workspace/config.go), and the
program sees the merged values. The emulation itself is checked on the CLI's own test cases
(pkg/workspace/config_project_test.go at the same commit) and on the failure a declared optional key
without a default causes (issue 15: every stack stopped with "missing configuration values")."""

from __future__ import annotations

import json
from typing import Any, Dict

import pytest
import yaml
from conftest import ROOT

from .pulumi_config import ConfigError, merge, program_config, validate_project
from .pulumi_mocks import PROJECT, project, stack_config, stack_files

STACKS = [p.name[len("Pulumi.") : -len(".yaml")] for p in stack_files()]


@pytest.mark.parametrize("name", STACKS)
def test_every_stack_passes_the_cli_merge(name: str) -> None:
    merged = program_config(merge(name, project(), stack_config(ROOT / f"Pulumi.{name}.yaml")))
    # the stack's own values win, the rest are Pulumi.yaml's defaults, as strings for the program
    for key, value in stack_config(ROOT / f"Pulumi.{name}.yaml").items():
        assert merged[key] == (value if isinstance(value, str) else json.dumps(value)), key
    assert merged["pulumi:disable-default-providers"] == '["kubernetes"]'
    assert merged[f"{PROJECT}:readyTimeout"] in (
        "180",
        str(stack_config(ROOT / f"Pulumi.{name}.yaml").get(f"{PROJECT}:readyTimeout")),
    )
    assert merged[f"{PROJECT}:pushImages"] == "true"
    assert merged[f"{PROJECT}:buildOnPreview"] == "false"
    assert merged.get(f"{PROJECT}:images", "{}").startswith("{")


def test_project_declarations_are_valid() -> None:
    validate_project(project())
    declared = project()["config"]
    required = [k for k, v in declared.items() if ":" not in k and "default" not in v and "value" not in v]
    assert required == ["profile"]
    assert not [k for k, v in declared.items() if isinstance(v, dict) and v.get("secret")], (
        "a declared secret is required in every stack: its default is never encrypted (config.go:128)"
    )


def test_an_optional_key_without_a_default_stops_every_stack() -> None:
    """What Pulumi.yaml did before: optional keys declared with a type only."""
    old = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    old["config"]["kubeconfig"] = {"type": "string", "secret": True}
    old["config"]["imageRegistry"] = {"type": "string"}
    config = stack_config(ROOT / "Pulumi.job-level-minimal.yaml")
    with pytest.raises(
        ConfigError,
        match=r"\AStack 'job-level-minimal' is missing configuration values 'imageRegistry' and 'kubeconfig'\Z",
    ):
        merge("job-level-minimal", old, config)


CLI_CASES = [  # (project config, stack config, the error config_project_test.go expects)
    (
        {"values": {"type": "array", "items": {"type": "string"}}},
        {},
        "Stack 'dev' is missing configuration value 'values'",
    ),
    (
        {"another": {"type": "string"}, "values": {"type": "array", "items": {"type": "string"}}},
        {},
        "Stack 'dev' is missing configuration values 'another' and 'values'",
    ),
    (
        {
            "hello": {"type": "integer"},
            "values": {"type": "array", "items": {"type": "string"}},
            "world": {"type": "string"},
        },
        {},
        "Stack 'dev' is missing configuration values 'hello', 'values' and 'world'",
    ),
    (
        {"token": {"type": "string", "secret": True}},
        {"test:token": "plain"},
        "Stack 'dev' with configuration key 'token' must be encrypted as it's secret",
    ),
    (
        {"n": {"type": "integer"}},
        {"test:n": "many"},
        "Stack 'dev' with configuration key 'n' must be of type 'integer'",
    ),
    (
        {"n": {"type": "integer", "default": "x"}},
        {},
        "The default value specified for configuration key 'n' is not of the expected type",
    ),
    (
        {"aws:region": {"type": "string", "value": "x"}},
        {},
        "Configuration key 'aws:region' is not namespaced by the project and should not define a type",
    ),
]


@pytest.mark.parametrize("declared, stack, message", CLI_CASES)
def test_the_emulation_refuses_what_the_cli_refuses(
    declared: Dict[str, Any], stack: Dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        merge("dev", {"name": "test", "config": declared}, stack)
    assert str(info.value).startswith(message)


def test_the_emulation_accepts_what_the_cli_accepts() -> None:
    declared = {
        "n": {"type": "integer", "default": 3},
        "flag": {"type": "boolean", "default": False},
        "list": {"type": "array", "items": {"type": "string"}, "default": []},
        "obj": {"type": "object", "default": {}},
        "aws:region": {"value": "us-east-1"},
    }
    merged = program_config(merge("dev", {"name": "test", "config": declared}, {"test:n": 300, "test:flag": "true"}))
    assert merged == {
        "test:n": "300",
        "test:flag": "true",
        "test:list": "[]",
        "test:obj": "{}",
        "aws:region": "us-east-1",
    }
