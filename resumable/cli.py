"""Command line: ``resumable validate|plan|schema|render|docs``; the runtime commands (``launch``,
``doctor``, ``image``) are registered by :mod:`resumable.runtime`.

Exit codes: 0 success, 2 invalid input (unreadable file, bad YAML, schema error, rule errors, or
warnings with --strict, an output place that may not be written), 3 internal error, 130 / 143
after Ctrl-C / SIGTERM (once what was being written is cleaned up), 141 when the reader of the
output went away (``resumable schema | head``: a closed pipe ends the command quietly, as SIGPIPE
ends other tools). Output is written in whatever encoding the terminal or PYTHONIOENCODING
names: JSON and YAML escape what it cannot hold, text shows it as backslash escapes. Problems are printed on stderr
as one paragraph each, never as a traceback (set RESUMABLE_DEBUG=1 to see one for an internal
error); user values in them are shortened and their control characters escaped.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, TextIO

import yaml

from . import __version__, jsonio
from .api import PlanError, counts, load_plan
from .binding import json_schema
from .errors import ProfileErrors, ResumableError, for_people, shown, unicode_ok
from .fileio import Terminated
from .plan.model import Note
from .plan.text import render_text
from .profile import Profile
from .rules import format_violation
from .rules.base import Violation

EXIT_OK, EXIT_INVALID, EXIT_INTERNAL = 0, 2, 3


#: Exit code after the reader of stdout closed it (128 + SIGPIPE, what a shell reports for a tool
#: SIGPIPE ended).
EXIT_PIPE = 141


def _print_violations(violations: Sequence[Violation], out: TextIO) -> None:
    for v in violations:
        print("  " + for_people(format_violation(v)), file=out)


def dump_json(data: object) -> str:
    return jsonio.dumps(data, sys.stdout)


def dump_yaml(data: object) -> str:
    text: str = yaml.safe_dump(data, sort_keys=False, allow_unicode=unicode_ok(sys.stdout))
    return text


def _violation_json(v: Violation) -> Dict[str, object]:
    return {
        "rule": v.rule,
        "severity": v.severity,
        "paths": v.paths,
        "message": v.message,
        "fix": v.fix,
        "source": v.source,
    }


def _outcome(
    path: str,
    summary: str,
    violations: Sequence[Violation] = (),
    problems: Sequence[str] = (),
    notes: Sequence[Note] = (),
    valid: bool = False,
) -> Dict[str, object]:
    return {
        "profile": path,
        "valid": valid,
        "summary": summary,
        "violations": [_violation_json(v) for v in violations],
        "problems": list(problems),
        "notes": [{"text": n.text, "source": n.source} for n in notes],
    }


def _validate_one(path: str, strict: bool) -> Dict[str, object]:
    """The outcome of validating one profile, as ``validate --format json`` prints it: rule
    violations, or the schema problems (``problems``) of a profile that could not be bound."""
    try:
        plan = load_plan(path, strict)
    except PlanError as exc:
        return _outcome(path, counts(exc.violations), violations=exc.violations)
    except ProfileErrors as exc:
        return _outcome(path, exc.what, problems=[str(e) for e in exc.errors])
    except ResumableError as exc:
        return _outcome(path, "unreadable or not a profile", problems=[str(exc)])
    return _outcome(path, counts(plan.violations), plan.violations, notes=plan.notes, valid=True)


def cmd_validate(args: argparse.Namespace) -> int:
    """Every profile goes through the one gate (:func:`resumable.api.load_plan`) and is checked
    (one bad file does not hide the others); every finding and note goes to stderr, or with
    ``--format json`` one JSON document with every profile's outcome goes to stdout."""
    if args.format == "json":
        results = [_validate_one(path, args.strict) for path in args.profiles]
        print(dump_json({"valid": all(r["valid"] for r in results), "profiles": results}))
        return EXIT_OK if all(r["valid"] for r in results) else EXIT_INVALID
    worst = EXIT_OK
    for path in args.profiles:
        try:
            plan = load_plan(path, args.strict)
        except PlanError as exc:
            print("INVALID %s: %s" % (path, counts(exc.violations)), file=sys.stderr)
            _print_violations(exc.violations, sys.stderr)
            worst = EXIT_INVALID
            continue
        except ProfileErrors as exc:
            print("INVALID %s: %s" % (path, "\n".join(exc.lines())), file=sys.stderr)
            worst = EXIT_INVALID
            continue
        except ResumableError as exc:
            print("INVALID %s" % exc, file=sys.stderr)
            worst = EXIT_INVALID
            continue
        print("OK %s: %s" % (path, counts(plan.violations)))
        _print_violations(plan.violations, sys.stderr)
        for note in plan.notes:
            print(for_people("  NOTE %s (source: %s)" % (note.text, note.source)), file=sys.stderr)
    return worst


def cmd_plan(args: argparse.Namespace) -> int:
    plan = load_plan(args.profile, args.strict)
    if args.format == "json":
        print(dump_json(plan.to_dict()))
    elif args.format == "yaml":
        print(dump_yaml(plan.to_dict()), end="")
    else:
        print(render_text(plan), end="")
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    schema = json_schema(Profile, "resumable profile")
    print(dump_json(schema))
    return EXIT_OK


def _image_overrides(items: Sequence[str]) -> Dict[str, str]:
    images: Dict[str, str] = {}
    for item in items:
        component, sep, ref = item.partition("=")
        if not sep or not component or not ref:
            raise ResumableError(
                "is not COMPONENT=IMAGE",
                "--image %s" % shown(item),
                "Write e.g. --image clusterd=registry.example.com/mindx/clusterd:v7.3.0",
            )
        images[component] = ref
    from .manifests.settings import check_images

    return check_images(images)


def cmd_render(args: argparse.Namespace) -> int:
    from .fileio import check_replaceable, output_path

    images = _image_overrides(args.image)
    to_stdout = args.out == "-"
    # A target that would be refused is refused before any work (write_stack checks again).
    if not to_stdout:
        check_replaceable(output_path(args.out), args.out)
    plan = load_plan(args.profile, args.strict)
    from .manifests import build_deployment, check_supported
    from .manifests.render import write_stack, write_stream

    check_supported(plan.scheduler)
    objects = build_deployment(plan, crd_sources=args.crd_source or None, images=images or None).objects()
    if to_stdout:
        # One multi-document stream for `kubectl apply -f -`; the summary goes to stderr.
        write_stream(objects, sys.stdout)
        print("wrote %d objects to stdout" % len(objects), file=sys.stderr)
        return EXIT_OK
    written = write_stack(objects, args.out)
    print("wrote %d objects to %s" % (len(written), args.out))
    return EXIT_OK


def cmd_docs(args: argparse.Namespace) -> int:
    from .docsgen import write_docs

    changed = write_docs(args.out, check=args.check)
    if args.check and changed:
        print("out of date: %s (run `resumable docs`)" % ", ".join(changed), file=sys.stderr)
        return EXIT_INVALID
    for name in changed:
        print("wrote %s" % name)
    return EXIT_OK


#: One example per sub-command, shown at the end of its --help (the runtime commands included).
EXAMPLES: Dict[str, str] = {
    "validate": "resumable validate examples/pytorch-process-recovery.yaml --strict\n"
    "  resumable validate profiles/*.yaml --format json | jq '.profiles[] | select(.valid | not)'",
    "plan": "resumable plan examples/pytorch-process-recovery.yaml --format json | jq '.jobs[0].env'",
    "schema": "resumable schema > profile.schema.json   # for an editor's YAML language server",
    "render": "resumable render examples/pytorch-process-recovery.yaml --out rendered && kubectl apply -k rendered\n"
    "  resumable render examples/pytorch-process-recovery.yaml --out - | kubectl apply -f -",
    "docs": "resumable docs --check   # exit 2 when docs/rules.md, profile.md or sources.md are out of date",
    "launch": "resumable launch --dry-run --profile /etc/resumable/profile.yaml --job gpt -- train.py --lr 1e-4",
    "doctor": "resumable doctor --format json   # in a training container\n  resumable doctor --node compute",
    "timeline": "resumable timeline /job/code/alllogs/resumable-timeline.jsonl --events",
    "image": "resumable image context examples/pytorch-process-recovery.yaml --out build   # then run the printed "
    "podman build line",
    "image context": "resumable image context examples/pytorch-process-recovery.yaml --job llama-pretrain --out build",
    "image patch-torchrun": "resumable image patch-torchrun --profile /etc/resumable/profile.yaml  # in a Dockerfile",
    "image wheel-deps": "resumable image wheel-deps build/wheels | pip install -r /dev/stdin",
}


def _sub_parser(sub: Any, name: str) -> Optional[argparse.ArgumentParser]:
    """The parser of ``name`` (``image context``: a command of a command), None if there is none."""
    first, _, rest = name.partition(" ")
    cmd: Optional[argparse.ArgumentParser] = sub.choices.get(first)
    if cmd is None or not rest:
        return cmd
    for action in cmd._actions:
        choices = getattr(action, "choices", None)
        if isinstance(choices, dict) and rest in choices:
            found: argparse.ArgumentParser = choices[rest]
            return found
    return None


def _add_examples(sub: Any) -> None:
    for name, example in EXAMPLES.items():
        cmd = _sub_parser(sub, name)
        if cmd is not None:
            cmd.epilog = "example:\n  " + example
            cmd.formatter_class = argparse.RawDescriptionHelpFormatter


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="resumable",
        description="Validate a resumable-training profile and plan every layer from it.",
        epilog="Run `resumable COMMAND --help` for a command's options and an example.",
    )
    p.add_argument("--version", action="version", version="resumable " + __version__)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    v = sub.add_parser("validate", help="check profiles against every rule (exit 2 when invalid)")
    v.add_argument("profiles", nargs="+", metavar="PROFILE")
    v.add_argument("--strict", action="store_true", help="warnings fail too")
    v.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="text: one line per profile on stdout, findings on stderr; json: one document on stdout",
    )
    v.set_defaults(func=cmd_validate)

    pl = sub.add_parser("plan", help="print everything the profile implies")
    pl.add_argument("profile", metavar="PROFILE")
    pl.add_argument("--format", choices=["text", "json", "yaml"], default="text")
    pl.add_argument("--strict", action="store_true", help="warnings fail too")
    pl.set_defaults(func=cmd_plan)

    s = sub.add_parser("schema", help="print the profile's JSON Schema")
    s.set_defaults(func=cmd_schema)

    r = sub.add_parser(
        "render", help="write the whole deployment (scheduling stack, storage, image build spec, jobs) as YAML"
    )
    r.add_argument("profile", metavar="PROFILE")
    r.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="directory to (re)write, one file per object and a Kustomization (kubectl apply -k); - writes one "
        "multi-document YAML stream to stdout",
    )
    r.add_argument(
        "--crd-source",
        action="append",
        default=[],
        metavar="FILE",
        help="deploy the CRDs verbatim from this release YAML (your copy of the release package); repeatable",
    )
    r.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="COMPONENT=IMAGE",
        help="override one component's image, e.g. clusterd=registry/clusterd:v7.3.0; repeatable",
    )
    r.add_argument("--strict", action="store_true", help="warnings fail too")
    r.set_defaults(func=cmd_render)

    d = sub.add_parser("docs", help="regenerate docs/rules.md, docs/profile.md and docs/sources.md from the code")
    d.add_argument("--out", default="docs", metavar="DIR")
    d.add_argument("--check", action="store_true", help="only report files that are out of date")
    d.set_defaults(func=cmd_docs)

    from .runtime import add_commands

    add_commands(sub)
    _add_examples(sub)
    return p


def _output_errors_escape() -> None:
    """Text output never fails on a character the encoding lacks: it is shown as an escape."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and not unicode_ok(stream):
            with contextlib.suppress(ValueError, OSError):  # a stream that cannot be reconfigured
                reconfigure(errors="backslashreplace")


def _pipe_closed() -> int:
    """The reader went away: no message (there is nobody to read it on stdout, and on stderr it
    would only be noise after `| head`), and no second error when Python flushes stdout at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
    return EXIT_PIPE


def main(argv: Optional[List[str]] = None) -> int:
    _output_errors_escape()
    args = parser().parse_args(argv)
    try:
        code: int = args.func(args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return _pipe_closed()
    except ProfileErrors as exc:
        print("error: " + "\n".join(exc.lines()), file=sys.stderr)
        return exc.exit_code
    except ResumableError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted; nothing was left half-written", file=sys.stderr)
        return 130
    except Terminated as exc:
        print("terminated by signal %d; nothing was left half-written" % exc.signum, file=sys.stderr)
        return 128 + exc.signum
    except Exception as exc:  # an internal error still gets one paragraph, not a traceback
        if os.environ.get("RESUMABLE_DEBUG"):
            raise
        print(
            "internal error: %s: %s. This is a bug in resumable; rerun with RESUMABLE_DEBUG=1 for the "
            "traceback and report it." % (type(exc).__name__, exc),
            file=sys.stderr,
        )
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
