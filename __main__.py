"""Pulumi program: the MindCluster scheduling stack the profile plans.

Config (``pulumi config set``): ``profile`` (path, default examples/pytorch-process-recovery.yaml),
optional ``kubeconfig`` / ``context`` (then one explicit Kubernetes provider is made here and passed
down), optional ``crdSources`` (list of paths of the release files whose CRDs to deploy verbatim),
optional secret ``dockerConfigJson`` (creates the image pull secret the plan names).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import pulumi

DEFAULT_PROFILE = "examples/pytorch-process-recovery.yaml"


def load_scheduler_plan(path: str) -> Any:
    """The plan's scheduler part through the one gate, or one RunError carrying the violations."""
    from resumable.api import load_plan
    from resumable.errors import ResumableError

    try:
        return load_plan(path).scheduler
    except ResumableError as exc:
        raise pulumi.RunError(str(exc)) from None


def provider_options(config: pulumi.Config) -> Optional[pulumi.ResourceOptions]:
    kubeconfig = config.get("kubeconfig")
    context = config.get("context")
    if not kubeconfig and not context:
        return None  # the default provider (ambient kubeconfig)
    import pulumi_kubernetes as k8s

    provider = k8s.Provider("kubernetes", kubeconfig=kubeconfig, context=context)
    return pulumi.ResourceOptions(providers={"kubernetes": provider})


def main() -> Any:
    from components import MindClusterScheduler, MindClusterSchedulerArgs

    config = pulumi.Config()
    path = config.get("profile") or DEFAULT_PROFILE
    scheduler = load_scheduler_plan(path)
    crd_sources: Optional[List[str]] = config.get_object("crdSources")
    args = MindClusterSchedulerArgs(
        scheduler=scheduler,
        crd_sources=crd_sources,
        docker_config_json=config.get_secret("dockerConfigJson"),
    )
    stack = MindClusterScheduler("mindcluster", args, provider_options(config))
    summary: Dict[str, Any] = {
        "release": scheduler.release,
        "volcano": scheduler.volcano_version,
        "kubernetes": scheduler.kubernetes,
    }
    pulumi.export("mindcluster", summary)
    pulumi.export("volcanoPlugin", stack.volcano_plugin)
    pulumi.export("clusterdEndpoint", stack.clusterd_endpoint)
    pulumi.export("objects", len(stack.resources))
    return stack


stack = main()
