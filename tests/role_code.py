"""The one loader of the Ansible side's Python for the tests: the collection ascend_resumable.npu
(roles, playbooks, plugins: modules, module_utils, filters, tests) imported as the package
``ansible_collections.ascend_resumable.npu`` from the repository root, the import path ansible-core
itself gives the plugins (so a module importing its module_utils by that name gets the same module
object the test holds)."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

from conftest import ROOT as REPO

PACKAGE = "ansible_collections.ascend_resumable.npu"
COLLECTION = REPO / "ansible_collections" / "ascend_resumable" / "npu"
ROLES = COLLECTION / "roles"
PLAYBOOKS = COLLECTION / "playbooks"
PLUGINS = COLLECTION / "plugins"


def plugin(kind: str, name: str) -> ModuleType:
    """Import the collection's plugins/<kind>/<name>.py (kind: modules, module_utils, filter, test)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    return importlib.import_module(f"{PACKAGE}.plugins.{kind}.{name}")
