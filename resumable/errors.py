"""Errors that reach the user as one paragraph (what, where, how to fix), never a traceback."""

from __future__ import annotations

from typing import Optional


class ResumableError(Exception):
    """Base class: every subclass renders to a single readable paragraph."""

    exit_code = 2

    def __init__(self, what: str, where: Optional[str] = None, fix: Optional[str] = None) -> None:
        super().__init__(what)
        self.what = what
        self.where = where
        self.fix = fix

    def __str__(self) -> str:
        text = self.what
        if self.where:
            text = "%s: %s" % (self.where, text)
        if self.fix:
            text = "%s. %s" % (text.rstrip("."), self.fix)
        return text


class ProfileError(ResumableError):
    """The profile cannot be read or does not match the schema (file, YAML, type, unknown key)."""
