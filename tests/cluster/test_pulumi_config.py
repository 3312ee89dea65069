"""What the real Pulumi CLI refuses in a stack's config before the program runs: Pulumi.yaml declares
every key's type and ``profile`` as the one key without a default (pulumi/pulumi pkg/workspace
config.go mergeConfig). The program's own checks of the same keys, for a caller that skips the
CLI's validation, are tests/stacks/test_config.py (under mocks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

import pytest
import yaml

from .fixtures import PROJECT, Project, built

STACK = "config-check"
TYPED = [
    ({"readyTimeout": "soon"}, "readyTimeout", "integer"),
    ({"pushImages": "maybe"}, "pushImages", "boolean"),
    ({"retainOnDelete": "keep"}, "retainOnDelete", "boolean"),
    ({"images": "just-a-string"}, "images", "object"),
    ({"crdSources": "ascend-operator.yaml"}, "crdSources", "array<string>"),
]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    built(("pulumi", "pulumi-kubernetes"))
    return Project(tmp_path_factory.mktemp("config") / "project", None)


def refused(project: Project, config: Dict[str, Any]) -> str:
    project.stack_file(STACK).write_text(yaml.safe_dump({"config": config}))
    done = project.pulumi("preview", STACK, check=False)
    assert done.returncode != 0
    return done.stdout + done.stderr


@pytest.mark.parametrize("change, key, type_name", TYPED, ids=[t[1] for t in TYPED])
def test_the_cli_refuses_a_value_of_the_wrong_type(
    project: Project, change: Dict[str, Any], key: str, type_name: str
) -> None:
    config = {f"{PROJECT}:profile": "profiles/pytorch-process-recovery.yaml"}
    config.update({f"{PROJECT}:{k}": v for k, v in change.items()})
    said = refused(project, config)
    assert f"Stack '{STACK}' with configuration key '{key}' must be of type '{type_name}'" in said, said


def test_the_only_required_key_is_profile(project: Project) -> None:
    said = refused(project, {f"{PROJECT}:context": "x"})
    assert f"Stack '{STACK}' is missing configuration value 'profile'" in said, said
    assert "missing configuration values" not in said  # profile alone: every other key has a default


def test_every_shipped_stack_passes_the_cli_config_check(project: Project) -> None:
    """The shipped Pulumi.<stack>.yaml files, merged with Pulumi.yaml by the CLI: the preview gets
    past the config check to the program (which then needs a cluster: none here)."""
    for path in sorted(Path(project.dir).glob("Pulumi.*.yaml")):
        stack = path.name[len("Pulumi.") : -len(".yaml")]
        if stack == STACK:
            continue
        done = project.pulumi("preview", stack, check=False)
        said = done.stdout + done.stderr
        assert "configuration value" not in said and "must be of type" not in said, (stack, said)
        assert "Previewing update" in said, (stack, said)
