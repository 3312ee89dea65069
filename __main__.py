"""Pulumi program: the whole deployment a resumable profile plans.

The MindCluster scheduling stack, the job namespaces and shared storage, one training runtime
image per job (or a prebuilt reference) and the jobs. Config keys are declared in Pulumi.yaml and
documented in docs/pulumi.md; every Kubernetes resource goes through the one explicit provider
made here (default providers are disabled in Pulumi.yaml).
"""

from __future__ import annotations

from typing import Any, Dict

import pulumi
import pulumi_kubernetes as k8s

from components import (
    MindClusterScheduler,
    MindClusterSchedulerArgs,
    RuntimeImage,
    RuntimeImageArgs,
    SharedStorage,
    SharedStorageArgs,
    TrainingJobs,
    TrainingJobsArgs,
    readiness,
)
from components.config import StackConfig, read_config
from resumable.api import load_plan
from resumable.errors import ResumableError
from resumable.manifests.deployment import read_profile_text
from resumable.plan.model import JobPlan, Plan


def load(path: str) -> Plan:
    """The plan through the one gate, or one RunError carrying the profile's violations."""
    try:
        return load_plan(path)
    except ResumableError as exc:
        raise pulumi.RunError(str(exc)) from None


def image_tags(cfg: StackConfig, plan: Plan, job: JobPlan) -> list[str]:
    if job.image.name:
        return [job.image.name]
    if cfg.image_registry:
        return [f"{cfg.image_registry}/{job.name}:{plan.scheduler.release}"]
    return []


def registry_address(tag: str) -> str:
    first = tag.split("/", 1)[0]
    return first if ("." in first or ":" in first or first == "localhost") and "/" in tag else "docker.io"


def main() -> Dict[str, Any]:
    cfg = read_config(pulumi.Config())
    plan = load(cfg.profile)
    unknown = sorted(set(cfg.images) - {j.name for j in plan.jobs})
    if unknown:
        raise pulumi.RunError(
            "stack config images: no job named %s in %s (jobs: %s). Use the profile's job names."
            % (", ".join(unknown), cfg.profile, ", ".join(j.name for j in plan.jobs))
        )
    homeless = [j.name for j in plan.jobs if j.name not in cfg.images and not image_tags(cfg, plan, j)]
    if homeless:
        raise pulumi.RunError(
            "job %s has no image reference to push to; set jobs[].image.name in the profile, or config "
            "imageRegistry, or config images.<job> to a prebuilt reference" % ", ".join(homeless)
        )
    if cfg.check_nodes:
        readiness.preflight(plan.nodes, cfg.kubeconfig_text, cfg.context)
    try:
        profile_text = read_profile_text(plan)
    except ResumableError as exc:
        raise pulumi.RunError(str(exc)) from None
    provider = k8s.Provider("kubernetes", kubeconfig=cfg.kubeconfig, context=cfg.context)
    k8s_opts = pulumi.ResourceOptions(providers=[provider])
    scheduler = MindClusterScheduler(
        "mindcluster",
        MindClusterSchedulerArgs(
            scheduler=plan.scheduler,
            crd_sources=cfg.crd_sources,
            docker_config_json=cfg.docker_config_json,
            retain_on_delete=cfg.retain_on_delete,
            ready_timeout=cfg.ready_timeout,
        ),
        k8s_opts,
    )
    storage = SharedStorage("storage", SharedStorageArgs(plan, retain_on_delete=cfg.retain_on_delete), k8s_opts)
    images: Dict[str, RuntimeImage] = {}
    for job in plan.jobs:
        tags = image_tags(cfg, plan, job)
        images[job.name] = RuntimeImage(
            f"image-{job.name}",
            RuntimeImageArgs(
                plan=plan,
                job=job.name,
                prebuilt=cfg.images.get(job.name),
                tags=tags,
                push=cfg.push_images,
                registry=registry_address(tags[0]) if tags and cfg.registry_username else None,
                username=cfg.registry_username,
                password=cfg.registry_password,
            ),
        )
    jobs = TrainingJobs(
        "jobs",
        TrainingJobsArgs(
            plan, {name: image.ref for name, image in images.items()}, profile_text, after=[scheduler, storage]
        ),
        pulumi.ResourceOptions(providers=[provider]),
    )
    pulumi.export(
        "mindcluster",
        {
            "release": plan.scheduler.release,
            "volcano": plan.scheduler.volcano_version,
            "kubernetes": plan.scheduler.kubernetes,
        },
    )
    pulumi.export("volcanoPlugin", scheduler.volcano_plugin)
    pulumi.export("clusterdEndpoint", scheduler.clusterd_endpoint)
    pulumi.export("claims", storage.claims)
    pulumi.export("images", {name: image.ref for name, image in images.items()})
    pulumi.export("jobs", jobs.jobs)
    return {"provider": provider, "scheduler": scheduler, "storage": storage, "images": images, "jobs": jobs}


deployment = main()
