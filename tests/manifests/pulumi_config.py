"""The Pulumi CLI's project-config merge, as ``pulumi preview``/``up`` runs it before the program.

Written from pulumi/pulumi at commit 1b5949891b3cefcb9974752b24a5ecef0acc86c8 (2026-08-21):

- ``Project.Validate`` (sdk/go/common/workspace/project.go:837-893): ``default`` and ``value`` never
  together (:844); an array needs ``items`` (:853); a typed ``default`` must match its type (:858);
  a key outside the project's namespace has no type (:868), no default (:874) and must have a
  ``value`` (:882).
- stack values (sdk/go/common/resource/config/value.go:238, object.go:403): a YAML scalar becomes
  its text (``300`` -> ``"300"``, ``false`` -> ``"false"``), a mapping or list a JSON "object"
  value, ``{secure: ...}`` a secure value.
- ``mergeConfig`` (pkg/workspace/config.go:255-364): for every project key in sorted order, a key
  of the project's namespace absent from the stack with neither ``value`` nor ``default`` is
  *missing* (:316-324); an absent key with a ``value`` or ``default`` gets it, the default winning
  (:326-345; primitives as their ``%v`` text, others as JSON objects, ``createConfigValue`` :179).
  All missing keys are one error, "Stack 'S' is missing configuration value(s) ..." (:351-354,
  ``missingStackConfigurationKeysError`` :53 with ``formatMissingKeys`` :30).
- ``validateStackConfigValues`` (:66-117, ``validateStackConfigValue`` :119-158): for each typed key,
  a ``secret`` key whose value is not secure fails (:128), then the value (JSON-decoded when an
  object) must satisfy ``ValidateConfigValue`` (project.go:771-829: integer accepts whole numbers
  and strings that parse as one, boolean ``true``/``false`` or a bool, object a mapping, array a
  list whose items match).

The program then gets every merged value as a string (objects as JSON), which is what
:func:`tests.manifests.pulumi_mocks.run_program` hands ``pulumi.runtime.set_all_config``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, List, Optional


class ConfigError(Exception):
    """What the CLI prints before it runs the program."""


@dataclass(frozen=True)
class Value:
    """A stack config value as the CLI holds it (value.go): text, and whether it is JSON or secure."""

    text: str
    object: bool = False
    secure: bool = False


def _scalar_text(raw: Any) -> str:
    """object.go:403: bools and numbers marshal as JSON, strings as themselves."""
    return raw if isinstance(raw, str) else json.dumps(raw)


def stack_value(raw: Any) -> Value:
    """A value read from Pulumi.<stack>.yaml (value.go:238)."""
    if isinstance(raw, dict) and set(raw) == {"secure"}:
        return Value(str(raw["secure"]), secure=True)
    if isinstance(raw, (dict, list)):
        return Value(json.dumps(raw), object=True)
    return Value(_scalar_text(raw))


def _create_config_value(raw: Any) -> Value:
    """config.go:179: ``fmt.Sprintf("%v")`` for string/int/bool, JSON for the rest."""
    if isinstance(raw, bool):
        return Value("true" if raw else "false")
    if isinstance(raw, (str, int)):
        return Value(str(raw))
    return Value(json.dumps(raw), object=True)


def _key(project: str, key: str) -> str:
    """parseConfigKey (config.go:163): an un-namespaced key belongs to the project."""
    return key if ":" in key else f"{project}:{key}"


def _namespaced_by_project(project: str, key: str) -> bool:
    return ":" not in key or key.startswith(project + ":")


def valid_value(type_name: str, items: Optional[Dict[str, Any]], value: Any) -> bool:
    """``ValidateConfigValue`` (project.go:771)."""
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "integer":
        if isinstance(value, bool):
            return False
        if isinstance(value, int):
            return True
        if isinstance(value, float):
            return value == int(value)
        if isinstance(value, str):
            try:
                int(value, 10)  # strconv.Atoi
            except ValueError:
                return False
            return True
        return False
    if type_name == "boolean":
        return value in ("true", "false") or isinstance(value, bool)
    if type_name == "object":
        return isinstance(value, dict)
    if not isinstance(value, list) or items is None:
        return False
    return all(valid_value(items.get("type", ""), items.get("items"), item) for item in value)


def validate_project(project: Dict[str, Any]) -> None:
    """``Project.Validate`` (project.go:837): the checks on ``config:`` declarations."""
    name = project["name"]
    for key, decl in (project.get("config") or {}).items():
        decl = decl if isinstance(decl, dict) else {"value": decl}
        if decl.get("default") is not None and decl.get("value") is not None:
            raise ConfigError(f"project config '{key}' cannot have both a 'default' and 'value' attribute")
        typed = decl.get("type") is not None
        if _namespaced_by_project(name, key):
            if typed and decl["type"] == "array" and decl.get("items") is None:
                raise ConfigError(
                    f"The configuration key '{key}' declares an array but does not specify the underlying type "
                    "via the 'items' attribute"
                )
            if (
                typed
                and decl.get("default") is not None
                and not valid_value(decl["type"], decl.get("items"), decl["default"])
            ):
                raise ConfigError(
                    f"The default value specified for configuration key '{key}' is not of the expected type"
                )
        else:
            if typed:
                raise ConfigError(
                    f"Configuration key '{key}' is not namespaced by the project and should not define a type"
                )
            if decl.get("default") is not None:
                raise ConfigError(
                    f"Configuration key '{key}' is not namespaced by the project and should not define a default value."
                )
            if decl.get("value") is None:
                raise ConfigError(f"Configuration key '{key}' is namespaced and must provide an attribute 'value'")


def _format_missing(keys: List[str]) -> str:
    """``formatMissingKeys`` (config.go:30)."""
    if len(keys) == 1:
        return f"'{keys[0]}'"
    keys = sorted(keys)
    return ", ".join(f"'{k}'" for k in keys[:-2]) + (", " if len(keys) > 2 else "") + f"'{keys[-2]}' and '{keys[-1]}'"


def merge(stack: str, project: Dict[str, Any], stack_config: Dict[str, Any], validate: bool = True) -> Dict[str, Value]:
    """``ValidateStackConfigAndApplyProjectConfig`` (config.go:368): the merged, validated config
    (full ``namespace:key`` -> value), or :class:`ConfigError` with the CLI's message.
    ``validate=False`` is ``ApplyProjectConfig`` (config.go:388, ``--skip-config-validation``):
    defaults applied, nothing refused."""
    validate_project(project)
    name = project["name"]
    merged = {_key(name, k): stack_value(v) for k, v in (stack_config or {}).items()}
    declared = project.get("config") or {}
    missing: List[str] = []
    for key in sorted(declared):
        decl = declared[key] if isinstance(declared[key], dict) else {"value": declared[key]}
        full = _key(name, key)
        has_default = decl.get("default") is not None
        has_value = decl.get("value") is not None
        if full not in merged and not has_value and not has_default and full.split(":", 1)[0] == name:
            missing.append(key)
            continue
        if full not in merged and (has_value or has_default):
            merged[full] = _create_config_value(decl["default"] if has_default else decl["value"])
    if missing and validate:
        plural = "values" if len(missing) > 1 else "value"
        raise ConfigError(f"Stack '{stack}' is missing configuration {plural} {_format_missing(missing)}")
    for key in sorted(declared) if validate else []:
        decl = declared[key] if isinstance(declared[key], dict) else {"value": declared[key]}
        if decl.get("type") is None:
            continue
        value = merged.get(_key(name, key), Value(""))
        if decl.get("secret") and not value.secure:
            raise ConfigError(f"Stack '{stack}' with configuration key '{key}' must be encrypted as it's secret")
        content: Any = json.loads(value.text) if value.object else value.text
        if not valid_value(decl["type"], decl.get("items"), content):
            items = decl.get("items")
            type_name = f"array<{items['type']}>" if items else decl["type"]
            raise ConfigError(f"Stack '{stack}' with configuration key '{key}' must be of type '{type_name}'")
    return merged


def program_config(merged: Dict[str, Value]) -> Dict[str, str]:
    """The strings the language host hands the program (objects as their JSON text)."""
    return {key: value.text for key, value in merged.items()}


def secret_keys(merged: Dict[str, Value]) -> List[str]:
    return sorted(key for key, value in merged.items() if value.secure)
