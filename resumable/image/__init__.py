"""The training image's build, a room of its own (the Pulumi image component and ``resumable image
context`` use it; nothing here runs in the training container): :mod:`.context` (the build context:
the recipe ``Dockerfile``, a link to images/runtime/Dockerfile, the vendor wheels checked against the
profile, a wheel of resumable itself, the profile) and :mod:`.wheels` (wheel files: their requirements,
a reproducible wheel writer). The run.py patch is not here: ``resumable image patch-torchrun`` runs
inside the image on the torch installed there, and the launcher checks it again at every start
(:mod:`resumable.runtime.torchrun_patch`).
"""

from __future__ import annotations

from typing import Any


def add_commands(isub: Any) -> None:
    """Register ``image context`` and ``image wheel-deps`` on the ``image`` command's subparsers."""
    from .commands import register

    register(isub)
