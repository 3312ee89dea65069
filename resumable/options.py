"""Options every command declares the same way (the CLI's own commands and those of the rooms:
runtime, image)."""

from __future__ import annotations

import argparse

#: what each output format is for
_FORMATS = {"text": "for people", "json": "one document on stdout", "yaml": "one document on stdout"}


def add_format(p: argparse.ArgumentParser, *choices: str) -> None:
    """``--format`` the same way on every command: the choices it has, the first the default; text is for
    people (findings and errors on stderr), json and yaml are one document on stdout."""
    p.add_argument(
        "--format",
        choices=list(choices),
        default=choices[0],
        help="%s (default: %s)" % ("; ".join("%s: %s" % (c, _FORMATS[c]) for c in choices), choices[0]),
    )
