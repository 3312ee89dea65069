"""resumable: a profile (cluster facts + recovery intent) becomes a validated plan."""

from __future__ import annotations

#: the one version source (pyproject.toml reads it: dynamic version)
__version__ = "0.1.0"
