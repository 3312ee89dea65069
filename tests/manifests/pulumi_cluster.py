"""A cluster and the pulumi-kubernetes create/delete path, for several stacks over time.

What a stack's ``up`` and ``destroy`` do to the cluster's objects, from what the program registered
(the provider each object goes through, ``retainOnDelete``) and from the provider's create path,
written from pulumi/pulumi-kubernetes at commit 94977969d64112b04e19945818a7d5d5f38f631d:

- server-side apply is on unless ``enableServerSideApply`` is false (provider/pkg/provider/provider.go:651-665);
- ``upsertExistingObjects`` comes from the provider's config (provider.go:683-694);
- a create is a server-side apply patch only with server-side apply **and** ``upsertExistingObjects``
  (provider/pkg/await/await.go:190), which takes an existing object over; otherwise it is a client-side
  create (await.go:237-252) that fails on an existing object with AlreadyExists (await.go:276-290);
- Pulumi's engine deletes what a stack no longer declares, and on ``destroy`` everything, except a
  resource with ``retainOnDelete``, which it only forgets (it stays in the cluster).

Field-manager conflicts of the server-side apply (an object shared by two stacks with different
values) are not modelled: the shared objects here are identical in every stack.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List

from .pulumi_mocks import Registered


class AlreadyExists(Exception):
    """The provider's create of an object the cluster already has (await.go:276)."""


@dataclass
class Cluster:
    """The API server's objects by ``Kind/namespace/name`` and, per stack, what its state holds."""

    objects: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    #: stack -> {key: retained on delete}
    states: Dict[str, Dict[str, bool]] = field(default_factory=dict)

    def up(self, stack: str, registered: List[Registered]) -> None:
        providers = {r.urn: r for r in registered if r.type == "pulumi:providers:kubernetes"}
        state = self.states.setdefault(stack, {})
        wanted: Dict[str, bool] = {}
        for r in registered:
            if not r.type.startswith("kubernetes:") or r.type.startswith("pulumi:"):
                continue
            provider = providers[r.request.provider.rsplit("::", 1)[0]]
            wanted[r.key] = bool(r.request.retainOnDelete)
            if r.key in state:  # an update of an object the stack already manages
                self.objects[r.key] = r.inputs
                continue
            ssa = provider.inputs.get("enableServerSideApply", "true") == "true"
            upsert = provider.inputs.get("upsertExistingObjects") == "true"
            if r.key in self.objects and not (ssa and upsert):
                raise AlreadyExists(f"stack {stack}: {r.key} already exists (through provider {provider.request.name})")
            self.objects[r.key] = r.inputs
        for key, retained in state.items():
            if key not in wanted and not retained:
                self.objects.pop(key, None)
        self.states[stack] = wanted

    def destroy(self, stack: str) -> None:
        for key, retained in self.states.pop(stack, {}).items():
            if not retained:
                self.objects.pop(key, None)

    def managers(self, key: str) -> List[str]:
        return sorted(s for s, state in self.states.items() if key in state)
