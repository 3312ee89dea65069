"""Fail fast on a cluster whose nodes are not prepared yet, or whose Volcano queues a workload stack's
jobs name do not exist.

Volcano, the Ascend Operator and ClusterD are Deployments pinned to ``masterselector`` nodes
(INST01 Table 1); on a cluster where no node carries that label their pods never schedule, Pulumi
waits for them (bounded by ``readyTimeout``, see resumable_pulumi/scheduler.py) and skips every later
stage. Before anything is registered, the program asks the API server which nodes carry the
labels the plan names: no management node is an error that stops the preview at once; no compute
node is a warning (the agents and jobs have nowhere to run yet, but the stack itself deploys).
An unreachable API server is only a warning here: the Kubernetes provider reports it itself.

A workload stack creates nothing cluster-wide, so the queues its jobs name must be there already (the
cluster stack creates the queues of its own profile, Volcano creates ``default`` when it starts): the
Ascend Operator refuses a job whose queue it cannot get and never looks again (MC:@v7.3.0
component/ascend-operator/pkg/controllers/v1/ascendjob_validate.go:72-80, ascendjob_controller.go:148-151),
so a missing queue stops the preview before any job is created.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Callable, Dict, List, NamedTuple, Optional

import pulumi

from resumable.plan.model import NodePlan

#: ``label selector -> number of nodes matching it``
NodeCounter = Callable[[str], int]


class NodeCheck(NamedTuple):
    errors: List[str]
    warnings: List[str]
    #: nodes carrying every compute-node label (the node agents' DaemonSets run on each)
    compute_nodes: int = 0


def selector(labels: Dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def check_nodes(count: NodeCounter, nodes: NodePlan) -> NodeCheck:
    errors: List[str] = []
    warnings: List[str] = []
    master = selector(nodes.master_labels)
    if count(master) == 0:
        errors.append(
            f"no node carries {master}: Volcano, the Ascend Operator and ClusterD run only there and would wait "
            f"until readyTimeout. Label the management node(s) first (kubectl label node NAME {master}), then run "
            "pulumi up again, or set config checkNodes false to deploy anyway"
        )
    compute = selector(nodes.labels)
    compute_nodes = count(compute)
    if compute_nodes == 0:
        warnings.append(
            f"no node carries all compute-node labels {compute}: the device plugin, NodeD, NPU Exporter and the "
            "training jobs have nowhere to run until the compute nodes are prepared (site.yml) and labelled"
        )
    return NodeCheck(errors, warnings, compute_nodes)


def missing_queues(existing: Callable[[], List[str]], wanted: List[str]) -> List[str]:
    """The queues of ``wanted`` the API server does not have, each as an error naming the fix."""
    have = set(existing())
    return [
        f"Volcano queue {name} does not exist: the Ascend Operator would refuse the jobs that name it and never "
        "look again. Deploy the cluster stack with a profile whose jobs name it (it creates their queues), or "
        f"create it (kubectl create -f - with apiVersion scheduling.volcano.sh/v1beta1, kind Queue, name {name}), "
        "then run pulumi up again"
        for name in wanted
        if name not in have
    ]


def _api_client(kubeconfig: Optional[str], context: Optional[str]) -> Any:
    from kubernetes import config

    new_client: Callable[..., object] = config.new_client_from_config
    if kubeconfig and not os.path.exists(kubeconfig):  # the config holds the kubeconfig's contents
        with tempfile.NamedTemporaryFile("w", suffix=".kubeconfig", delete=False) as handle:
            handle.write(kubeconfig)
        try:
            api_client = new_client(config_file=handle.name, context=context)
        finally:
            os.unlink(handle.name)
    else:
        api_client = new_client(config_file=kubeconfig or None, context=context)
    return api_client


def cluster_node_counter(kubeconfig: Optional[str], context: Optional[str]) -> NodeCounter:
    """Count nodes through the API server with the same kubeconfig/context as the provider."""
    from kubernetes import client

    api = client.CoreV1Api(_api_client(kubeconfig, context))

    def count(label_selector: str) -> int:
        return len(api.list_node(label_selector=label_selector, _request_timeout=10).items)

    return count


def preflight(nodes: NodePlan, kubeconfig: Optional[str], context: Optional[str]) -> Optional[int]:
    """Raise a RunError when no management node exists; warn about missing compute nodes. Returns
    the number of compute nodes (None when the API server could not be asked)."""
    try:
        result = check_nodes(cluster_node_counter(kubeconfig, context), nodes)
    except Exception as exc:  # no kubeconfig, API server unreachable, no permission to list nodes
        pulumi.log.warn(f"node check skipped ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})")
        return None
    for warning in result.warnings:
        pulumi.log.warn(warning)
    if result.errors:
        raise pulumi.RunError("; ".join(result.errors))
    return result.compute_nodes


def cluster_queue_lister(kubeconfig: Optional[str], context: Optional[str]) -> Callable[[], List[str]]:
    from kubernetes import client

    api = client.CustomObjectsApi(_api_client(kubeconfig, context))

    def names() -> List[str]:
        found: Any = api.list_cluster_custom_object("scheduling.volcano.sh", "v1beta1", "queues", _request_timeout=10)
        return [str(item["metadata"]["name"]) for item in found.get("items") or []]

    return names


def check_queues(queues: List[str], kubeconfig: Optional[str], context: Optional[str]) -> None:
    """Raise a RunError naming each queue of ``queues`` the cluster lacks (a workload stack's)."""
    try:
        errors = missing_queues(cluster_queue_lister(kubeconfig, context), queues)
    except Exception as exc:  # no kubeconfig, API server unreachable, no Volcano CRDs, no permission
        pulumi.log.warn(f"queue check skipped ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})")
        return
    if errors:
        raise pulumi.RunError("; ".join(errors))
