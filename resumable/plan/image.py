"""The image part of the plan: the vendor wheel files and the torch run.py patch."""

from __future__ import annotations

import os
from typing import List, Optional, Tuple

from .. import constants as C
from .. import releases as R
from ..choices import WheelName
from ..facts import WHEELS, JobFacts, needed_wheels
from ..formats import built_image_reference
from .model import ImagePlan, Note, WheelPlan


def module_of_import(line: str) -> str:
    """The module of a run.py patch line: ``import a.b.c`` -> ``a.b.c``."""
    words = line.split()
    return words[1] if len(words) >= 2 and words[0] == "import" else line


def _resolve(path: Optional[str], profile_dir: Optional[str]) -> Optional[str]:
    """A wheel file path as the image build reads it: absolute, relative ones against the
    profile's directory (the profile travels with its wheels)."""
    if path is None:
        return None
    if profile_dir is not None and not os.path.isabs(path):
        path = os.path.join(profile_dir, path)
    return os.path.normpath(path)


def build_image(f: JobFacts, profile_dir: Optional[str]) -> ImagePlan:
    """The vendor wheels the image installs: those the recovery settings need (with the reason)
    and every other wheel the profile declares; a declared wheel never disappears from the
    recipe. Each comes from its declared file or URL (image.wheels), never from an index by name."""
    job = f.job
    img = job.image
    wanted: List[Tuple[WheelName, str]] = list(needed_wheels(f))
    named = {name for name, _ in wanted}
    for name in WHEELS:
        declared = getattr(img, name) is not None or name in img.wheels
        if declared and name not in named:
            wanted.append((name, "declared in the profile (this job's recovery settings do not need it)"))
    wheels: List[WheelPlan] = []
    for name, reason in wanted:
        spec = img.wheels.get(name)
        wheels.append(
            WheelPlan(
                name=name,
                version=f.wheel_versions.get(name),
                file=_resolve(spec.file, profile_dir) if spec is not None else None,
                url=spec.url if spec is not None else None,
                sha256=spec.sha256.lower() if spec is not None and spec.sha256 else None,
                reason=reason,
            )
        )
    notes: List[Note] = []
    patch: Optional[str] = None
    anchor: Optional[str] = None
    if f.is_pytorch and f.uses_mindx_elastic:
        patch, anchor = C.RUNPY_IMPORT_MINDX_ELASTIC, C.RUNPY_ANCHOR_MINDX_ELASTIC
        notes.append(Note("run.py is patched by the Elastic Agent up to 7.2", "RTO 表2 Dockerfile"))
    elif f.is_pytorch and f.uses_taskd and f.at_least(R.TASKD_RUNPY_PATCH):
        patch, anchor = C.RUNPY_IMPORT_TASKD, C.RUNPY_ANCHOR_TASKD
        notes.append(Note("run.py is patched by TaskD from 7.3.0", "PLR 构建镜像"))
    torch = f.torch
    if (
        f.is_pytorch
        and torch is not None
        and R.at_least(torch, R.PREFIX_STORE_TORCH)
        and R.on_line(f.release, R.RENDEZVOUS_EDIT_LINE)
    ):
        notes.append(
            Note(
                "torch %s on 7.2: the 7.2 guide edits torch/distributed/elastic/rendezvous in the image to give "
                "each restart its own store prefix; `resumable launch` does that itself (no image edit), and "
                "from 7.3 the TaskD patch does it too" % torch,
                "HA72-075; MC:@v7.3.0 component/taskd/taskd/python/adaptor/patch/torch_patch.py",
            )
        )
    return ImagePlan(
        name=img.name,
        base=img.base,
        framework=f.framework,
        wheels=wheels,
        runpy_patch=patch,
        runpy_anchor=anchor,
        user=C.USER_HWHIAI,
        uid=C.UID_HWHIAI,
        notes=notes,
        torch=img.torch,
        torch_npu=img.torch_npu,
        cann=img.cann,
        mindspore=img.mindspore,
        reference=img.name or built_image_reference(job.name, f.cluster.mindcluster, img.registry),
        pullable=bool(img.name or img.registry),
        pull_secrets=list(img.pull_secrets),
    )
