"""Operator compilation: binaries or a shared compile cache, never both."""

from __future__ import annotations

from typing import Iterable

from .. import constants as C
from .. import releases as R
from ..facts import JobFacts
from ..profile import Profile
from ..versions import Version
from .base import WARNING, Finding, job_rule


@job_rule(
    "compile-exclusive",
    "Operator binaries and the operator compile cache exclude each other",
    "seed 恢复时间优化 算子编译时间优化 (二者不兼容); RT05 Tables 7-8",
)
def compile_exclusive(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """Binaries mean jit_compile=False (no compilation, nothing to cache); the cache means
    jit_compile=True with ASCEND_CACHE_PATH. Setting the cache variables next to binaries, or a
    second cache path, leaves one of the two choices silently unused."""
    c = f.job.compile
    env_path = f.job.env.get(C.ENV_ASCEND_CACHE_PATH)
    if c.mode == "binaries" and (env_path is not None or c.max_op_cache_size is not None):
        paths = ["%s.compile.mode" % f.path]
        if env_path is not None:
            paths.append("%s.env.%s" % (f.path, C.ENV_ASCEND_CACHE_PATH))
        if c.max_op_cache_size is not None:
            paths.append("%s.compile.max_op_cache_size" % f.path)
        yield Finding(
            paths,
            "operator binaries are chosen but an operator compile cache is configured too",
            "Pick one: compile.mode: binaries without cache settings, or compile.mode: cache.",
        )
    if c.mode == "cache" and env_path is not None and env_path != c.cache_path:
        yield Finding(
            ["%s.env.%s" % (f.path, C.ENV_ASCEND_CACHE_PATH), "%s.compile.cache_path" % f.path],
            "env sets %s=%s but compile.cache_path is %s" % (C.ENV_ASCEND_CACHE_PATH, env_path, c.cache_path),
            "Remove %s from env; set compile.cache_path." % C.ENV_ASCEND_CACHE_PATH,
        )


@job_rule(
    "compile-cann",
    "Operator binaries and the compile cache need CANN 8.0.RC2 or later",
    "seed 恢复时间优化 表9/表10",
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
            "compile.mode %s needs CANN %s or later and image.cann is not declared" % (mode, R.COMPILE_CANN),
            "Declare image.cann.",
            severity=WARNING,
        )
    elif f.cann < Version(R.COMPILE_CANN):
        yield Finding(
            paths,
            "compile.mode %s needs CANN %s or later, the image has %s" % (mode, R.COMPILE_CANN, f.cann),
            "Upgrade CANN or set compile.mode: default.",
        )


@job_rule(
    "compile-cache-shared-storage",
    "The compile cache needs a shared volume mounted at ASCEND_CACHE_PATH on every pod",
    "seed 恢复时间优化 表10 (ASCEND_CACHE_PATH=共享存储路径)",
)
def compile_cache_shared_storage(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """A cache on a pod's own disk dies with the pod, which is exactly when it would be needed."""
    if f.job.compile.mode == "cache" and profile.storage.nfs is None and profile.storage.storage_class is None:
        yield Finding(
            ["%s.compile.mode" % f.path, "storage"],
            "compile.mode cache needs shared storage, the profile declares none",
            "Add storage.nfs (server, path) or storage.storage_class.",
        )


@job_rule(
    "compile-cache-max-size",
    "ASCEND_MAX_OP_CACHE_SIZE=-1 with a cache on shared storage",
    "seed 恢复时间优化 表10 (ASCEND_MAX_OP_CACHE_SIZE=-1)",
    severity=WARNING,
)
def compile_cache_max_size(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """With a size limit every node ages out cache entries on the shared volume, and the nodes
    contend for it; -1 (no limit) is the documented setting on shared storage."""
    c = f.job.compile
    if c.mode != "cache":
        return
    if c.max_op_cache_size is not None and c.max_op_cache_size != -1:
        yield Finding(
            ["%s.compile.max_op_cache_size" % f.path],
            "max_op_cache_size is %d on shared storage" % c.max_op_cache_size,
            "Remove compile.max_op_cache_size (the plan sets -1).",
        )
    env_value = f.job.env.get(C.ENV_ASCEND_MAX_OP_CACHE_SIZE)
    if env_value is not None and env_value.strip() != "-1":
        yield Finding(
            ["%s.env.%s" % (f.path, C.ENV_ASCEND_MAX_OP_CACHE_SIZE)],
            "env sets %s=%s on shared storage" % (C.ENV_ASCEND_MAX_OP_CACHE_SIZE, env_value),
            "Remove it from env (the plan sets -1).",
        )
