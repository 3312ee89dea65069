#!/usr/bin/env python3
"""Validate a `resumable render` directory, the way `make demo` shows it.

- built-in kinds: kubernetes-validate --strict at a pinned Kubernetes version;
- custom resources (the AscendJob, a Volcano Job): against the CustomResourceDefinition the same
  render wrote (the one `kubectl apply` would register first), with unknown fields refused where
  the schema lists its properties; a custom resource whose CRD is not in the render is an error;
- also, when the upstream MindCluster release manifests are beside the repository
  (../shared/upstream, or $ASCEND_RESUMABLE_UPSTREAM), against the upstream CRD of v7.3.0.

Needs only PyYAML, kubernetes-validate and jsonschema (the demo's virtualenv), not pytest.

usage: tests/manifests/check_rendered.py DIR [KUBERNETES_VERSION]   (make demo runs it)
exit: 0 all valid, 1 something invalid, 2 DIR is not a render directory
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import kubernetes_validate
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # the test helpers, as pytest imports them

from manifests.crdschema import validate_cr  # noqa: E402
from manifests.upstream import upstream_root  # noqa: E402

UPSTREAM_RELEASE = "v7.3.0"
UPSTREAM_FILES = {
    ("mindxdl.gitee.com", "AscendJob"): ("ascend-operator.yaml", "ascendjobs.mindxdl.gitee.com"),
    ("batch.volcano.sh", "Job"): ("volcano-v1.9.0.yaml", "jobs.batch.volcano.sh"),
}
Kind = Tuple[str, str]


def upstream_dir() -> Path:
    return upstream_root() / "mindcluster" / UPSTREAM_RELEASE


def upstream_crd(group: str, kind: str) -> Optional[Dict[str, Any]]:
    """The upstream CRD of (group, kind), or None when the upstream manifests are not here."""
    if (group, kind) not in UPSTREAM_FILES:
        return None
    file, name = UPSTREAM_FILES[(group, kind)]
    path = upstream_dir() / file
    if not path.is_file():
        return None
    for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
        if doc and doc.get("kind") == "CustomResourceDefinition" and doc["metadata"]["name"] == name:
            return dict(doc)
    return None


def rendered_crds(objects: Dict[str, Dict[str, Any]]) -> Dict[Kind, Tuple[str, Dict[str, Any]]]:
    """(group, kind) -> (file, CRD) for every CustomResourceDefinition of the render."""
    crds = {}
    for name, obj in objects.items():
        if obj.get("kind") == "CustomResourceDefinition" and obj["apiVersion"].startswith("apiextensions.k8s.io/"):
            spec = obj["spec"]
            crds[(spec["group"], spec["names"]["kind"])] = (name, obj)
    return crds


def check(out: Path, kube: str) -> Tuple[List[str], List[str]]:
    """(report lines, problems) for the render directory ``out``."""
    objects = {
        str(p.relative_to(out)): yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted(out.rglob("*.yaml"))
    }
    crds = rendered_crds(objects)
    report: List[str] = []
    problems: List[str] = []
    builtin = 0
    for name, obj in objects.items():
        group = obj["apiVersion"].rpartition("/")[0]
        key = (group, obj["kind"])
        if key in crds or key in UPSTREAM_FILES:
            if key not in crds:
                problems.append(f"{name}: the render has no CustomResourceDefinition for {group}/{obj['kind']}")
                continue
            crd_file, crd = crds[key]
            errors = validate_cr(obj, crd)
            problems += [f"{name}: against {crd_file}: {e}" for e in errors]
            against = [crd_file + " (rendered)"]
            upstream = upstream_crd(*key)
            if upstream is not None:
                errors = validate_cr(obj, upstream)
                problems += [f"{name}: against upstream {UPSTREAM_RELEASE} {key[1]} CRD: {e}" for e in errors]
                against.append(f"the upstream {UPSTREAM_RELEASE} CRD ({UPSTREAM_FILES[key][0]})")
            report.append(f"{obj['kind']} {obj['metadata']['name']}: checked against {' and '.join(against)}")
            continue
        try:
            kubernetes_validate.validate(obj, kube, strict=True)
        except kubernetes_validate.ValidationError as exc:
            problems.append(f"{name}: {exc.message}")
        builtin += 1
    custom = len(report)
    report.append(f"checked {builtin} objects with kubernetes-validate --strict ({kube}), {custom} custom resources")
    if upstream_crd(*next(iter(UPSTREAM_FILES))) is None:
        report.append(f"(no upstream CRDs under {upstream_dir()}: custom resources checked against the render's)")
    return report, problems


def main(argv: List[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[1])
    kube = argv[2] if len(argv) > 2 else "1.28"
    if not out.is_dir() or not any(out.rglob("*.yaml")):
        print(f"error: {out} holds no rendered YAML; run `resumable render PROFILE --out {out}` first", file=sys.stderr)
        return 2
    report, problems = check(out, kube)
    for line in report:
        print(line)
    for p in problems:
        print("INVALID " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
