"""Inside the training container: ``resumable launch``, ``doctor``, ``timeline`` and ``image ...``
(standard library only; the training image runs Python 3.8 to 3.12). torch and TaskD are never
imported here: they are found through the import system and checked in child interpreters.

Modules: :mod:`.launch` (what to run, from the plan and the pod's environment), :mod:`.supervisor`
(runs it), :mod:`.timeline`, :mod:`.doctor`, :mod:`.torchrun_patch`, :mod:`.context` (the image build
context), :mod:`.wheels`, :mod:`.installed`, :mod:`.taskd_manager`, ``startup/sitecustomize.py``.
"""

from __future__ import annotations

from typing import Any


def add_commands(sub: Any) -> None:
    """Register the runtime subcommands on the CLI's subparsers."""
    from .commands import register

    register(sub)
