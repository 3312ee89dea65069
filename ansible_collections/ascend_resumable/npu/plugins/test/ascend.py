"""Tests of ascend_resumable.npu: C(x is ascend_resumable.npu.ascend_version)."""

from __future__ import annotations

from ansible_collections.ascend_resumable.npu.plugins.module_utils.ascend_version import is_version


class TestModule:
    def tests(self):
        return {"ascend_version": is_version}
