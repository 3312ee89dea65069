"""resumable: a profile (cluster facts + recovery intent) becomes a validated plan."""

from __future__ import annotations

__version__ = "0.1.0"
