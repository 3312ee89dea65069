"""Command line: ``resumable validate|plan|schema|render|docs``; the runtime commands (``launch``,
``doctor``, ``timeline``, ``drill``, ``image patch-torchrun``) are registered by :mod:`resumable.runtime`,
``image context`` and ``image wheel-deps`` by :mod:`resumable.image`.

Exit codes: 0 success, 2 invalid input (unreadable file, bad YAML, schema error, rule errors, or
warnings with --strict, an output place that may not be written, a standard output that cannot take
the output: a full disk, the file size limit), 3 internal error, 130 / 143
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
import errno
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, TextIO

import yaml

from . import __version__, jsonio
from .api import PlanError, counts, load_plan
from .binding import json_schema
from .choices import Arch, Chip, values
from .errors import ProfileErrors, ResumableError, for_people, shown, unicode_ok
from .fileio import Terminated
from .options import add_format
from .plan.model import Note
from .plan.text import render_text
from .profile import Profile
from .releases import STACK_RELEASES
from .rules import format_violation
from .rules.base import Violation
from .versions import Version

EXIT_OK, EXIT_INVALID, EXIT_INTERNAL = 0, 2, 3
#: The Ansible collection this version of the package comes with (ansible_collections/.../galaxy.yml;
#: tests/cli/test_cli_init.py checks they agree).
COLLECTION_NAME, COLLECTION_VERSION = "ascend_resumable.npu", "0.3.0"
#: The releases `init` writes profiles for: the ones this version deploys.
RELEASE_CHOICES = sorted(STACK_RELEASES, key=Version)


#: Exit code after the reader of stdout closed it (128 + SIGPIPE, what a shell reports for a tool
#: SIGPIPE ended).
EXIT_PIPE = 141


def _print_violations(violations: Sequence[Violation], out: TextIO) -> None:
    for v in violations:
        print("  " + for_people(format_violation(v)), file=out)


def _print_findings(violations: Sequence[Violation], notes: Sequence[Note]) -> None:
    """The warnings and notes of a valid profile on stderr, as ``validate`` prints them (``render``
    prints them too: a warning is never hidden by the command that acts on the profile)."""
    _print_violations(violations, sys.stderr)
    for note in notes:
        print(for_people("  NOTE %s (source: %s)" % (note.text, note.source)), file=sys.stderr)


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


def _problem_json(path: str, e: ResumableError) -> Dict[str, object]:
    """A profile problem as JSON: the place in the profile (``jobs[0].nodes``; "" for the file as a
    whole), what is wrong, the fix, and the whole paragraph as text prints it."""
    where = e.where or ""
    place = where[len(path) + 2 :] if where.startswith(path + ": ") else ("" if where == path else where)
    return {"path": place, "message": e.what, "fix": e.fix, "text": str(e)}


def _outcome(
    path: str,
    summary: str,
    violations: Sequence[Violation] = (),
    problems: Sequence[Dict[str, object]] = (),
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
        return _outcome(path, exc.what, problems=[_problem_json(path, e) for e in exc.errors])
    except ResumableError as exc:
        return _outcome(path, "unreadable or not a profile", problems=[_problem_json(path, exc)])
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
        _print_findings(plan.violations, plan.notes)
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
    if args.format == "yaml":
        print(dump_yaml(schema), end="")
    else:
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
    if args.layer and not to_stdout:
        raise ResumableError(
            "selects one layer, which only makes sense with --out -",
            "--layer %s" % shown(args.layer),
            "Write every layer to a directory with --out DIR, or print one with --out - --layer NAME",
        )
    # A target that would be refused is refused before any work (write_layers checks again).
    if not to_stdout:
        check_replaceable(output_path(args.out), args.out)
    plan = load_plan(args.profile, args.strict)
    _print_findings(plan.violations, plan.notes)
    from .manifests import build_deployment, check_supported
    from .manifests.render import steps_text, write_layers, write_stream

    check_supported(plan.scheduler)
    deployment = build_deployment(plan, crd_sources=args.crd_source or None, images=images or None)
    layers = deployment.layers()
    if to_stdout:
        chosen = layers
        if args.layer:
            chosen = [layer for layer in layers if layer.path == args.layer]
            if not chosen:
                raise ResumableError(
                    "is not a layer of this render",
                    "--layer %s" % shown(args.layer),
                    "Name one of %s" % ", ".join(layer.path for layer in layers),
                )
        objects = [obj for layer in chosen for obj in layer.objects]
        # One multi-document stream; the summary goes to stderr.
        write_stream(objects, sys.stdout)
        print("wrote %d objects to stdout" % len(objects), file=sys.stderr)
        return EXIT_OK
    written = write_layers(layers, args.out)
    jobs = [j.name for j in plan.jobs]
    prepare = any(v.storage == "nfs" for v in plan.storage)
    print("wrote %d objects to %s in %d layers" % (len(written), args.out, len(layers)))
    print(steps_text(args.out, jobs, prepare))
    return EXIT_OK


def _ask(args: argparse.Namespace, key: str, question: str, default: object) -> object:
    """A flag's value; unset, the answer to ``question`` on a terminal (empty: the default), else the default."""
    value = getattr(args, key)
    if value is not None:
        return value
    if args.no_input or not sys.stdin.isatty():
        return default
    answer = input("%s [%s]: " % (question, default)).strip()
    if not answer:
        return default
    return int(answer) if isinstance(default, int) else answer


def cmd_init(args: argparse.Namespace) -> int:
    """A new profile from flags or answers, checked through the one gate before it is written."""
    from .api import load_plan_text
    from .fileio import write_new_file
    from .initprofile import Answers

    base = Answers()
    storage_class = args.storage_class
    nfs = args.nfs
    if storage_class is None and nfs is None:
        nfs = str(
            _ask(args, "nfs", "NFS export (SERVER:/PATH) for caches and checkpoints", "192.0.2.10:/exports/ascend")
        )
    if nfs is not None and (":" not in nfs or not nfs.partition(":")[2].startswith("/")):
        raise ResumableError(
            "is not SERVER:/PATH", "--nfs %s" % shown(nfs), "Write e.g. --nfs 10.0.0.10:/exports/ascend"
        )
    answers = Answers(
        name=str(_ask(args, "name", "job name", base.name)),
        namespace=str(_ask(args, "namespace", "namespace", base.namespace)),
        release=str(_ask(args, "release", "MindCluster release (%s)" % ", ".join(RELEASE_CHOICES), base.release)),
        chip=str(_ask(args, "chip", "chip", base.chip)),
        accelerator_type=str(_ask(args, "accelerator_type", "accelerator type (node label)", base.accelerator_type)),
        arch=str(_ask(args, "arch", "CPU architecture", base.arch)),
        nodes=int(str(_ask(args, "nodes", "nodes", base.nodes))),
        npus_per_node=int(str(_ask(args, "npus_per_node", "NPUs per node", base.npus_per_node))),
        framework=str(_ask(args, "framework", "framework (pytorch, mindspore)", base.framework)),
        level=str(_ask(args, "recovery", "recovery level wanted (job, pod, process)", base.level)),
        nfs=nfs,
        storage_class=storage_class,
        cluster=args.cluster or base.cluster,
    )
    from .initprofile import profile_text

    text = profile_text(answers)
    source = "resumable init" if args.out == "-" else args.out
    plan = load_plan_text(text, source)
    _print_findings(plan.violations, [])
    if args.out == "-":
        sys.stdout.write(text)
        return EXIT_OK
    write_new_file(args.out, text, "--out")
    print(
        "wrote %s (%s %s, %d x %d NPUs, %s recovery); next: resumable validate %s"
        % (args.out, answers.framework, answers.release, answers.nodes, answers.npus_per_node, answers.level, args.out)
    )
    return EXIT_OK


def version_info() -> Dict[str, object]:
    """What ``resumable version`` reports: this package, the MindCluster releases it deploys with their
    Volcano builds and Kubernetes ranges, the releases it knows, the Ansible collection's version."""
    from . import releases as R
    from .hardware import MINDCLUSTER_RELEASES

    releases = []
    for stack in R.STACK_RELEASES.values():
        releases.append(
            {
                "release": stack.version,
                "volcano": [
                    {
                        "version": v,
                        "default": v == stack.default_volcano,
                        "kubernetes": [R.VOLCANO_BUILDS[v].kubernetes_min, R.VOLCANO_BUILDS[v].kubernetes_max],
                    }
                    for v in stack.volcano
                ],
            }
        )
    return {
        "version": __version__,
        "deploys": releases,
        "knows": list(MINDCLUSTER_RELEASES),
        "kubernetes": [R.KUBERNETES_MIN, R.KUBERNETES_MAX],
        "collection": {"name": COLLECTION_NAME, "version": COLLECTION_VERSION},
    }


def cmd_version(args: argparse.Namespace) -> int:
    info = version_info()
    if args.format == "json":
        print(dump_json(info))
    elif args.format == "yaml":
        print(dump_yaml(info), end="")
    else:
        print("resumable %s (collection %s %s)" % (__version__, COLLECTION_NAME, COLLECTION_VERSION))
        for r in info["deploys"]:  # type: ignore[attr-defined]
            builds = ", ".join(
                "Volcano %s%s (Kubernetes %s to %s)"
                % (v["version"], " default" if v["default"] else "", *v["kubernetes"])
                for v in r["volcano"]
            )
            print("  MindCluster %s: %s" % (r["release"], builds))
        print("  knows the releases %s" % ", ".join(info["knows"]))  # type: ignore[arg-type]
    return EXIT_OK


def cmd_docs(args: argparse.Namespace) -> int:
    from .docsgen import write_docs

    out = args.out
    if out is None:
        out = "docs"
        if not os.path.isdir(out):
            raise ResumableError(
                "has no docs/ directory",
                "resumable docs in %s" % shown(os.getcwd()),
                "Run it in the root of an ascend-resumable checkout, or name a directory with --out DIR",
            )
    existed = os.path.isdir(out)
    changed = write_docs(out, check=args.check)
    if not existed and not args.check:
        print("created %s" % out)
    if args.check and changed:
        print("out of date: %s (run `resumable docs`)" % ", ".join(changed), file=sys.stderr)
        return EXIT_INVALID
    for name in changed:
        print("wrote %s" % name)
    return EXIT_OK


def _render_steps() -> str:
    from .manifests.render import steps_text

    return "\n".join("  " + line for line in steps_text().splitlines())


#: One example per sub-command, shown at the end of its --help (the runtime commands included).
EXAMPLES: Dict[str, str] = {
    "validate": "resumable validate examples/pytorch-process-recovery.yaml --strict\n"
    "  resumable validate profiles/*.yaml --format json | jq '.profiles[] | select(.valid | not)'",
    "plan": "resumable plan examples/pytorch-process-recovery.yaml --format json | jq '.jobs[0].env'",
    "schema": "resumable schema > profile.schema.json   # for an editor's YAML language server",
    "render": "resumable render examples/pytorch-process-recovery.yaml --out DIR\n" + _render_steps(),
    "docs": "resumable docs --check   # exit 2 when docs/rules.md, profile.md or sources.md are out of date",
    "init": "resumable init --out my-cluster.yaml --release 7.3.2 --nodes 4 --recovery pod --nfs 10.0.0.10:/exports/ai",
    "version": "resumable version --format json | jq '.deploys[].release'",
    "launch": "resumable launch --dry-run --profile /etc/resumable/profile.yaml --job gpt -- train.py --lr 1e-4",
    "doctor": "resumable doctor --format json   # in a training container\n  resumable doctor --node compute",
    "timeline": 'resumable timeline "$LOG_DIR/timeline-$(hostname).jsonl" --events   # LOG_DIR: the plan\'s '
    "launcher.log_dir, its $(MINDX_TASK_ID) the pod's (`resumable plan PROFILE` notes the path)",
    "drill": "kubectl exec POD -c ascend -- resumable drill --fault kill --signal SIGKILL --local-rank 1 --count 2\n"
    "  resumable drill --profile profile.yaml --fault exit --code 7 --format json   # beside a local resumable launch",
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
    add_format(v, "text", "json")
    v.set_defaults(func=cmd_validate)

    pl = sub.add_parser("plan", help="print everything the profile implies")
    pl.add_argument("profile", metavar="PROFILE")
    add_format(pl, "text", "json", "yaml")
    pl.add_argument("--strict", action="store_true", help="warnings fail too")
    pl.set_defaults(func=cmd_plan)

    s = sub.add_parser("schema", help="print the profile's JSON Schema")
    add_format(s, "json", "yaml")
    s.set_defaults(func=cmd_schema)

    r = sub.add_parser(
        "render", help="write the whole deployment (scheduling stack, storage, image build spec, jobs) as YAML"
    )
    r.add_argument("profile", metavar="PROFILE")
    r.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="directory to (re)write: one directory per layer (1-crds, 2-cluster, 3-storage, 4-jobs/JOB), each "
        "with a Kustomization, applied in that order (below); - writes one multi-document YAML stream to stdout",
    )
    r.add_argument(
        "--layer",
        metavar="LAYER",
        help="with --out -: only this layer (1-crds, 2-cluster, 3-storage or 4-jobs/JOB)",
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

    ini = sub.add_parser(
        "init",
        help="write a new profile from a few answers (flags, or questions on a terminal), valid as written",
        description="Write a new profile, like `helm create` or `pulumi new`: the chip and accelerator type, nodes "
        "and NPUs, the MindCluster release, the framework, the recovery level wanted and the storage pick the "
        "settings; the result is checked by the one gate before it is written, and it has comments. Flags not "
        "given are asked on a terminal (--no-input: their defaults).",
    )
    ini.add_argument("--out", required=True, metavar="FILE", help="the new profile (never replaced); - for stdout")
    ini.add_argument("--name", help="job name (default train)")
    ini.add_argument("--namespace", help="job namespace (default training)")
    ini.add_argument("--cluster", help="cluster name (default ascend)")
    ini.add_argument("--release", choices=RELEASE_CHOICES, help="MindCluster release (default the newest)")
    ini.add_argument("--chip", choices=values(Chip), help="chip family (default ascend-910b)")
    ini.add_argument("--accelerator-type", help="accelerator-type node label (default module-910b-8)")
    ini.add_argument("--arch", choices=values(Arch), help="CPU architecture (default aarch64)")
    ini.add_argument("--nodes", type=int, help="nodes of the job (default 2)")
    ini.add_argument("--npus-per-node", type=int, help="NPUs per node (default 8)")
    ini.add_argument("--framework", choices=["pytorch", "mindspore"], help="framework (default pytorch)")
    ini.add_argument("--recovery", choices=["job", "pod", "process"], help="recovery level wanted (default process)")
    store = ini.add_mutually_exclusive_group()
    store.add_argument("--nfs", metavar="SERVER:/PATH", help="an NFS export for caches and checkpoints")
    store.add_argument("--storage-class", metavar="NAME", help="a ReadWriteMany storage class instead of NFS")
    ini.add_argument("--no-input", action="store_true", help="ask nothing: defaults for what no flag gives")
    ini.set_defaults(func=cmd_init)

    ve = sub.add_parser(
        "version", help="this tool's version, the MindCluster releases it deploys (Volcano, Kubernetes), the collection"
    )
    add_format(ve, "text", "json", "yaml")
    ve.set_defaults(func=cmd_version)

    d = sub.add_parser("docs", help="regenerate docs/rules.md, docs/profile.md and docs/sources.md from the code")
    d.add_argument("--out", metavar="DIR", help="where to write them (default: docs/ of the checkout you are in)")
    d.add_argument("--check", action="store_true", help="only report files that are out of date")
    d.set_defaults(func=cmd_docs)

    from .image import add_commands as add_image_commands
    from .runtime import add_commands, add_image_steps

    add_commands(sub)
    im = sub.add_parser("image", help="build the training image: context, run.py patch, wheel dependencies")
    isub = im.add_subparsers(dest="image_command", metavar="COMMAND")
    isub.required = True
    add_image_steps(isub)
    add_image_commands(isub)
    _add_examples(sub)
    return p


def _output_errors_escape() -> None:
    """Text output never fails on a character the encoding lacks: it is shown as an escape."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and not unicode_ok(stream):
            with contextlib.suppress(ValueError, OSError):  # a stream that cannot be reconfigured
                reconfigure(errors="backslashreplace")


def _discard_output() -> None:
    """What is left for stdout goes nowhere (no second error when Python flushes it at exit)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _pipe_closed() -> int:
    """The reader went away: no message (there is nobody to read it on stdout, and on stderr it
    would only be noise after `| head`), and no second error when Python flushes stdout at exit."""
    _discard_output()
    return EXIT_PIPE


class OutputError(ResumableError):
    """The command's output could not be written: it is not our bug, and not the input's either, but
    the place the output goes to (a full disk, the file size limit)."""


#: why a write to stdout can fail, and what to do (the file size limit: Python ignores SIGXFSZ, so the
#: write fails with EFBIG)
_OUTPUT_FIXES = {
    errno.EFBIG: "The output is larger than this process may write to a file (the file size limit, "
    "`ulimit -f`): raise the limit, or pipe the output into the program that reads it.",
    errno.ENOSPC: "The disk the output goes to is full: write it to another one, or pipe it.",
    errno.EDQUOT: "The disk quota of the place the output goes to is used up: write it elsewhere, or pipe it.",
}


class _Output:
    """Standard output for a command: every character is written, or the command fails. A write or flush
    the system refuses (not a closed pipe) becomes an :class:`OutputError`, reported as one paragraph
    with exit 2 instead of an internal error. Text goes to the byte stream under it in a loop: with an
    unbuffered stdout (PYTHONUNBUFFERED=1, common in images) a write the file size limit cuts short is
    taken as whole by the text layer, and the rest of the output was lost without a word."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def _failed(self, exc: OSError) -> OutputError:
        return OutputError(
            "cannot be written (%s)" % (exc.strerror or exc),
            "standard output",
            _OUTPUT_FIXES.get(exc.errno or 0, "Write the output where it fits, or pipe it."),
        )

    def _write_bytes(self, buffer: Any, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = buffer.write(view)
            if not n:  # None: it would block; 0: it takes nothing
                raise OSError(errno.EAGAIN, "the output takes no more bytes")
            view = view[n:]

    def write(self, text: str) -> int:
        buffer = getattr(self._stream, "buffer", None)
        try:
            if buffer is None:
                return self._stream.write(text)
            self._stream.flush()  # what the text layer holds goes first
            encoding = getattr(self._stream, "encoding", None) or "utf-8"
            self._write_bytes(buffer, text.encode(encoding, getattr(self._stream, "errors", None) or "strict"))
            return len(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise self._failed(exc) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise self._failed(exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main(argv: Optional[List[str]] = None) -> int:
    _output_errors_escape()
    args = parser().parse_args(argv)
    stdout = sys.stdout
    sys.stdout = _Output(stdout)
    try:
        code: int = args.func(args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return _pipe_closed()
    except OutputError as exc:
        print("error: %s" % exc, file=sys.stderr)
        _discard_output()
        return exc.exit_code
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
    finally:
        sys.stdout = stdout


if __name__ == "__main__":
    sys.exit(main())
