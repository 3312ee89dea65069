"""Operator compilation: binaries or a shared compile cache, never both."""

from __future__ import annotations

from typing import Iterable

from .. import constants as C
from .. import releases as R
from ..facts import JobFacts, uses_compile_cache
from ..profile import Profile
from .base import WARNING, Finding, job_rule


@job_rule(
    "compile-exclusive",
    "Operator binaries and the operator compile cache exclude each other",
    "RTO 算子编译时间优化 (二者不兼容); RT05 Tables 7-8",
)
def compile_exclusive(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """Binaries mean jit_compile=False (no compilation, nothing to cache); the cache means
    jit_compile=True with ASCEND_CACHE_PATH. Cache settings next to binaries, as fields or in env,
    leave one of the two choices silently unused."""
    c = f.job.compile
    env_path = f.declared.env.get(C.ENV_ASCEND_CACHE_PATH)
    if c.mode == "binaries" and (env_path is not None or c.max_op_cache_size is not None):
        paths = ["%s.compile.mode" % f.path]
        if env_path is not None:
            paths.append("%s.env.%s" % (f.path, C.ENV_ASCEND_CACHE_PATH))
        if c.max_op_cache_size is not None:
            paths.append(f.where("compile.max_op_cache_size"))
        yield Finding(
            paths,
            "operator binaries are chosen but an operator compile cache is configured too",
            "Pick one: compile.mode: binaries without cache settings, or compile.mode: cache.",
        )


@job_rule(
    "compile-cann",
    "Operator binaries and the compile cache need CANN 8.0.RC2 or later",
    "RTO 表9/表10",
    warns=True,
)
def compile_cann(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """Both features are documented for CANN 8.0.RC2 and later only."""
    mode = f.job.compile.mode
    if mode == "default":
        return
    paths = ["%s.compile.mode" % f.path, "%s.image.cann" % f.path]
    if f.cann is None:
        yield Finding(
            paths,
            "compile.mode %s needs CANN %s or later and image.cann is not declared" % (mode, R.COMPILE_CANN.since),
            "Declare image.cann.",
            severity=WARNING,
        )
    elif not R.at_least(f.cann, R.COMPILE_CANN):
        yield Finding(
            paths,
            "compile.mode %s needs CANN %s or later, the image has %s" % (mode, R.COMPILE_CANN.since, f.cann),
            "Upgrade CANN or set compile.mode: default.",
        )


@job_rule(
    "compile-cache-shared-storage",
    "The compile cache needs a shared volume mounted at ASCEND_CACHE_PATH on every pod",
    "RTO 表10 (ASCEND_CACHE_PATH=共享存储路径); RT05 (MindSpore graph cache)",
)
def compile_cache_shared_storage(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """A cache on a pod's own disk dies with the pod, which is exactly when it would be needed;
    the MindSpore graph cache lives on the same shared volume."""
    if uses_compile_cache(f) and profile.storage.nfs is None and profile.storage.storage_class is None:
        what = "compile.mode" if f.job.compile.mode == "cache" else "compile.mindspore_graph_cache"
        yield Finding(
            ["%s.%s" % (f.path, what), "storage"],
            "%s needs shared storage for its cache, the profile declares none" % what,
            "Add storage.nfs (server, path) or storage.storage_class.",
        )


@job_rule(
    "compile-cache-max-size",
    "ASCEND_MAX_OP_CACHE_SIZE=-1 with a cache on shared storage",
    "RTO 表10 (ASCEND_MAX_OP_CACHE_SIZE=-1)",
    severity=WARNING,
)
def compile_cache_max_size(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """With a size limit every node ages out cache entries on the shared volume, and the nodes
    contend for it; -1 (no limit) is the documented setting on shared storage. The limit may come
    from compile.max_op_cache_size or from env."""
    c = f.job.compile
    if c.mode != "cache":
        return
    if c.max_op_cache_size is not None and c.max_op_cache_size != -1:
        where = f.where("compile.max_op_cache_size")
        yield Finding(
            [where],
            "the operator cache size limit is %d (%s) on shared storage" % (c.max_op_cache_size, where),
            "Remove the limit (compile.max_op_cache_size and env %s; the plan sets -1)."
            % C.ENV_ASCEND_MAX_OP_CACHE_SIZE,
        )


@job_rule(
    "msrun-compile-mode",
    "compile.mode on MindSpore maps to op_compile, which needs MindSpore 2.5.0 or later",
    "MS-OPCOMPILE; RTO 表9/表10",
    warns=True,
)
def msrun_compile_mode(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """torch.npu.set_compile_mode is PyTorch's switch; on MindSpore the launcher makes the
    equivalent call, mindspore.device_context.ascend.op_tuning.op_compile(False) for binaries and
    (True) for the compile cache, which exists from MindSpore 2.5.0. ASCEND_CACHE_PATH and
    ASCEND_MAX_OP_CACHE_SIZE are CANN's and work for both frameworks."""
    mode = f.job.compile.mode
    if f.is_pytorch or mode == "default":
        return
    paths = ["%s.compile.mode" % f.path, "%s.image.mindspore" % f.path]
    if f.mindspore is None:
        yield Finding(
            paths,
            "compile.mode %s on MindSpore calls op_compile, which needs MindSpore %s or later, and "
            "image.mindspore is not declared" % (mode, R.OP_COMPILE_MINDSPORE.since),
            "Declare image.mindspore.",
            severity=WARNING,
        )
    elif not R.at_least(f.mindspore, R.OP_COMPILE_MINDSPORE):
        yield Finding(
            paths,
            "compile.mode %s on MindSpore calls op_compile, which MindSpore %s does not have (from %s)"
            % (mode, f.mindspore, R.OP_COMPILE_MINDSPORE.since),
            "Upgrade MindSpore to %s or later, or set compile.mode: default." % R.OP_COMPILE_MINDSPORE.since,
        )
