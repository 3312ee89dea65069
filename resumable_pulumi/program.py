"""The deployment a stack makes from its config and the plan (``__main__.py`` only calls :func:`deploy`).

A stack has one of three roles (config ``stackRole``, docs/pulumi.md):

- ``all``: the scheduling stack and the workload of one profile (one stack per cluster);
- ``cluster``: only the cluster-wide scheduling stack (namespaces, CRDs, Volcano, Ascend Operator,
  ClusterD, device plugin, NodeD, NPU Exporter) of one cluster;
- ``workload``: only the job namespaces, shared storage, images and jobs, on a cluster whose
  scheduling stack another stack (``clusterStack``, read through a StackReference) or another
  installation already runs (adoption: nothing cluster-wide is created, the plan says so).

Every stack-level check is here, on the plan's own names, and fails as one RunError before a
resource is registered.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Dict, List, Optional

import pulumi
import pulumi_kubernetes as k8s

from resumable.api import load_plan
from resumable.errors import ResumableError
from resumable.formats import built_image_reference, registry_host
from resumable.manifests.deployment import read_profile_text
from resumable.plan.model import JobPlan, Plan

from . import readiness
from .config import StackConfig, read_config
from .image import RuntimeImage, RuntimeImageArgs
from .jobs import TrainingJobs, TrainingJobsArgs
from .scheduler import MindClusterScheduler, MindClusterSchedulerArgs
from .storage import SharedStorage, SharedStorageArgs

ROLES = ("all", "cluster", "workload")
#: a DaemonSet rolls out one node at a time (maxUnavailable 1): each further node may take this long
DAEMONSET_SECONDS_PER_NODE = 30


def load(path: str) -> Plan:
    """The plan through the one gate, or one RunError carrying the profile's violations."""
    try:
        return load_plan(path)
    except ResumableError as exc:
        raise pulumi.RunError(str(exc)) from None


def image_tags(cfg: StackConfig, plan: Plan, job: JobPlan) -> List[str]:
    """Where a built image is pushed: the profile's image.name, else ``<imageRegistry>/<job>:<release>``,
    else the profile's ``<image.registry>/<job>:<release>``."""
    if job.image.name:
        return [job.image.name]
    if cfg.image_registry:
        return [built_image_reference(job.name, plan.scheduler.release, cfg.image_registry)]
    if job.image.pullable:
        return [job.image.reference]
    return []


def built_jobs(cfg: StackConfig, plan: Plan) -> List[JobPlan]:
    """The jobs whose image this stack builds (no prebuilt reference in config ``images``)."""
    return [j for j in plan.jobs if j.name not in cfg.images]


def check_stack(cfg: StackConfig, plan: Plan) -> None:
    """The checks that need both the config and the plan, all reported in one RunError."""
    problems: List[str] = []
    if cfg.role not in ROLES:
        problems.append(f"stack config stackRole: {cfg.role!r} is not one of {', '.join(ROLES)}.")
    if cfg.cluster_stack and cfg.role != "workload":
        problems.append(
            "stack config clusterStack: only a workload stack references a cluster stack. "
            "Set stackRole workload, or remove clusterStack."
        )
    if cfg.crd_sources and cfg.role == "workload":
        problems.append(
            "stack config crdSources: a workload stack deploys no CRD (its cluster stack does). "
            "Set crdSources on the cluster stack, or remove it here."
        )
    unknown = sorted(set(cfg.images) - {j.name for j in plan.jobs})
    if unknown:
        problems.append(
            "stack config images: no job named %s in %s (jobs: %s). Use the profile's job names."
            % (", ".join(unknown), cfg.profile, ", ".join(j.name for j in plan.jobs))
        )
    if cfg.role != "cluster":
        built = built_jobs(cfg, plan)
        homeless = [j.name for j in built if not image_tags(cfg, plan, j)]
        if homeless:
            problems.append(
                "job %s has no image reference to push to; set jobs[].image.name or jobs[].image.registry in the "
                "profile, or config imageRegistry, or config images.<job> to a prebuilt reference."
                % ", ".join(homeless)
            )
        if built and not cfg.push_images:
            problems.append(
                "stack config pushImages: false leaves job %s on an image no node can pull (it is built but "
                "never pushed). Set config images.<job> to a prebuilt reference, or set pushImages true."
                % ", ".join(j.name for j in built)
            )
    if problems:
        raise pulumi.RunError(" ".join(problems))


def daemonset_timeout(ready_timeout: int, nodes: int) -> int:
    """Seconds to wait for a DaemonSet: the Deployment wait plus one rollout step per further node."""
    return ready_timeout + DAEMONSET_SECONDS_PER_NODE * max(0, nodes - 1)


def provider(cfg: StackConfig, plan: Plan) -> k8s.Provider:
    """The stack's one explicit Kubernetes provider (default providers are disabled in Pulumi.yaml).

    ``cluster_identifier`` (the profile's cluster name): pulumi-kubernetes then replaces resources
    only when that identifier changes, not when the kubeconfig's address, CA or context does
    (provider/pkg/provider/provider.go DiffConfig). Server-side apply stays on (the provider's
    default): in pulumi-kubernetes 4.25 every create is a server-side apply patch without force
    (provider/pkg/await/await.go:186-211 at v4.25.0, commit f47bc2d6), so an object that outlived its
    stack (namespaces, CRDs, volumes, claims: kept on destroy) is taken over by the next ``up``, and
    an object another field manager set to other values stops the update with a conflict naming that
    manager instead of being overwritten. The kept kinds are replaced delete-before-create, so a
    take-over is never followed by the delete of the object it took over.

    ``enable_config_map_mutable``: a changed ConfigMap is updated in place. By default the provider
    replaces it (delete, then create under the fixed name), and a real upgrade showed the profile
    ConfigMap a running job mounts deleted and re-created by a change of the profile.
    """
    return k8s.Provider(
        "kubernetes",
        kubeconfig=cfg.kubeconfig,
        context=cfg.context,
        cluster_identifier=cfg.cluster_identifier or plan.cluster_name,
        enable_config_map_mutable=True,
    )


def cluster_reference(cfg: StackConfig, plan: Plan) -> Optional[pulumi.Output[List[pulumi.Resource]]]:
    """The cluster stack a workload stack runs on, as a dependency that resolves only when its
    release is the plan's: every component of the job stack depends on it, so a cluster stack of
    another release stops the update before any object is created (an export alone is checked only
    after the resources that do not wait for it are created, which a real ``pulumi up`` showed)."""
    if not cfg.cluster_stack:
        pulumi.log.info(
            f"workload stack without clusterStack: adopting the MindCluster {plan.scheduler.release} already running "
            "on the cluster; no namespace, CRD or component of the scheduling stack is created or changed"
        )
        return None
    ref = pulumi.StackReference(cfg.cluster_stack)
    wanted = plan.scheduler.release

    def same_release(value: Any) -> str:
        release = (value or {}).get("release") if isinstance(value, dict) else None
        if release is not None and release != wanted:
            raise pulumi.RunError(
                f"stack config clusterStack: {cfg.cluster_stack} runs MindCluster {release}, but {cfg.profile} plans "
                f"{wanted}. Use a profile of that release, or upgrade the cluster stack first."
            )
        return str(release or wanted)

    release = ref.get_output("mindcluster").apply(same_release)
    pulumi.export("clusterRelease", release)
    return release.apply(lambda _: [ref])


def deploy(config: Optional[pulumi.Config] = None) -> Dict[str, Any]:
    """Read and check the config and the plan, then register the stack's resources and outputs."""
    cfg = read_config(config or pulumi.Config())
    plan = load(cfg.profile)
    check_stack(cfg, plan)
    # at least as many compute nodes as NPU pods the jobs run (one per node); more when counted
    nodes = sum(r.replicas for j in plan.jobs for r in j.replicas if r.npus) or 1
    if cfg.check_nodes:
        counted = readiness.preflight(plan.nodes, cfg.kubeconfig_text, cfg.context)
        nodes = max(nodes, counted or 0)
    profile_text = ""
    if cfg.role != "cluster":
        try:
            profile_text = read_profile_text(plan)
        except ResumableError as exc:
            raise pulumi.RunError(str(exc)) from None
    kubernetes = provider(cfg, plan)
    opts = pulumi.ResourceOptions(providers=[kubernetes])
    out: Dict[str, Any] = {"provider": kubernetes, "scheduler": None}
    out.update(storage=None, images={}, jobs=None, cluster=None)
    pulumi.export(
        "mindcluster",
        {
            "release": plan.scheduler.release,
            "volcano": plan.scheduler.volcano_version,
            "kubernetes": plan.scheduler.kubernetes,
            "role": cfg.role,
        },
    )
    after: List[pulumi.Resource] = []
    if cfg.role in ("all", "cluster"):
        scheduler = MindClusterScheduler(
            "mindcluster",
            MindClusterSchedulerArgs(
                scheduler=plan.scheduler,
                crd_sources=cfg.crd_sources,
                docker_config_json=cfg.docker_config_json,
                retain_on_delete=cfg.retain_on_delete,
                ready_timeout=cfg.ready_timeout,
                daemonset_timeout=daemonset_timeout(cfg.ready_timeout, nodes),
            ),
            opts,
        )
        out["scheduler"] = scheduler
        after = scheduler.job_prerequisites
        pulumi.export("volcanoPlugin", scheduler.volcano_plugin)
        pulumi.export("clusterdEndpoint", scheduler.clusterd_endpoint)
        pulumi.export("namespaces", scheduler.namespaces)
    if cfg.role == "cluster":
        return out
    if cfg.role == "workload":
        readiness.check_queues(plan.scheduler.queues, cfg.kubeconfig_text, cfg.context)
        checked = cluster_reference(cfg, plan)
        out["cluster"] = checked
        if checked is not None:
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=checked))
    storage = SharedStorage("storage", SharedStorageArgs(plan, retain_on_delete=cfg.retain_on_delete), opts)
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
                registry=registry_host(tags[0]) if tags and cfg.registry_username else None,
                username=cfg.registry_username,
                password=cfg.registry_password,
                build_on_preview=cfg.build_on_preview,
            ),
            opts,
        )
    jobs = TrainingJobs(
        "jobs",
        TrainingJobsArgs(
            plan,
            {name: image.ref for name, image in images.items()},
            profile_text,
            after=[*after, *storage.namespaces],
            claims=storage.claims_by_job,
            pull_secret=pull_secret(cfg, plan),
        ),
        opts,
    )
    out.update(storage=storage, images=images, jobs=jobs)
    pulumi.export("claims", storage.claims)
    pulumi.export("images", {name: image.ref for name, image in images.items()})
    pulumi.export("imageDigests", {name: image.digest for name, image in images.items()})
    pulumi.export("jobs", jobs.jobs)
    return out


def pull_secret(cfg: StackConfig, plan: Plan) -> Optional[pulumi.Output[str]]:
    """The ``.dockerconfigjson`` the training pods pull with, when the registry needs a login:
    config dockerConfigJson, else one built from registryUsername/registryPassword for the
    registries of the jobs' images."""
    if cfg.docker_config_json is not None:
        return cfg.docker_config_json
    if not cfg.registry_username:
        return None
    registries = sorted(
        {registry_host(cfg.images[j.name]) for j in plan.jobs if j.name in cfg.images}
        | {registry_host(t) for j in built_jobs(cfg, plan) for t in image_tags(cfg, plan, j)}
    )
    user = cfg.registry_username

    def content(password: str) -> str:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        return json.dumps({"auths": {r: {"username": user, "password": password, "auth": token} for r in registries}})

    password = pulumi.Output.from_input(cfg.registry_password or "")
    return pulumi.Output.secret(password.apply(content))


__all__ = ["ROLES", "check_stack", "daemonset_timeout", "deploy", "image_tags"]
