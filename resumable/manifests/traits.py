"""What changes between the MindCluster releases whose stack this project deploys.

Every flag is read off the release manifests (``MC:@<tag> component/*/build/*.yaml``; sources in
docs/sources.md) and named after what it changes, so the
component builders read as "if the release has healthz ports ..." rather than version compares.
"""

from __future__ import annotations

from typing import NamedTuple

from ..versions import Version


class Traits(NamedTuple):
    release: str
    #: 7.3.0+: NodeD/device plugin read driver, pingmesh and profiling paths; ClusterD mounts its
    #: customisation and slow-node dirs and watches AscendJobs; operator may use statefulsets.
    full_fault_paths: bool
    #: 26.0.0+: NodeD on the host network; operator may patch pods; NodeD reads nodes; ClusterD
    #: reads ``clusterd-config-cm`` (manual separation policy); Volcano logs at -v=3.
    v26: bool
    #: 26.1.0+: healthz ports + liveness probes, ``init-log-setup`` initContainers owning
    #: ``/var/log/mindx-dl/<component>`` (host path ``/var/log`` + subPath), merged chip-agnostic
    #: device plugin (``workerselector``, no ``-910`` suffix, runtime-mounted sockets), Volcano
    #: tags ``v1.x.0-v<release>``.
    v26_1: bool


def traits(release: str) -> Traits:
    v = Version(release)
    return Traits(
        release=release,
        full_fault_paths=v >= Version("7.3.0"),
        v26=v >= Version("26.0.0"),
        v26_1=v >= Version("26.1.0"),
    )
