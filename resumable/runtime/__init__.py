"""Inside the training container: ``resumable launch``, ``doctor``, ``timeline``, ``drill`` and ``image
patch-torchrun`` (standard library only; the training image runs Python 3.8 to 3.12). torch and TaskD are
never imported here: they are found through the import system and checked in child interpreters.

Modules: :mod:`.launch` (what to run, from the plan and the pod's environment), :mod:`.supervisor`
(runs it: processes, signals, the event socket), :mod:`.recovery` (the recovery state),
:mod:`.events` (the timeline's schema), the watchers :mod:`.hangwatch`, :mod:`.startwatch`,
:mod:`.recoverywatch`, :mod:`.timeline`, :mod:`.drill` and :mod:`.drill_server`, :mod:`.doctor`,
:mod:`.torchrun_patch`, :mod:`.installed`, :mod:`.taskd_manager`, ``startup/sitecustomize.py``. The
image build context is :mod:`resumable.image`'s.
"""

from __future__ import annotations

from typing import Any


def add_commands(sub: Any) -> None:
    """Register the runtime subcommands on the CLI's subparsers."""
    from .commands import register

    register(sub)


def add_image_steps(isub: Any) -> None:
    """Register ``image patch-torchrun`` (it runs inside the image) on the ``image`` command's subparsers."""
    from .commands import register_image_steps

    register_image_steps(isub)
