"""Filters of ascend_resumable.npu that keep credentials in package URLs out of the output."""

from __future__ import annotations

import re

# userinfo of an authority: everything between "://" and the first "@" before the path
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s]*@")


def redact_url(text):
    """``text`` with the credentials of every URL in it replaced by ``***``."""
    return _USERINFO.sub(r"\g<scheme>***@", "%s" % (text,))


def redact_package_urls(items):
    """dict2items package items with their ``url`` redacted (the rest unchanged)."""
    shown = []
    for item in items:
        value = dict(item.get("value") or {})
        if "url" in value:
            value["url"] = redact_url(value["url"])
        shown.append(dict(item, value=value))
    return shown


def download_failures(failed_result):
    """One sentence per failed item of the ascend_package download loop, credentials redacted."""
    sentences = []
    for result in (failed_result or {}).get("results") or []:
        if not result.get("failed"):
            continue
        item = result.get("ascend_package_item") or {}
        url = (item.get("value") or {}).get("url", "")
        sentences.append(
            "package %s could not be downloaded from %s: %s"
            % (item.get("key", "?"), redact_url(url), redact_url(result.get("msg") or "failed without a message"))
        )
    if not sentences:
        sentences.append(redact_url((failed_result or {}).get("msg") or "a download failed"))
    return sentences


class FilterModule:
    def filters(self):
        return {
            "redact_url": redact_url,
            "redact_package_urls": redact_package_urls,
            "download_failures": download_failures,
        }
