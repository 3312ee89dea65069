"""Load the Python of an Ansible role (module, module_utils, filter plugin) as a plain module, the
way the node roles' unit tests need it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent


def load(name: str, relpath: str) -> ModuleType:
    """Import REPO/relpath as module ``name`` (registered, so that modules importing
    ``ansible.module_utils.<x>`` find a module_utils file loaded under that name first)."""
    spec = importlib.util.spec_from_file_location(name, REPO / relpath)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
