"""YAML output and input through libyaml when PyYAML has it, pure Python otherwise, same result
(issue 16: render spent 85% of its time in the pure-Python emitter while libyaml sat unused)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, List

import pytest
import yaml
from conftest import EXAMPLE_FILES

from resumable import safeyaml, yamlio
from resumable.api import load_plan
from resumable.errors import ProfileError
from resumable.manifests import build_deployment

needs_libyaml = pytest.mark.skipif(not getattr(yaml, "__with_libyaml__", False), reason="PyYAML built without libyaml")


def _objects() -> List[Any]:
    out: List[Any] = []
    for path in EXAMPLE_FILES:
        out.extend(build_deployment(load_plan(str(path), False)).objects())
    return out


@needs_libyaml
def test_render_uses_libyaml_when_present(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(yamlio.ENV_PURE, raising=False)
    assert yamlio.have_libyaml()
    assert issubclass(yamlio.dumper(), yaml.CSafeDumper)
    assert type(safeyaml._loader(safeyaml.PROFILE)).__name__ == "type"
    assert safeyaml._loader(safeyaml.PROFILE) is not safeyaml.BoundedLoader
    monkeypatch.setenv(yamlio.ENV_PURE, "1")
    assert not issubclass(yamlio.dumper(), yaml.CSafeDumper)
    assert safeyaml._loader(safeyaml.PROFILE) is safeyaml.BoundedLoader


@needs_libyaml
def test_every_rendered_object_is_the_same_bytes_from_both_emitters() -> None:
    objects = _objects()
    assert len(objects) > 50
    for obj in objects:
        assert yamlio.dump(obj) == yamlio.dump(obj, pure=True), obj["metadata"]["name"]
        assert yaml.safe_load(yamlio.dump(obj)) == obj


@needs_libyaml
def test_awkward_strings_are_the_same_bytes_from_both_emitters() -> None:
    """Tabs, other line breaks, trailing blanks, kept final breaks, quotes and long lines: where the
    emitters would differ (long double-quoted scalars, ``|+`` at the end), the pure one writes."""
    rng = random.Random(16)
    alphabet = "ab c: #'\"-x\u4e2d\t\\\u00e9\n\n  \r\x85\u2028"
    for _ in range(1500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 250)))
        obj = {"data": {"k": text, "list": [text, {"deep": {"deeper": text}}]}, "n": [1, True, None, 1.5, "on"]}
        assert yamlio.dump(obj) == yamlio.dump(obj, pure=True), repr(text)
        if not any(c in text for c in "\r\x85\u2028"):  # YAML itself normalises these line breaks
            assert yaml.safe_load(yamlio.dump(obj)) == obj


def test_a_stream_is_one_document_per_object() -> None:
    objects = _objects()[:5]
    stream = yamlio.dump_stream(objects)
    assert list(yaml.safe_load_all(stream)) == objects
    assert stream.count("---\n") == len(objects)


@pytest.mark.parametrize("pure", ["", "1"])
@pytest.mark.parametrize(
    "text, fragment",
    [
        ("a: [" * 40, "nests deeper than 32 levels"),
        ("a: 1\na: 2\n", "duplicate key 'a'"),
        ("x: !!int abc", "'abc' is not an integer"),
        ("x: \x07", "unacceptable character #x0007"),
        ("- &a [*a]", "recursive structure"),
    ],
)
def test_both_loaders_keep_every_limit(monkeypatch: pytest.MonkeyPatch, pure: str, text: str, fragment: str) -> None:
    monkeypatch.setenv(yamlio.ENV_PURE, pure) if pure else monkeypatch.delenv(yamlio.ENV_PURE, raising=False)
    with pytest.raises(ProfileError, match=r"line [12]") as info:
        safeyaml.load(text, "p.yaml", safeyaml.PROFILE, ProfileError, "Fix it")
    assert fragment in str(info.value)


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_both_loaders_read_the_same_data(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    fast = safeyaml.load(text, str(path), safeyaml.PROFILE, ProfileError, "x")
    monkeypatch.setenv(yamlio.ENV_PURE, "1")
    assert safeyaml.load(text, str(path), safeyaml.PROFILE, ProfileError, "x") == fast == yaml.safe_load(text)
