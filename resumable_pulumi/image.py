"""``RuntimeImage``: the training runtime image of one job, built with pulumi-docker-build, or a
prebuilt reference from stack config.

The build context comes from ``resumable.image.context.prepare_context(plan, job, out_dir)``
(the Dockerfile of images/runtime/, this project's source, the vendor wheel files checked against
their sha256, the profile; the contract is in the developers' guide). The image is pushed to the
configured registry (credentials are Pulumi secrets) and :attr:`RuntimeImage.ref` is the pushed
reference **with its digest**, which the jobs run: a re-push of the tag never changes a running job.

``pulumi preview`` prepares the context (copies and checks the wheels, so a wrong checksum stops the
preview) but builds nothing unless ``build_on_preview``; ``pulumi destroy`` keeps the pushed image.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable, List, Optional

import pulumi

from resumable.errors import ResumableError
from resumable.formats import image_repository, with_tag
from resumable.plan.model import Plan

TYPE_TOKEN = "ascend-resumable:stack:RuntimeImage"
#: ``docker buildx`` platforms by the plan's CPU architecture.
PLATFORMS = {"aarch64": "linux/arm64", "x86_64": "linux/amd64"}

ContextFactory = Callable[[Plan, str, str], Any]
#: where build contexts are prepared, relative to the program's directory (``<CONTEXT_DIR>/<job>``)
CONTEXT_DIR = os.path.join("build", "image-context")


def cache_ref(tag: str) -> str:
    """The registry build cache beside a tag: ``<repository>:buildcache`` (tag and digest dropped)."""
    return with_tag(image_repository(tag), "buildcache")


def default_context_factory() -> ContextFactory:
    """``resumable.image.context.prepare_context``, imported only when a build is needed."""
    from resumable.image.context import prepare_context

    factory: ContextFactory = prepare_context
    return factory


@dataclasses.dataclass
class RuntimeImageArgs:
    """Inputs of :class:`RuntimeImage`."""

    plan: Plan
    #: the job whose image this is
    job: str
    #: a prebuilt reference (``registry/name:tag`` or ``...@sha256:...``): nothing is built
    prebuilt: Optional[str] = None
    #: the references the build pushes (the first one is exported with the digest)
    tags: List[str] = dataclasses.field(default_factory=list)
    push: bool = True
    #: registry address the credentials are for (e.g. ``registry.example.com``)
    registry: Optional[str] = None
    username: Optional[pulumi.Input[str]] = None
    password: Optional[pulumi.Input[str]] = None
    #: where build contexts are prepared (``<context_dir>/<job>``); None: :data:`CONTEXT_DIR`
    context_dir: Optional[str] = None
    #: build (and push) during ``pulumi preview`` too; False (the default) builds only on ``up``
    #: (pulumi-docker-build's ``buildOnPreview`` defaults to true, which needs Docker for a preview)
    build_on_preview: bool = False


class RuntimeImage(pulumi.ComponentResource):
    """The job's training image; :attr:`ref` is what the job runs."""

    ref: pulumi.Output[str]
    #: the pushed digest (``sha256:...``), or the digest a prebuilt reference pins ("" when it pins none)
    digest: pulumi.Output[str]

    def __init__(self, name: str, args: RuntimeImageArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.image: Optional[pulumi.CustomResource] = None
        self.context: Any = None
        missing = self._missing_on_preview(args)
        if args.prebuilt:
            self.ref = pulumi.Output.from_input(args.prebuilt)
            self.digest = pulumi.Output.from_input(args.prebuilt.partition("@")[2])
        elif missing:
            # a preview goes on without the image (the jobs show the tag it will push); `up` refuses
            pulumi.log.warn(f"RuntimeImage {name}: {missing} `pulumi up` stops here until they are in place.", self)
            self.ref = pulumi.Output.from_input(args.tags[0] if args.tags else "")
            self.digest = pulumi.Output.from_input("")
        else:
            image = self._build(name, args)
            self.ref = image.ref  # type: ignore[attr-defined]
            self.digest = image.digest  # type: ignore[attr-defined]
        self.register_outputs({"ref": self.ref, "digest": self.digest})

    @staticmethod
    def _missing_on_preview(args: RuntimeImageArgs) -> str:
        """During ``pulumi preview``, what a build would lack (the vendor wheel files the profile names,
        which the shipped examples leave to the user), as the message of ``resumable image context``;
        "" when nothing is missing or this is not a preview."""
        if args.prebuilt or not pulumi.runtime.is_dry_run():
            return ""
        from resumable.image.context import check_wheel_files

        job = next(j for j in args.plan.jobs if j.name == args.job)
        try:
            check_wheel_files(args.plan, job)
        except ResumableError as exc:
            return str(exc)
        return ""

    def _build(self, name: str, args: RuntimeImageArgs) -> pulumi.CustomResource:
        import pulumi_docker_build as docker_build

        if not args.tags:
            raise pulumi.RunError(
                f"RuntimeImage {name}: job {args.job} has no image reference to push to; set jobs[].image.name "
                "in the profile, or config imageRegistry, or config images to a prebuilt reference"
            )
        prepare = default_context_factory()
        out_dir = os.path.join(args.context_dir or CONTEXT_DIR, args.job)
        try:
            ctx = prepare(args.plan, args.job, out_dir)
        except ResumableError as exc:
            raise pulumi.RunError(f"RuntimeImage {name}: {exc}") from None
        self.context = ctx
        registries = []
        if args.registry:
            registries.append(
                docker_build.RegistryArgs(
                    address=args.registry,
                    username=args.username,
                    password=pulumi.Output.secret(args.password) if args.password is not None else None,
                )
            )
        platform = PLATFORMS[args.plan.scheduler.arch]
        # a pushed image keeps its layers in the registry (mode max: every stage), so the next build
        # (another build host, a CI runner) reuses them instead of rebuilding from the base
        cache = cache_ref(args.tags[0])
        cache_from = [docker_build.CacheFromArgs(registry=docker_build.CacheFromRegistryArgs(ref=cache))]
        cache_to = [
            docker_build.CacheToArgs(
                registry=docker_build.CacheToRegistryArgs(ref=cache, mode=docker_build.CacheMode.MAX)
            )
        ]
        self.image = docker_build.Image(
            f"{name}-image",
            context=docker_build.BuildContextArgs(location=ctx.path),
            dockerfile=docker_build.DockerfileArgs(location=os.path.join(ctx.path, ctx.dockerfile)),
            build_args=dict(ctx.build_args),
            platforms=[docker_build.Platform(platform)],
            tags=list(args.tags),
            push=args.push,
            registries=registries or None,
            build_on_preview=args.build_on_preview,
            cache_from=cache_from if args.push else None,
            cache_to=cache_to if args.push else None,
            # a destroy leaves the pushed image in the registry: a job elsewhere may still run it
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True),
        )
        return self.image
