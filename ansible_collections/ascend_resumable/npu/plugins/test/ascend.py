"""Tests of ascend_resumable.npu: C(x is ascend_resumable.npu.ascend_version)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: ascend_version
short_description: is the value a version in one of the Ascend styles (25.0.rc1.1, 8.3.RC1, 7.7.0.1.231)?
"""

from ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_version import is_version


class TestModule:
    def tests(self):
        return {"ascend_version": is_version}
