"""Write the deployment as YAML in layers, one directory each, and say how kubectl applies them.

A render directory holds four layers, each a directory with its own ``Kustomization``::

    1-crds/            the CustomResourceDefinitions (Volcano, AscendJob)
    2-cluster/         the scheduling stack: its namespaces, Volcano, Ascend Operator, ClusterD,
                       device plugin, NodeD, NPU Exporter
    3-storage/         the jobs' namespaces, PersistentVolumes, claims and the Jobs that prepare
                       the job directories on the NFS export
    4-jobs/<job>/      one directory per training job: its ConfigMaps and the AscendJob/Volcano Job

The layers exist because kubectl cannot do it in one step: a custom resource applied together with
its CRD is refused ("ensure CRDs are installed first"), and ``kubectl delete -k`` of one directory
deletes everything in it (a CRD deletion takes every AscendJob of the cluster with it). So the
CRDs go first and are waited for, and ``kubectl delete -k DIR/4-jobs/<job>`` removes that job
alone. :func:`apply_steps`, :func:`diff_steps` and :func:`delete_job_steps` are the only place
the kubectl commands are written: ``render --help``, the summary ``render`` prints, the docs and
the tests against an API server all take them from there.

In a layer the files are numbered in install order, ``<n>-<kind>-<namespace>-<name>.yaml``, with
as many digits as the layer's largest number needs (at least three), so a name sort is the install
order at any size. The directory is replaced as a whole (:func:`resumable.fileio.replace_directory`):
only a directory an earlier render wrote (marker file ``.resumable-output``) or an empty one is
ever replaced.
"""

from __future__ import annotations

import os
import re
from typing import Dict, List, NamedTuple, Sequence, TextIO, Tuple, Union

from .. import yamlio
from ..fileio import replace_directory
from .k8s import LABEL_INSTANCE, Obj
from .storage import PREPARE_LABEL, PREPARE_VALUE

#: The layers in the order they are applied.
CRDS = "1-crds"
CLUSTER = "2-cluster"
STORAGE = "3-storage"
JOBS = "4-jobs"
LAYERS = (CRDS, CLUSTER, STORAGE, JOBS)
#: How long the commands wait for the CRDs to be served and for the storage to be prepared.
CRD_WAIT = "60s"
PREPARE_WAIT = "300s"
#: Place-holders of the commands when no render is at hand (``render --help``, the docs).
DIR_PLACEHOLDER = "DIR"
JOB_PLACEHOLDER = "JOB"


def to_yaml(obj: Obj) -> str:
    """One object as YAML (libyaml when present, the same bytes without it: :mod:`resumable.yamlio`)."""
    return yamlio.dump(obj)


def digits(count: int) -> int:
    """Digits of the file numbers of a layer of ``count`` objects: at least 3, as many as needed."""
    return max(3, len(str(max(count - 1, 0))))


def file_name(index: int, obj: Obj, width: int = 3) -> str:
    meta = obj.get("metadata") or {}
    parts = [obj["kind"].lower()]
    if meta.get("namespace"):
        parts.append(str(meta["namespace"]))
    parts.append(str(meta["name"]))
    slug = re.sub(r"[^a-z0-9.-]+", "-", "-".join(parts).lower())
    return "%0*d-%s.yaml" % (width, index, slug)


class Layer(NamedTuple):
    """One directory of the render: its path relative to the output and its objects in order."""

    path: str
    objects: List[Obj]

    def names(self) -> List[str]:
        width = digits(len(self.objects))
        return [file_name(i, obj, width) for i, obj in enumerate(self.objects)]


def job_layer(job: str) -> str:
    return "%s/%s" % (JOBS, job)


def is_crd(obj: Obj) -> bool:
    return obj.get("kind") == "CustomResourceDefinition"


def layers(cluster: Sequence[Obj], storage: Sequence[Obj], jobs: Sequence[Obj]) -> List[Layer]:
    """The layers of a deployment: ``cluster`` (the scheduling stack, CRDs included, as
    :func:`~resumable.manifests.scheduler.build_stages` orders it), ``storage`` (the jobs'
    namespaces and shared storage), ``jobs`` (every job's objects, labelled with the job's name as
    ``app.kubernetes.io/instance``). An empty layer is left out."""
    per_job: Dict[str, List[Obj]] = {}
    for obj in jobs:
        name = (obj.get("metadata") or {}).get("labels", {}).get(LABEL_INSTANCE)
        if not name:
            raise ValueError("job object %s has no %s label" % (obj["metadata"]["name"], LABEL_INSTANCE))
        per_job.setdefault(str(name), []).append(obj)
    out = [
        Layer(CRDS, [o for o in cluster if is_crd(o)]),
        Layer(CLUSTER, [o for o in cluster if not is_crd(o)]),
        Layer(STORAGE, list(storage)),
        *(Layer(job_layer(job), objs) for job, objs in per_job.items()),
    ]
    return [layer for layer in out if layer.objects]


#: The kustomization file's name: one of the three kustomize reads (kustomization.yaml,
#: kustomization.yml, Kustomization), the one without a YAML extension, because `kubectl apply
#: -f DIR` reads every *.yaml file of DIR as an object and fails on a kustomization.yaml
#: ("no matches for kind Kustomization"); this way both `-f DIR` and `-k DIR` work.
KUSTOMIZATION = "Kustomization"


def kustomization(names: Sequence[str]) -> str:
    """A Kustomization listing the rendered files of a layer in install order (kustomize's default
    order also puts namespaces first)."""
    head = "# Written by `resumable render`: one layer; `resumable render --help` gives the order of the layers.\n"
    return head + yamlio.dump(
        {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": list(names)}
    )


def write_layers(out_layers: Sequence[Layer], out_dir: Union[str, os.PathLike[str]]) -> List[os.PathLike[str]]:
    """Replace ``out_dir`` with one directory per layer (one YAML file per object and a
    ``Kustomization``); return the object files in order.

    Nothing else is written but the marker file that lets the next render replace the directory
    (:func:`resumable.fileio.replace_directory`: an existing directory without it, a file or a
    symbolic link is refused with an :class:`~resumable.fileio.OutputError`). If anything fails,
    ``out_dir`` is left as it was and no staging directory remains.
    """
    files: List[Tuple[str, str]] = []
    kustomizations: List[Tuple[str, str]] = []
    for layer in out_layers:
        names = layer.names()
        if len(set(names)) != len(names):
            raise ValueError("two objects of %s map to the same file name" % layer.path)
        files += [("%s/%s" % (layer.path, n), to_yaml(obj)) for n, obj in zip(names, layer.objects)]
        kustomizations.append(("%s/%s" % (layer.path, KUSTOMIZATION), kustomization(names)))
    written = replace_directory(
        os.fspath(out_dir), [*files, *kustomizations], option="--out", command="resumable render"
    )
    return list(written[: len(files)])


def write_stream(objects: Sequence[Obj], out: TextIO) -> None:
    """Every object as one multi-document YAML stream (``---`` before each), in install order."""
    for obj in objects:
        out.write("---\n")
        out.write(to_yaml(obj))


# --- the kubectl commands of a render ---------------------------------------------------------------


class Step(NamedTuple):
    """One kubectl command: its arguments (``kubectl`` first) and what it is for."""

    argv: Tuple[str, ...]
    why: str

    def shell(self) -> str:
        return " ".join(self.argv)


def _in(out: str, layer: str) -> str:
    return "%s/%s" % (out.rstrip("/") or "/", layer)


def apply_steps(
    out: str = DIR_PLACEHOLDER, jobs: Sequence[str] = (JOB_PLACEHOLDER,), prepare: bool = True
) -> List[Step]:
    """The commands that apply the render in ``out``, in order: the CRDs (server-side: a full CRD
    is larger than the annotation client-side apply keeps), a wait until the API server serves
    them, the cluster stack, the storage, a wait for the Jobs that prepare the job directories on
    the NFS export (``prepare``: the render has some; one that fails names the directory and the fix
    in its log), then each job."""
    steps = [
        Step(("kubectl", "apply", "--server-side", "-k", _in(out, CRDS)), "the CRDs first"),
        Step(
            ("kubectl", "wait", "--for=condition=Established", "--timeout=" + CRD_WAIT, "-f", _in(out, CRDS)),
            "until the API server serves them (an AscendJob applied before is refused)",
        ),
        Step(("kubectl", "apply", "-k", _in(out, CLUSTER)), "the scheduling stack"),
        Step(("kubectl", "apply", "-k", _in(out, STORAGE)), "the jobs' namespaces, volumes and claims"),
    ]
    if prepare:
        steps.append(
            Step(
                (
                    "kubectl",
                    "wait",
                    "--for=condition=Complete",
                    "--timeout=" + PREPARE_WAIT,
                    "--all-namespaces",
                    "-l",
                    "%s=%s" % (PREPARE_LABEL, PREPARE_VALUE),
                    "job",
                ),
                "NFS storage: the job directories on the export exist and are writable (on failure: kubectl logs "
                "job/NAME -n NS)",
            )
        )
    steps += [Step(("kubectl", "apply", "-k", _in(out, job_layer(job))), "job %s" % job) for job in jobs]
    return steps


def diff_steps(out: str = DIR_PLACEHOLDER, jobs: Sequence[str] = (JOB_PLACEHOLDER,)) -> List[Step]:
    """``kubectl diff`` of every layer against the cluster, with the flags its apply has (exit 0:
    nothing would change, 1: something would)."""
    return [
        Step(("kubectl", "diff", *s.argv[2:]), "what %s would change" % s.argv[-1])
        for s in apply_steps(out, jobs, prepare=False)
        if s.argv[1] == "apply"
    ]


def delete_job_steps(out: str = DIR_PLACEHOLDER, job: str = JOB_PLACEHOLDER) -> List[Step]:
    """Remove one job (its ConfigMaps and the job; pods follow): nothing of another job, the
    storage (claims and checkpoints stay), the stack or the CRDs."""
    return [Step(("kubectl", "delete", "-k", _in(out, job_layer(job))), "job %s alone" % job)]


def steps_text(out: str = DIR_PLACEHOLDER, jobs: Sequence[str] = (JOB_PLACEHOLDER,), prepare: bool = True) -> str:
    """The commands as ``render`` prints them and ``render --help`` and the docs show them."""
    lines = ["apply, in this order:"]
    lines += ["  %s   # %s" % (s.shell(), s.why) for s in apply_steps(out, jobs, prepare)]
    lines.append("see what a new render would change:")
    lines += ["  %s" % s.shell() for s in diff_steps(out, jobs[:1])]
    lines.append("remove one job (its storage, the other jobs and the stack stay):")
    lines += ["  %s" % s.shell() for s in delete_job_steps(out, jobs[0] if jobs else JOB_PLACEHOLDER)]
    return "\n".join(lines)
