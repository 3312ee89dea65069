"""Filter failure_reason: why a task failed, in the words of the command that failed (kubectl's error line)."""

from __future__ import annotations

import re

# kubectl's own reason: "error: ..." (a refused drain: kubernetes/kubectl v0.34.0 pkg/cmd/drain/drain.go:344,
# a timed-out wait, a refused label) or "Error from server (...)" (the API server's answer, NotFound and the like)
_KUBECTL_ERROR = re.compile(r"^(error: |Error from server)")


def failure_reason(result, default="see the failed task above"):
    """The last kubectl error line of a failed task's stderr, else the task's msg, else default."""
    result = result if isinstance(result, dict) else {}
    lines = result.get("stderr_lines")
    if lines is None:
        lines = str(result.get("stderr") or "").splitlines()
    errors = [line for line in lines or [] if _KUBECTL_ERROR.match(str(line))]
    if errors:
        return str(errors[-1])
    return str(result.get("msg") or "") or default


class FilterModule:
    def filters(self):
        return {"failure_reason": failure_reason}
