"""Write the stack as YAML files: one object per file, numbered in install order.

``000-namespace-mindx-dl.yaml``, ``005-customresourcedefinition-jobs.batch.volcano.sh.yaml``, ...
``kubectl apply -f DIR`` (files sorted by name) follows the install order, and a GitOps tool or a
code review sees one stable file per object. The directory is replaced as a whole: the files are
written to a temporary directory beside it, which is then renamed into place.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, List, Sequence, Union

import yaml

from .k8s import Obj


class _Dumper(yaml.SafeDumper):
    """Plain YAML for reviews: no anchors or aliases even where builders share a sub-structure."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> Any:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def to_yaml(obj: Obj) -> str:
    text: str = yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=110)
    return text


def file_name(index: int, obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    parts = [obj["kind"].lower()]
    if meta.get("namespace"):
        parts.append(str(meta["namespace"]))
    parts.append(str(meta["name"]))
    slug = re.sub(r"[^a-z0-9.-]+", "-", "-".join(parts).lower())
    return f"{index:03d}-{slug}.yaml"


def write_stack(objects: Sequence[Obj], out_dir: Union[str, os.PathLike[str]]) -> List[Path]:
    """Replace ``out_dir`` with one YAML file per object; return the final paths in order.

    Nothing else is written. If anything fails, ``out_dir`` is left as it was.
    """
    target = Path(out_dir)
    if target.exists() and not target.is_dir():
        raise NotADirectoryError(f"{target} exists and is not a directory; choose another --out")
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    names = [file_name(i, obj) for i, obj in enumerate(objects)]
    if len(set(names)) != len(names):
        raise ValueError("two objects map to the same file name")
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent))
    old = None
    try:
        for name, obj in zip(names, objects):
            (staging / name).write_text(to_yaml(obj), encoding="utf-8")
        os.chmod(staging, 0o755)
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=parent))
            os.rmdir(old)
            os.rename(target, old)
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if old is not None and not target.exists():
            os.rename(old, target)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return [target / name for name in names]
