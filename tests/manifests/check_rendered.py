#!/usr/bin/env python3
"""Validate a `resumable render` directory: built-in kinds with kubernetes-validate --strict, the
AscendJob and Volcano Job custom resources against the upstream CRD schemas in
../shared/upstream (skipped, with a message, when that folder is absent).

usage: tests/manifests/check_rendered.py DIR [KUBERNETES_VERSION]   (make demo runs it)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import kubernetes_validate
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # the test helpers, as pytest imports them

from manifests.crdschema import validate_cr  # noqa: E402
from manifests.upstream import upstream_root  # noqa: E402

UPSTREAM = upstream_root() / "mindcluster" / "v7.3.0"
CRD_FILES = {
    ("mindxdl.gitee.com", "AscendJob"): ("ascend-operator.yaml", "ascendjobs.mindxdl.gitee.com"),
    ("batch.volcano.sh", "Job"): ("volcano-v1.9.0.yaml", "jobs.batch.volcano.sh"),
}


def upstream_crd(group: str, kind: str) -> Optional[Dict[str, Any]]:
    file, name = CRD_FILES[(group, kind)]
    path = UPSTREAM / file
    if not path.is_file():
        return None
    for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
        if doc and doc.get("kind") == "CustomResourceDefinition" and doc["metadata"]["name"] == name:
            return dict(doc)
    return None


def main(argv: List[str]) -> int:
    out = Path(argv[1])
    kube = argv[2] if len(argv) > 2 else "1.28"
    problems: List[str] = []
    checked = custom = 0
    for path in sorted(out.glob("*.yaml")):
        obj = yaml.safe_load(path.read_text(encoding="utf-8"))
        group = obj["apiVersion"].rpartition("/")[0]
        if (group, obj["kind"]) in CRD_FILES:
            crd = upstream_crd(group, obj["kind"])
            if crd is None:
                print(f"SKIP {path.name}: upstream CRD not found under {UPSTREAM}")
                continue
            problems += [f"{path.name}: {e}" for e in validate_cr(obj, crd)]
            custom += 1
            continue
        try:
            kubernetes_validate.validate(obj, kube, strict=True)
        except kubernetes_validate.ValidationError as exc:
            problems.append(f"{path.name}: {exc.message}")
        checked += 1
    for p in problems:
        print("INVALID " + p, file=sys.stderr)
    print(f"checked {checked} objects with kubernetes-validate --strict ({kube}), {custom} custom resources")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
