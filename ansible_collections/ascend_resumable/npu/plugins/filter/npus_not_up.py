"""Filter npus_not_up: why a node's NPUs are not up yet after a reboot or a driver change."""

from __future__ import annotations

DOCUMENTATION = r"""
name: npus_not_up
short_description: why the NPUs of a node are not up yet (empty when they are)
description:
  - Takes the C(ascend_npu) fact of C(ascend_resumable.npu.ascend_npu_facts) and returns one sentence per reason the
    node's NPUs are not up, an empty list when they are.
  - Up means what the hardware of the node says, not a count from before a change; npu-smi answers, lists every NPU
    chip the PCI bus shows (one per PCI function, 910B and A3 alike) and reports each NPU healthy. A node without NPU
    devices is up.
  - The ascend_driver role polls with it after a reboot or a driver change (devices take a while to come up, npu-smi
    answers -8005 or lists fewer chips meanwhile) and releases a node only when it returns nothing.
positional: _input
options:
  _input:
    description: The C(ascend_npu) fact.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Wait for the NPUs
  ascend_resumable.npu.ascend_npu_facts:
  register: npus
  until: npus.ansible_facts.ascend_npu | ascend_resumable.npu.npus_not_up | length == 0
"""

RETURN = r"""
_value:
  description: Reasons, empty when every NPU is up.
  type: list
  elements: str
"""


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
