"""The whole deployment of a plan: the scheduling stack, shared storage, the training image's
build spec and the jobs, as stages of plain Kubernetes objects.

``resumable render`` writes :meth:`Deployment.objects`; the Pulumi program deploys the same
stages through its components (``resumable_pulumi/``), the scheduler stages first. One function builds
both, so a rendered directory and a ``pulumi up`` never disagree.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence

from .. import constants as C
from .. import yamlio
from ..errors import ResumableError
from ..fileio import PROFILE_MAX_BYTES, read_text
from ..formats import built_image_reference
from ..plan.model import JobPlan, Plan
from ..profile import profile_data
from . import jobs, storage
from .k8s import Obj, meta, namespace, recommended_labels
from .render import Layer, layers
from .scheduler import Stage, build_stages

#: Namespaces that exist in every cluster or that the scheduling stack creates.
EXISTING_NAMESPACES = frozenset(
    {
        "default",
        "kube-system",
        C.NAMESPACE_MINDX_DL,
        C.NAMESPACE_CLUSTER_SYSTEM,
        C.NAMESPACE_VOLCANO,
        C.NAMESPACE_NPU_EXPORTER,
    }
)
IMAGE_SPEC_PREFIX = "resumable-image-"
IMAGE_SPEC_KEY = "build.json"
PART_OF = {"app.kubernetes.io/part-of": "ascend-resumable"}

STORAGE_STAGE = "storage"
WORKLOAD_NAMESPACES_STAGE = "workload-namespaces"
JOBS_STAGE = "jobs"


class Deployment(NamedTuple):
    stages: List[Stage]

    def objects(self) -> List[Obj]:
        return [obj for stage in self.stages for obj in stage.objects]

    def layers(self) -> List[Layer]:
        """The render's directories (:mod:`resumable.manifests.render`): the CRDs, the cluster
        stack, the jobs' namespaces and storage, each job."""
        workload = (WORKLOAD_NAMESPACES_STAGE, STORAGE_STAGE, JOBS_STAGE)
        cluster = [obj for s in self.stages if s.name not in workload for obj in s.objects]
        storage_objects = [*self.stage(WORKLOAD_NAMESPACES_STAGE).objects, *self.stage(STORAGE_STAGE).objects]
        return layers(cluster, storage_objects, self.stage(JOBS_STAGE).objects)

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(name)


def default_image(plan: Plan, job: JobPlan) -> str:
    """The reference a job runs when nothing else names one: the plan's (image.name, else
    ``<image.registry>/<job>:<release>``, else the local ``ascend-resumable/<job>:<release>`` the
    build line of ``resumable image context`` tags)."""
    return job.image.reference or built_image_reference(job.name, plan.scheduler.release)


def read_profile_text(plan: Plan) -> str:
    """The profile the plan came from, for the ConfigMap ``resumable launch`` reads in the pod
    (read as :func:`~resumable.profile.load_profile` reads it: a regular file, at most
    :data:`~resumable.fileio.PROFILE_MAX_BYTES`, which keeps the ConfigMap far below 1 MiB)."""
    return read_text(
        plan.profile,
        what="profile",
        limit=PROFILE_MAX_BYTES,
        error=ResumableError,
        fix="Keep the profile file in place while rendering",
    )


#: The first lines of a job's profile ConfigMap: what it holds, so nobody mistakes it for the file.
JOB_PROFILE_HEADER = (
    "# The profile with the job %s alone under jobs (the other jobs, comments and anchors left out;\n"
    "# every other setting as written). resumable launch and doctor in the job's pods plan it from here.\n"
)


def job_profile_texts(plan: Plan, text: str) -> Dict[str, str]:
    """Per job, the profile its pods read (``resumable-profile-<job>``): the data of ``text`` with
    ``jobs`` holding that job alone, as YAML. Every other setting stays as the user wrote it (the
    same values, keys in the same order; comments and anchors are not kept, aliases are written out),
    so the job plans there exactly as from the whole profile (tests/manifests/test_job_profile.py),
    and the ConfigMap depends on that job and the shared settings only: the output grows linearly
    with the jobs, and adding or removing another job leaves it as it was. The text the plan came
    from is not parsed again (:func:`~resumable.profile.profile_data`)."""
    if not plan.jobs:
        return {}
    fix = "Keep the profile file in place while rendering"
    data: Any = profile_data(text, plan.profile)
    declared = data.get("jobs") if isinstance(data, dict) else None
    names = [j.get("name") if isinstance(j, dict) else None for j in declared or []]
    if names != [j.name for j in plan.jobs]:
        raise ResumableError("changed while it was planned (its jobs are not the planned ones)", plan.profile, fix)
    # the top-level keys are block mapping entries at column 0, so the document is the text of each
    # entry in turn: the shared ones are written once, only ``jobs`` once per job
    shared = {k: yamlio.dump({k: v}) for k, v in data.items() if k != "jobs"}
    out: Dict[str, str] = {}
    for job, item in zip(plan.jobs, declared or []):
        parts = [shared[k] if k != "jobs" else yamlio.dump({"jobs": [item]}) for k in data]
        out[job.name] = JOB_PROFILE_HEADER % job.name + "".join(parts)
    return out


def workload_namespaces(plan: Plan) -> List[Obj]:
    names = sorted({j.namespace for j in plan.jobs} - EXISTING_NAMESPACES)
    return recommended_labels([namespace(n, labels=PART_OF) for n in names], "training-namespace")


def image_build_spec(job: JobPlan, image: str) -> Dict[str, object]:
    """What to build for the job's image: the base, the vendor wheels (files with sha256, never a
    package index), the run.py patch, and the reference the job runs. ``resumable image context``
    turns it into a build context."""
    img = job.image
    return {
        "job": job.name,
        "image": image,
        "base": img.base,
        "framework": img.framework,
        "context": "resumable image context <profile> --job %s --out <dir>" % job.name,
        "wheels": [
            {
                "name": w.name,
                "version": w.version,
                "file": os.path.basename(w.file) if w.file else None,
                "url": w.url,
                "sha256": w.sha256,
            }
            for w in img.wheels
        ],
        "runpy_patch": img.runpy_patch,
        "runpy_anchor": img.runpy_anchor,
        "user": img.user,
        "uid": img.uid,
    }


def image_build_config_map(job: JobPlan, image: str) -> Obj:
    """The build spec as a ConfigMap beside the job: ``kubectl apply -f`` of a rendered directory
    still works, and the cluster records which recipe the running image came from."""
    text = json.dumps(image_build_spec(job, image), indent=2, sort_keys=True) + "\n"
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta(IMAGE_SPEC_PREFIX + job.name, job.namespace, labels=PART_OF),
        "data": {IMAGE_SPEC_KEY: text},
    }


def job_objects(plan: Plan, job: JobPlan, image: str, profile_text: str) -> List[Obj]:
    """The job's objects; ``profile_text``: its own profile (:func:`job_profile_texts`)."""
    return recommended_labels(
        [image_build_config_map(job, image), *jobs.objects(job, image, profile_text)], "training-job", job.name
    )


def build_deployment(
    plan: Plan,
    crd_sources: Optional[Sequence[str]] = None,
    images: Optional[Mapping[str, str]] = None,
    job_images: Optional[Mapping[str, str]] = None,
    profile_text: Optional[str] = None,
) -> Deployment:
    """Scheduler stages (see :func:`~resumable.manifests.scheduler.build_stages`), then the
    namespaces of the jobs, the shared storage, and per job its image build spec, ConfigMaps and
    the job. ``job_images``: the reference each job runs (default :func:`default_image`);
    ``profile_text``: the profile's text (default: read from ``plan.profile``), from which each
    job's profile ConfigMap gets that job alone (:func:`job_profile_texts`)."""
    stages = build_stages(plan.scheduler, crd_sources=crd_sources, images=images)
    texts = job_profile_texts(plan, profile_text if profile_text is not None else read_profile_text(plan))
    chosen = dict(job_images or {})
    workloads: List[Obj] = []
    for job in plan.jobs:
        workloads += job_objects(plan, job, chosen.get(job.name) or default_image(plan, job), texts[job.name])
    return Deployment(
        [
            *stages,
            Stage(WORKLOAD_NAMESPACES_STAGE, workload_namespaces(plan)),
            Stage(STORAGE_STAGE, storage.objects(plan.storage)),
            Stage(JOBS_STAGE, workloads),
        ]
    )
