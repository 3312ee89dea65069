"""The MindCluster scheduling stack as Kubernetes objects (pure: standard library + PyYAML).

``build_stack(plan.scheduler)`` returns the objects in install order; the Pulumi component
(``resumable_pulumi/scheduler.py``) and ``resumable render`` (:mod:`resumable.manifests.render`) both use it.
"""

from __future__ import annotations

from .crds import CrdSourceError
from .deployment import Deployment, build_deployment, default_image
from .scheduler import Stage, build_stack, build_stages
from .settings import COMPONENTS
from .support import UnsupportedStack, check_supported

__all__ = [
    "COMPONENTS",
    "CrdSourceError",
    "Deployment",
    "Stage",
    "UnsupportedStack",
    "build_deployment",
    "build_stack",
    "build_stages",
    "check_supported",
    "default_image",
]
