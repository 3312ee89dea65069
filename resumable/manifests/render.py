"""Write the stack as YAML files: one object per file, numbered in install order.

``000-namespace-mindx-dl.yaml``, ``005-customresourcedefinition-jobs.batch.volcano.sh.yaml``, ...
``kubectl apply -f DIR`` (files sorted by name) follows the install order, and a GitOps tool or a
code review sees one stable file per object; the file ``Kustomization`` lists them for ``kubectl
apply -k DIR`` and kustomize overlays. The directory is replaced as a whole: the files are
written to a temporary directory beside it, which is then renamed into place; only a directory
that an earlier render wrote (it holds the marker file ``.resumable-output``, which kubectl
ignores) or an empty one is ever replaced.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import List, Sequence, TextIO, Union

from .. import yamlio
from ..fileio import replace_directory
from .k8s import Obj


def to_yaml(obj: Obj) -> str:
    """One object as YAML (libyaml when present, the same bytes without it: :mod:`resumable.yamlio`)."""
    return yamlio.dump(obj)


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

    Nothing else is written but the marker file that lets the next render replace the directory
    (:func:`resumable.fileio.replace_directory`: an existing directory without it, a file or a
    symbolic link is refused with an :class:`~resumable.fileio.OutputError`). If anything fails,
    ``out_dir`` is left as it was and no staging directory remains.
    """
    names = [file_name(i, obj) for i, obj in enumerate(objects)]
    if len(set(names)) != len(names):
        raise ValueError("two objects map to the same file name")
    files = [(name, to_yaml(obj)) for name, obj in zip(names, objects)]
    written = replace_directory(
        os.fspath(out_dir), [*files, (KUSTOMIZATION, kustomization(names))], option="--out", command="resumable render"
    )
    return written[: len(files)]


#: The kustomization file's name: one of the three kustomize reads (kustomization.yaml,
#: kustomization.yml, Kustomization), the one without a YAML extension, because `kubectl apply
#: -f DIR` reads every *.yaml file of DIR as an object and fails on a kustomization.yaml
#: ("no matches for kind Kustomization"); this way both `-f DIR` and `-k DIR` work.
KUSTOMIZATION = "Kustomization"


def kustomization(names: Sequence[str]) -> str:
    """A Kustomization listing the rendered files in install order (kustomize's default order
    also puts namespaces and CRDs first)."""
    head = "# Written by `resumable render`: `kubectl apply -k DIR` applies what `kubectl apply -f DIR` does.\n"
    return head + yamlio.dump(
        {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": list(names)}
    )


def write_stream(objects: Sequence[Obj], out: TextIO) -> None:
    """Every object as one multi-document YAML stream (``---`` before each), in install order, for
    ``kubectl apply -f -``."""
    for obj in objects:
        out.write("---\n")
        out.write(to_yaml(obj))
