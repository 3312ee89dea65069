"""Fail fast on a cluster whose nodes are not prepared yet.

Volcano, the Ascend Operator and ClusterD are Deployments pinned to ``masterselector`` nodes
(INST01 Table 1); on a cluster where no node carries that label their pods never schedule, Pulumi
waits for them (bounded by ``readyTimeout``, see resumable_pulumi/scheduler.py) and skips every later
stage. Before anything is registered, the program asks the API server which nodes carry the
labels the plan names: no management node is an error that stops the preview at once; no compute
node is a warning (the agents and jobs have nowhere to run yet, but the stack itself deploys).
An unreachable API server is only a warning here: the Kubernetes provider reports it itself.
"""

from __future__ import annotations

import os
import tempfile
from typing import Callable, Dict, List, NamedTuple, Optional

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


def cluster_node_counter(kubeconfig: Optional[str], context: Optional[str]) -> NodeCounter:
    """Count nodes through the API server with the same kubeconfig/context as the provider."""
    from kubernetes import client, config

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
    api = client.CoreV1Api(api_client)

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
