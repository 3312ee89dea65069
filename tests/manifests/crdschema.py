"""Validate a custom resource against a CRD's openAPIV3Schema with jsonschema.

kubernetes-validate has no schemas for custom kinds (it only warns), so custom resources are
checked here the way the API server does: pick the version's schema,
translate the Kubernetes extensions (``x-kubernetes-int-or-string``, ``nullable``), and in strict
mode reject unknown fields where the schema lists properties (the API server would prune them).
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List

import jsonschema


def _translate(node: Any, strict: bool) -> Any:
    if isinstance(node, list):
        return [_translate(n, strict) for n in node]
    if not isinstance(node, dict):
        return node
    out: Dict[str, Any] = {}
    for key, value in node.items():
        if key.startswith("x-kubernetes-"):
            continue
        if key in ("properties", "patternProperties") and isinstance(value, dict):
            out[key] = {name: _translate(sub, strict) for name, sub in value.items()}
        elif key in ("default", "enum", "example"):
            out[key] = value
        else:
            out[key] = _translate(value, strict)
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.pop("anyOf", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if out.pop("nullable", False) and "type" in out:
        out["type"] = [out["type"], "null"]
    preserve = node.get("x-kubernetes-preserve-unknown-fields")
    if strict and "properties" in node and not preserve and "additionalProperties" not in node:
        out["additionalProperties"] = False
    return out


def cr_schema(crd: Dict[str, Any], version: str, strict: bool = True) -> Dict[str, Any]:
    for v in crd["spec"]["versions"]:
        if v["name"] == version:
            schema = copy.deepcopy(v["schema"]["openAPIV3Schema"])
            break
    else:
        raise KeyError(f"{crd['metadata']['name']} has no version {version}")
    schema.setdefault("properties", {})
    schema["properties"].setdefault("apiVersion", {"type": "string"})
    schema["properties"].setdefault("kind", {"type": "string"})
    schema["properties"]["metadata"] = {"type": "object"}
    return _translate(schema, strict)  # type: ignore[no-any-return]


def validate_cr(cr: Dict[str, Any], crd: Dict[str, Any], strict: bool = True) -> List[str]:
    """Error messages (empty when ``cr`` satisfies the CRD's schema)."""
    group = crd["spec"]["group"]
    kind = crd["spec"]["names"]["kind"]
    group_part, _, version = cr["apiVersion"].rpartition("/")
    errors = []
    if group_part != group or cr.get("kind") != kind:
        errors.append(f"{cr['apiVersion']}/{cr.get('kind')} is not {group}/{kind}")
    validator = jsonschema.Draft4Validator(cr_schema(crd, version, strict))
    errors += [
        f"{'.'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}" for e in validator.iter_errors(cr)
    ]
    return errors
