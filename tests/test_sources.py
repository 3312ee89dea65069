"""Every citation resolves against resumable.sources, and nothing points a user outside the repository.

The codes a rule, plan note, profile field doc or document cites (RT04, INST05, YAMLCFG, PLR, ...)
must be rows of the one table docs/sources.md is generated from; a user of the product has
neither the project's research notes nor the documents its authors started from.
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterator, List, Tuple

import pytest
import yaml
from conftest import EXAMPLE_FILES, EXAMPLES, ROOT

from resumable import envowners
from resumable import releases as R
from resumable.docsgen import profile_markdown, rules_markdown
from resumable.plan import build_plan
from resumable.plan.model import Plan
from resumable.profile import Profile, load_profile, parse_profile
from resumable.rules import REGISTRY
from resumable.sources import SOURCES, code_of, sources_markdown, unknown_codes_in_text, unresolved

#: Text that sends a reader to files outside the repository (by path, or by the name of a research
#: note the project's authors kept outside it).
OUTSIDE = re.compile(
    r"shared/research|shared/seeds|\.\./shared|/work/|\b(node-prep|mindcluster|anchors|testinfra)\.md\b"
)
TEXT_SUFFIXES = (".py", ".md", ".yml", ".yaml", ".sh", ".cfg", ".toml", ".txt", ".j2", ".ini", ".json")
SKIP_DIRS = {".git", ".venv", "out", "__pycache__", "collections", ".mypy_cache", ".ruff_cache", ".pytest_cache"}


def test_the_checker_catches_what_it_should() -> None:
    """The resolver itself: unknown codes are reported, known ones with locators are not."""
    assert unresolved("RT04 Table 3; INST05 step 9; MC:@v7.3.0 component/taskd/x.py; PTA") == []
    assert unresolved("RT99 Table 1; RT04") == ["RT99 Table 1"]
    assert unresolved("build.sh; INST00") == ["build.sh"]
    assert unresolved("") == ["(empty reference)"]
    assert code_of("HA-CANN-CONNECT") == "HA-CANN-CONNECT"
    assert unknown_codes_in_text("see RT09 and INST11, RT04 and YAMLCFG") == ["INST11", "RT09"]
    assert unknown_codes_in_text("huawei.com/Ascend910 HCCL_IF_IP 9601") == []


def test_every_source_says_where_to_read_it() -> None:
    for s in SOURCES.values():
        assert s.title and s.where and s.chapter and s.release, s.code
    text = sources_markdown("")
    for code in SOURCES:
        assert "`%s`" % code in text
    assert (ROOT / "docs" / "sources.md").read_text(encoding="utf-8").endswith(text[text.index("# Sources") :])


def test_every_rule_cites_known_sources() -> None:
    for rule in REGISTRY.values():
        assert unresolved(rule.source) == [], (rule.id, rule.source)
        assert unknown_codes_in_text(rule.title + " " + rule.why) == [], rule.id


def test_tables_cite_known_sources() -> None:
    for owner in envowners.ENV_OWNERS:
        assert unresolved(owner.source) == [], owner
    assert unresolved(R.TORCH_NPU_SOURCE) == []
    for name in dir(R):
        gate = getattr(R, name)
        if isinstance(gate, R.Gate):
            assert unresolved(gate.source) == [], (name, gate.source)


def _variants() -> Iterator[Tuple[str, Any]]:
    """Profiles that between them produce every kind of plan note."""
    for path in EXAMPLE_FILES:
        yield path.name, load_profile(str(path))
    base = yaml.safe_load((EXAMPLES / "pytorch-process-recovery.yaml").read_text())

    def changed(**parts: Any) -> Any:
        doc = yaml.safe_load(yaml.safe_dump(base))
        for dotted, value in parts.items():
            node = doc
            keys = dotted.split("__")
            for k in keys[:-1]:
                node = node[int(k)] if k.isdigit() else node.setdefault(k, {})
            node[keys[-1]] = value
        return parse_profile(yaml.safe_dump(doc), "variant")

    yield "7.1", changed(cluster__mindcluster="7.1.RC1", jobs__0__image__wheels={})
    yield "7.2", changed(cluster__mindcluster="7.2.RC1", jobs__0__image__wheels={})
    yield "host network", changed(cluster__host_network=True, jobs__0__ranktable=True)
    yield (
        "old torch",
        changed(
            jobs__0__image__torch="2.0.1", jobs__0__image__torch_npu="2.0.1.post1", jobs__0__recovery__strategies=[]
        ),
    )
    yield "env", changed(jobs__0__env={"HCCL_CONNECT_TIMEOUT": "1800", "ASCEND_MAX_OP_CACHE_SIZE": "-1"})
    yield (
        "acknowledged",
        changed(jobs__0__recovery__fault_scheduling="force", acknowledge=["process-level-grace", "wheel-file"]),
    )


def _notes(plan: Plan) -> Iterator[Tuple[str, str]]:
    for n in plan.notes + plan.scheduler.notes + plan.nodes.notes:
        yield n.text, n.source
    for job in plan.jobs:
        for n in job.notes + job.image.notes + job.launcher.notes:
            yield n.text, n.source
        for line in [*job.budget.ladder, job.budget.baseline]:
            for t in line.terms:
                yield t.name, t.source
    for user in plan.nodes.users:
        yield user["name"], user["source"]
    for v in plan.violations:
        yield v.rule, v.source


def _reasons(plan: Plan) -> Iterator[str]:
    for job in plan.jobs:
        for r in job.replicas:
            yield from (e.reason for e in r.env)
            yield from (p.reason for p in r.ports)
        yield from (v.reason for v in job.volumes)
        yield from (w.reason for w in job.image.wheels)
        yield from (e.reason for e in job.launcher.env)


@pytest.mark.parametrize("name,profile", list(_variants()), ids=[n for n, _ in _variants()])
def test_every_plan_citation_resolves(name: str, profile: Profile) -> None:
    plan = build_plan(profile, name)
    for text, source in _notes(plan):
        assert unresolved(source) == [], (text, source)
    for reason in _reasons(plan):
        assert unknown_codes_in_text(reason) == [], reason


def test_profile_field_docs_cite_known_sources() -> None:
    text = profile_markdown()
    assert unknown_codes_in_text(text) == []
    assert not re.search(r"\bseeds?\b", text), "the word seed means nothing to a user: cite RTO or PLR"
    assert not OUTSIDE.search(text)


def test_generated_rule_docs_speak_to_users() -> None:
    text = rules_markdown()
    assert unknown_codes_in_text(text) == []
    assert not re.search(r"\bseeds?\b", text)
    assert not OUTSIDE.search(text)


def _walk() -> List[str]:
    """The repository's files, without virtualenvs, caches and build output."""
    out: List[str] = []
    for directory, dirs, files in os.walk(ROOT):
        rel_dir = os.path.relpath(directory, ROOT)
        dirs[:] = sorted(
            d for d in dirs if d not in SKIP_DIRS and not d.startswith(".venv") and not d.endswith(".egg-info")
        )
        out.extend(os.path.normpath(os.path.join(rel_dir, name)).replace(os.sep, "/") for name in files)
    return out


def _repository_files() -> List[str]:
    out: List[str] = []
    for rel in _walk():
        # tests may read the upstream test data beside the repository; their fixtures are docs too
        if rel.startswith("tests/") and not rel.startswith("tests/fixtures/"):
            continue
        name = rel.rsplit("/", 1)[-1]
        if (name.endswith(TEXT_SUFFIXES) or name in ("Makefile", "Dockerfile")) and (ROOT / rel).is_file():
            out.append(rel)
    return out


FILES = _repository_files()


@pytest.mark.parametrize("rel", FILES)
def test_no_citation_a_user_cannot_follow(rel: str) -> None:
    text = (ROOT / rel).read_text(encoding="utf-8", errors="replace")
    assert not OUTSIDE.findall(text), "%s points at files outside the repository" % rel
    assert unknown_codes_in_text(text) == [], "%s cites codes missing from docs/sources.md" % rel


def test_the_scan_covers_the_docs_and_the_code() -> None:
    for rel in ("README.md", "docs/rules.md", "docs/profile.md", "docs/sources.md", "docs/scheduler.md"):
        assert rel in FILES
    assert any(f.startswith("resumable/rules/") for f in FILES)
    assert any(f.startswith("ansible_collections/ascend_resumable/npu/roles/") for f in FILES)
