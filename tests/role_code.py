"""The one loader of the Ansible side's Python for the tests: the collection ascend_resumable.npu
(roles, playbooks, plugins: modules, module_utils, filters, tests) imported as the package
``ansible_collections.ascend_resumable.npu`` from the repository root, the import path ansible-core
itself gives the plugins (so a module importing its module_utils by that name gets the same module
object the test holds), and the ansible commands and environment the tests run them with."""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Dict, Optional

from conftest import ROOT as REPO

PACKAGE = "ansible_collections.ascend_resumable.npu"
COLLECTION = REPO / "ansible_collections" / "ascend_resumable" / "npu"
ROLES = COLLECTION / "roles"
PLAYBOOKS = COLLECTION / "playbooks"
PLUGINS = COLLECTION / "plugins"


#: the bin directory of the Python running the tests (the test virtualenv's ansible-core)
BIN = Path(sys.executable).parent


def ansible_tool(name: str) -> Optional[str]:
    """The ansible command ``name`` (``ansible-playbook``, ``ansible-galaxy``, ``ansible-doc``) beside the
    Python running the tests, else the one on PATH; None when neither has it."""
    return shutil.which(name, path=str(BIN)) or shutil.which(name)


PLAYBOOK = ansible_tool("ansible-playbook")


def playbook_env(tmp_path: Path, collections: str, **extra: str) -> Dict[str, str]:
    """The environment of an ansible-playbook run of a test: no ansible.cfg (``none.cfg`` in
    ``tmp_path`` does not exist, so neither the repository's nor the user's applies), the collections
    found on ``collections`` only, Ansible's temporary files and home under ``tmp_path``, no colour,
    no retry files; ``extra`` on top."""
    env = dict(os.environ)
    env.update(
        ANSIBLE_CONFIG=str(tmp_path / "none.cfg"),
        ANSIBLE_COLLECTIONS_PATH=collections,
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
        ANSIBLE_HOME=str(tmp_path / "home"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_RETRY_FILES_ENABLED="0",
    )
    env.update(extra)
    return env


def plugin(kind: str, name: str) -> ModuleType:
    """Import the collection's plugins/<kind>/<name>.py (kind: modules, module_utils, filter, test)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    return importlib.import_module(f"{PACKAGE}.plugins.{kind}.{name}")
