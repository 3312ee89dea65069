"""Inside the training container: ``resumable launch``, ``doctor``, ``image patch-torchrun`` and
``timeline`` (standard library only; the training image runs Python 3.8 to 3.12)."""

from __future__ import annotations

from typing import Any


def add_commands(sub: Any) -> None:
    """Register the runtime subcommands on the CLI's subparsers (filled in by the runtime work)."""
