"""Filter npus_not_up: why a node's NPUs are not up yet after a reboot or a driver change."""

from __future__ import annotations


def npus_not_up(facts):
    """Reasons the NPUs of the node are not up (npu-smi unanswered, chips missing, unhealthy NPUs)."""
    facts = facts or {}
    if not facts.get("present"):
        return []
    smi = facts.get("npu_smi") or {}
    if not smi.get("available"):
        return [
            "%s info does not answer (rc %s: %s)"
            % (facts.get("npu_smi_path") or "npu-smi", smi.get("rc"), smi.get("error") or "not found")
        ]
    reasons = []
    listed, on_bus = len(smi.get("chips") or []), int(facts.get("count") or 0)
    if listed < on_bus:
        reasons.append("npu-smi lists %d of the %d NPU chips on the PCI bus" % (listed, on_bus))
    unhealthy = sorted((n for n, h in (smi.get("health") or {}).items() if h != "OK"), key=str)
    if unhealthy:
        reasons.append("NPU %s health %s" % (", ".join(unhealthy), ", ".join(str(smi["health"][n]) for n in unhealthy)))
    if not smi.get("health"):
        reasons.append("npu-smi lists no NPU")
    return reasons


class FilterModule:
    def filters(self):
        return {"npus_not_up": npus_not_up}
