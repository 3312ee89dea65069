"""Host network: HCCL_IF_IP and reserved TaskD ports."""

from __future__ import annotations

from typing import Iterable

from .. import constants as C
from ..facts import JobFacts
from ..profile import Profile
from .base import Finding, job_rule


@job_rule(
    "host-network",
    "On the host network HCCL_IF_IP comes from status.hostIP and ports 9601/9602 are reserved",
    "YAMLCFG (HCCL_IF_IP with hostNetwork); RT07 notes (ip_local_reserved_ports)",
)
def host_network(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """With hostNetwork HCCL must bind the host's address (the plan sets HCCL_IF_IP from
    status.hostIP; a fixed value in env is reported by env-contradicts-profile); TaskD's 9601/9602
    must be kept out of the ephemeral range or a random outgoing connection can hold them when the
    Manager or Proxy restarts."""
    if not f.host_network:
        return
    if f.uses_taskd and profile.cluster.reserve_taskd_ports is False:
        yield Finding(
            ["cluster.reserve_taskd_ports", "cluster.host_network"],
            "TaskD on the host network needs ports %d/%d reserved, reserve_taskd_ports is false"
            % (C.TASKD_MANAGER_PORT, C.TASKD_PROXY_PORT),
            "Remove cluster.reserve_taskd_ports (auto) or set it true.",
        )
