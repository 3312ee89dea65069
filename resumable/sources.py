"""Every document the project cites, by code: one table that docs/sources.md is generated from.

Rules, plan notes, profile field docs and the docs cite these codes (``RT04 Table 3``,
``INST05 step 9``, ``MC:@v7.3.0 component/...``). A citation is one or more references separated
by ``;``; each reference starts with a code of :data:`SOURCES` and may go on with a locator (a
table, a step, a path after ``MC:``). :func:`unresolved` returns the references whose code is
not in the table; tests/test_sources.py runs it over every citation the project prints.

Locations are public: a repository and a path in it, or a URL. The MindCluster user guide lives
in the repository ``Ascend/mind-cluster`` (https://gitcode.com/Ascend/mind-cluster, mirrored at
https://github.com/Ascend/mind-cluster) under ``docs/``; it describes the newest release and keeps
notes on older behaviour, which is why pages of hiascend.com are cited for 7.x wording.
"""

from __future__ import annotations

import re
from typing import Dict, List, NamedTuple


class Source(NamedTuple):
    code: str
    title: str
    #: where to read it: "repository path" or a URL
    where: str
    #: the chapter or section the citations point into
    chapter: str
    #: the release or revision the project read
    release: str


MINDCLUSTER = "Ascend/mind-cluster"
_GUIDE = MINDCLUSTER + " docs/en/scheduling/"
_RT = _GUIDE + "usage/resumable_training/"
_INST = _GUIDE + "developer_guide/installation_deployment/manual_installation/"
_HA = "https://www.hiascend.com/document/detail/"
_DOCS_MASTER = "master (26.x user guide)"

_ROWS: List[Source] = [
    # --- the two chapters the project was built from -----------------------------------------
    Source(
        "RTO",
        "恢复时间优化（PyTorch） (recovery-time optimisation for PyTorch)",
        _RT + "05_configuring_training_recovery.md (current text); MindCluster user guide on hiascend.com",
        "断点续训 > 恢复时间优化（PyTorch）: 表1 watchdog, 表2 Pod-level rescheduling and its Dockerfile, "
        "表9 operator binaries, 表10 operator compile cache (table numbers of the 6.0/7.x revision)",
        "MindCluster 6.0.0.SPC1 to 7.3.0 revision",
    ),
    Source(
        "PLR",
        "配置进程级别重调度 (configuring process-level rescheduling)",
        _RT + "04_configuring_fault_handling_policies.md (current text); MindCluster user guide on hiascend.com",
        "断点续训 > 配置故障处理 > 配置进程级别重调度: 构建镜像 (image), 准备任务YAML (job YAML), "
        "适配训练脚本 (training script)",
        "MindCluster 7.3.0",
    ),
    # --- MindCluster user guide (Ascend/mind-cluster docs, English) ------------------------------
    Source(
        "RT00", "Resumable training: feature description", _RT + "00_feature_description.md", "whole page", _DOCS_MASTER
    ),
    Source(
        "RT01",
        "Resumable training: solutions and principles",
        _RT + "01_solutions_principles.md",
        "whole page",
        _DOCS_MASTER,
    ),
    Source(
        "RT02",
        "Resumable training: preparing Kubernetes and shared storage",
        _RT + "02_preparing_kubernetes_and_shared_storage.md",
        "whole page",
        _DOCS_MASTER,
    ),
    Source(
        "RT03",
        "Resumable training: configuring fault detection levels",
        _RT + "03_configuring_fault_detection_levels.md",
        "whole page",
        _DOCS_MASTER,
    ),
    Source(
        "RT04",
        "Resumable training: configuring fault handling policies",
        _RT + "04_configuring_fault_handling_policies.md",
        "whole page",
        _DOCS_MASTER,
    ),
    Source(
        "RT05",
        "Resumable training: configuring training recovery",
        _RT + "05_configuring_training_recovery.md",
        "whole page",
        _DOCS_MASTER,
    ),
    Source(
        "RT06",
        "Resumable training: configuring the job YAML file",
        _RT + "06_configuring_the_job_yaml_file.md",
        "whole page",
        _DOCS_MASTER,
    ),
    Source(
        "RT07",
        "Resumable training: using resumable training on the CLI",
        _RT + "07_using_resumable_training_on_the_cli.md",
        "whole page",
        _DOCS_MASTER,
    ),
    Source(
        "INST00",
        "Manual installation: software packages",
        _INST + "00_obtaining_software_packages.md",
        "package list and notes",
        _DOCS_MASTER,
    ),
    Source(
        "INST01",
        "Manual installation: preparing",
        _INST + "01_preparing_for_installation.md",
        "users, namespaces, log directories, images",
        _DOCS_MASTER,
    ),
    Source(
        "INST02",
        "Manual installation: Ascend Docker Runtime",
        _INST + "02_ascend_docker_runtime.md",
        "whole page",
        _DOCS_MASTER,
    ),
    Source("INST03", "Manual installation: NPU Exporter", _INST + "03_npu_exporter.md", "whole page", _DOCS_MASTER),
    Source(
        "INST04",
        "Manual installation: Ascend Device Plugin",
        _INST + "04_ascend_device_plugin.md",
        "steps and Table 3 (parameters)",
        _DOCS_MASTER,
    ),
    Source(
        "INST05",
        "Manual installation: Volcano",
        _INST + "05_volcano.md",
        "steps and Table 3 (init-params)",
        _DOCS_MASTER,
    ),
    Source("INST06", "Manual installation: ClusterD", _INST + "06_clusterd.md", "whole page", _DOCS_MASTER),
    Source(
        "INST08",
        "Manual installation: Ascend Operator",
        _INST + "08_ascend_operator.md",
        "steps and Table 1 (parameters)",
        _DOCS_MASTER,
    ),
    Source("INST09", "Manual installation: NodeD", _INST + "09_noded.md", "parameters", _DOCS_MASTER),
    Source(
        "YAMLCFG",
        "Job YAML field reference (任务YAML配置说明)",
        MINDCLUSTER + " docs/zh/scheduling/06_api/15_yaml_configuration.md",
        "acjob and vcjob field tables",
        _DOCS_MASTER,
    ),
    Source(
        "ENV",
        "Environment variable reference",
        _GUIDE + "api/environment_variable_description.md",
        "Tables 2-5",
        _DOCS_MASTER,
    ),
    Source(
        "K8S", "Kubernetes labels, annotations and service accounts", _GUIDE + "api/k8s.md", "Tables 3-7", _DOCS_MASTER
    ),
    Source(
        "VCAPI",
        "Volcano API (job labels and annotations)",
        _GUIDE + "api/volcano.md",
        "Table 3 (schedule_policy)",
        _DOCS_MASTER,
    ),
    Source("TASKDAPI", "TaskD API", _GUIDE + "api/taskd/", "04 Manager API; 06/07 return codes", _DOCS_MASTER),
    Source(
        "TFT",
        "MindIO TFT (TTP/UCE/ARF) reference",
        _GUIDE + "references/fault_recovery_acceleration/",
        "chapters 01-06 (cited as TFT 01 ... TFT 06)",
        _DOCS_MASTER,
    ),
    Source(
        "ACP",
        "MindIO ACP reference",
        _GUIDE + "references/optimizing_saving_and_loading_checkpoints/",
        "chapters 01-07 (cited as ACP 01 ... ACP 07)",
        _DOCS_MASTER,
    ),
    Source(
        "APPX",
        "Appendix",
        _GUIDE + "references/appendix.md",
        "Preparing the Installation Environment; users",
        _DOCS_MASTER,
    ),
    Source(
        "FAQ",
        "FAQ (each entry links https://gitcode.com/Ascend/mind-cluster/issues/<n>)",
        _GUIDE + "references/faq.md",
        "cited by issue number, e.g. FAQ 337",
        _DOCS_MASTER,
    ),
    Source("RN", "Release notes", MINDCLUSTER + " docs/en/release_notes.md", "Version Compatibility", _DOCS_MASTER),
    Source("HELM", "Helm deploy tool", MINDCLUSTER + " helm-deploy-tool/", "charts and values.yaml", "branch_v26.1.0"),
    Source(
        "MC:",
        "Ascend/mind-cluster source",
        MINDCLUSTER + " (path after the colon; @tag = that tag, else master)",
        "the path given",
        "tags v6.0.0, v7.0.RC1, v7.1.RC1, v7.2.RC1, v7.3.0, branch_v26.x",
    ),
    Source(
        "MCD:",
        "Ascend/mindcluster-deploy samples",
        "Ascend/mindcluster-deploy (path after the colon; @branch = that branch, else master)",
        "the path given",
        "branch_v6.0.0 to branch_v7.3.0, master",
    ),
    Source("D:", "MindCluster user guide (English)", _GUIDE + "<path after the colon>", "the path given", _DOCS_MASTER),
    Source(
        "DZ:",
        "MindCluster user guide (Chinese)",
        MINDCLUSTER + " docs/zh/scheduling/<path after the colon>",
        "the path given",
        _DOCS_MASTER,
    ),
    # --- hiascend.com pages (7.x wording that the repository docs no longer carry) ---------------
    Source(
        "HA500",
        "MindX DL 5.0.0: rescheduling and graceful modes",
        _HA + "zh/mindx-dl/500/clusterscheduling/rtug/dl_resume_026.html",
        "whole page",
        "5.0.0",
    ),
    Source(
        "HA70-076",
        "MindCluster 7.0.RC1: process-level online recovery configuration",
        "https://www.hiascend.com/doc_center/source/zh/mindcluster/70rc1/clustersched/dlug/dl_resume_076.html",
        "whole page",
        "7.0.RC1",
    ),
    Source(
        "HA70-025",
        "MindCluster 7.0.RC1: process-level rescheduling",
        _HA + "zh/mindcluster/70rc1/clustersched/dlug/dl_resume_025.html",
        "使用约束 (constraints)",
        "7.0.RC1",
    ),
    Source(
        "HA71-025",
        "MindCluster 7.1.RC1: process-level rescheduling",
        _HA + "zh/mindcluster/71RC1/clustersched/dlug/dl_resume_025.html",
        "使用约束 (constraints)",
        "7.1.RC1",
    ),
    Source(
        "HA71-076",
        "MindCluster 7.1.RC1: online recovery configuration",
        _HA + "zh/mindcluster/71RC1/clustersched/dlug/dl_resume_076.html",
        "whole page",
        "7.1.RC1",
    ),
    Source(
        "HA72-075",
        "MindCluster 7.2.RC1: process-level rescheduling configuration",
        _HA + "zh/mindcluster/72rc1/clustersched/dlug/dl_resume_075.html",
        "构建镜像 (image, with the PrefixStore patch for torch 2.6+)",
        "7.2.RC1",
    ),
    Source(
        "HA72-025",
        "MindCluster 7.2.RC1: process-level rescheduling",
        _HA + "zh/mindcluster/72rc1/clustersched/dlug/dl_resume_025.html",
        "使用约束 (constraints)",
        "7.2.RC1",
    ),
    Source(
        "HA73-024",
        "MindCluster 7.3.0: Pod-level rescheduling",
        _HA + "en/mindcluster/730/clustersched/schedulingug/dl_resume_024.html",
        "Restrictions",
        "7.3.0",
    ),
    Source(
        "HA73-025",
        "MindCluster 7.3.0: process-level rescheduling",
        _HA + "zh/mindcluster/730/clustersched/dlug/dl_resume_025.html",
        "使用约束 (constraints)",
        "7.3.0",
    ),
    Source(
        "HA73-120",
        "MindCluster 7.3.0: HCCL link setup at initialisation (配置HCCL主动触发建链)",
        _HA + "zh/mindcluster/730/clustersched/dlug/dl_resume_120.html",
        "PyTorch单算子场景",
        "7.3.0",
    ),
    Source(
        "HA73-078",
        "MindCluster 7.3.0: job parameters, including what the operator injects",
        _HA + "en/mindcluster/730/clustersched/schedulingug/dl_resume_078.html",
        "parameter table",
        "7.3.0",
    ),
    Source(
        "HA-CANN-CONNECT",
        "CANN environment variable HCCL_CONNECT_TIMEOUT",
        _HA + "zh/canncommercial/850/maintenref/envvar/envref_07_0149.html",
        "whole page",
        "CANN 8.5.0",
    ),
    Source(
        "HA-CANN-EXEC",
        "CANN environment variable HCCL_EXEC_TIMEOUT",
        _HA + "zh/canncommercial/700/reference/envvar/envref_07_0071.html",
        "whole page",
        "CANN 7.0.0",
    ),
    # --- other projects' documents --------------------------------------------------------------
    Source(
        "TORCH",
        "PyTorch distributed launcher and elastic agent source (what torchrun does)",
        "pytorch/pytorch (https://github.com/pytorch/pytorch): torch/distributed/run.py, "
        "torch/distributed/rendezvous.py, torch/distributed/elastic/",
        "run.py imports; rendezvous.py _create_c10d_store (no per-attempt prefix on the agent store since 2.6); "
        "elastic agent restart and monitor loop",
        "torch 2.13.0 as installed",
    ),
    Source(
        "PTA",
        "Ascend Extension for PyTorch (torch_npu) version tables",
        "Ascend/pytorch (https://gitcode.com/Ascend/pytorch, mirrored at https://github.com/Ascend/pytorch): "
        "README.md; docs/zh/release_notes/related_product_version_compatibility_notes.md",
        "README 'Ascend Auxiliary Software' (branch v<torch>-<release> per package version); release notes "
        "表1 PyTorch软件版本配套关系; TorchNPU version mapping table (26.x rows)",
        "read at 7.3.0 and 26.1.1",
    ),
    Source(
        "MS-MSRUN",
        "MindSpore msrun launcher",
        "mindspore-ai/docs tutorials/source_en/parallel/msrun_launcher.md "
        "(https://www.mindspore.cn/tutorials/en/r2.6.0/parallel/msrun_launcher.html)",
        "parameter list of the command line",
        "MindSpore 2.6.0",
    ),
    Source(
        "MS-OPCOMPILE",
        "MindSpore mindspore.device_context.ascend.op_tuning.op_compile",
        "https://www.mindspore.cn/docs/en/r2.5.0/api_python/device_context/"
        "mindspore.device_context.ascend.op_tuning.op_compile.html",
        "op_compile(value): True online compilation, False prebuilt operator binaries",
        "MindSpore 2.5.0 and later",
    ),
    Source(
        "KUBE",
        "Kubernetes documentation",
        "https://kubernetes.io/docs/",
        "object names; PersistentVolumes (capacity is not enforced for NFS)",
        "Kubernetes 1.28",
    ),
    Source(
        "KAPI",
        "Kubernetes API server validation source (what the API server refuses)",
        "https://github.com/kubernetes/apimachinery (pkg/util/validation/validation.go, pkg/api/validation/"
        "objectmeta.go, pkg/apis/meta/v1/validation/validation.go) and https://github.com/kubernetes/kubernetes "
        "(pkg/apis/core/validation/validation.go, third_party/forked/golang/expansion/expand.go): `KAPI "
        "apimachinery <path>` is a file of the first, `KAPI <path>` of the second",
        "the file:line given",
        "k8s.io/apimachinery v0.28.15, k8s.io/kubernetes v1.28.15 (Kubernetes 1.28)",
    ),
    Source(
        "CTRD",
        "containerd configuration (config.toml versions, imports)",
        "https://github.com/containerd/containerd: docs/man/containerd-config.toml.5.md; issues #5837 and #7982 "
        "(an import replaces whole plugin sections up to 1.7); PR #9982 (2.0 merges them key by key); PR #12323 "
        "(2.2 imports /etc/containerd/conf.d/*.toml by default)",
        "version key (no key = version 1), CRI plugin names per version, imports",
        "containerd 1.7, 2.0-2.2",
    ),
    Source(
        "NFS5",
        "nfs(5) Linux NFS mount options",
        "https://man7.org/linux/man-pages/man5/nfs.5.html",
        "hard/soft, nfsvers negotiation; _netdev in mount(8)",
        "nfs-utils 2.6",
    ),
    Source(
        "SYSCTLD",
        "sysctl.d(5) and the net.ipv4.ip_local_reserved_ports key",
        "https://man7.org/linux/man-pages/man5/sysctl.d.5.html; https://docs.kernel.org/networking/ip-sysctl.html",
        "file order (by name across directories, later files win); ip_local_reserved_ports (one list)",
        "systemd 252; Linux 6.x",
    ),
    Source(
        "KUBECTL",
        "kubectl reference: label, cordon, uncordon, drain, wait, get, delete",
        "https://kubernetes.io/docs/reference/kubectl/generated/; kubernetes/kubectl pkg/cmd/label/label.go "
        "(labeled / unlabeled / not labeled, the --overwrite refusal), pkg/drain (DaemonSet pods need "
        "--ignore-daemonsets); https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/ (syntax)",
        "command pages; label key and value syntax",
        "Kubernetes 1.28",
    ),
    Source(
        "PEP427",
        "PEP 427: the wheel binary package format (file name convention)",
        "https://peps.python.org/pep-0427/",
        "File name convention",
        "final",
    ),
    # --- node preparation: the Ascend installers and Huawei's own node installer ------------------
    Source(
        "ADEPLOY",
        "ascend-deployer, Huawei's node installer (driver, firmware, CANN, MindCluster)",
        "PyPI wheel ascend-deployer==26.0.0 (home page https://gitcode.com/Ascend/ascend-deployer), "
        "paths inside ascend_deployer/",
        "library/process_npu.py and library/install_cann.py (installer invocations); "
        "module_utils/check_library_utils/ (pre-install checks, npu-smi parsing, busy devices); "
        "module_utils/common_info.py (PCI ids, board ids); library/install_sys_pkg.py (prerequisites); "
        "downloader/software/*.json (package names, release pairs)",
        "26.0.0",
    ),
    Source(
        "HDK-DRV",
        "Ascend NPU driver package scripts (what the driver .run runs)",
        "scripts/package/driver/common/scripts/install.sh, ver_check.sh and "
        "scripts/package/custom/driver/common/scripts/args_parse.sh, as published in the driver source "
        "mirror https://github.com/verylucky01/driver",
        "options, guards (run user, device id, arch, busy devices), exit codes 0/1/2 (2: hot reset failed, "
        "reboot needed)",
        "HDK 25.x scripts of the mirror (not checked against 25.5/26.0 packages)",
    ),
    Source(
        "HDK-FILES",
        "Version files of driver, firmware and CANN on a node (version.info, ascend_install.info)",
        "Ascend/mind-cluster component/ascend-faultdiag/test/st_testcase/modelarts-job-testdt/ascend/"
        "environment_check/worker-0/npu_info_after.txt",
        "key=value fields, compatible_version_fw / compatible_version_drv ranges",
        "master (26.x)",
    ),
    Source(
        "HA-CANN-INST",
        "CANN 8.0.0 installation guide: installer parameters, install and run user",
        _HA
        + "en/canncommercial/800/softwareinst/instg/instg_0056.html (parameters); "
        + _HA
        + "en/canncommercial/800/softwareinst/instg/instg_0004.html (users)",
        "parameter table of the .run packages; without --install-for-all install user = run user",
        "CANN 8.0.0",
    ),
    Source(
        "HA-CANN-LAYOUT",
        "CANN 8.5.0 installation guide: file paths",
        _HA + "en/canncommercial/850/softwareinst/instg/instg_0044.html",
        "<root>/cann/<arch>-linux/ascend_toolkit_install.info, cann/set_env.sh, /etc/Ascend/ascend_cann_install.info",
        "CANN 8.5.0",
    ),
    # --- not a vendor document -------------------------------------------------------------------
    Source(
        "HA73-AFFINITY",
        "MindCluster 7.3.0 scheduling user guide: affinity scheduling, Atlas 900 A3 SuperPoD",
        _HA + "en/mindcluster/730/clustersched/schedulingug/dl_affinity_0007.html",
        "logical SuperPoD affinity (sp-block; logical SuperPoDs of a job = its NPUs / sp-block)",
        "MindCluster 7.3.0",
    ),
    Source(
        "PROJECT",
        "A limit, default or estimate chosen by this project (no vendor document states it)",
        "this repository: docs/profile.md and the rule or plan part that cites it",
        "the text next to the citation says what was chosen and why",
        "this project",
    ),
    Source(
        "PROFILE",
        "A value the user gave in the profile",
        "the profile being planned (see docs/profile.md)",
        "the field named next to the citation",
        "the profile",
    ),
]

SOURCES: Dict[str, Source] = {s.code: s for s in _ROWS}
if len(SOURCES) != len(_ROWS):  # pragma: no cover - a duplicate code is a bug in this table
    raise RuntimeError("duplicate source code in resumable.sources")

# Codes that end with ":" take a path right after them (MC:@v7.3.0 component/...). Order: longest first.
_CODE = re.compile(r"(MCD:|MC:|DZ:|D:|[A-Z][A-Za-z0-9]*(?:-[A-Z0-9]+)*)")

#: The shapes of citation codes in free text (docs, docstrings, field docs): a token of this shape
#: that is not in :data:`SOURCES` is a citation nobody can follow.
CODE_SHAPE = re.compile(
    r"(?<![\w/.-])(RT\d{2}|INST\d{2}|HA\d{2,3}(?:-\d{2,3})?|HA-[A-Z]+(?:-[A-Z]+)*|MCD?:|DZ?:(?=[a-z@])|"
    r"YAMLCFG|VCAPI|TASKDAPI|APPX|HELM|RTO|PLR|PTA|MS-[A-Z]+|ADEPLOY|HDK-[A-Z]+)(?![\w-])"
)


def code_of(reference: str) -> str:
    """The code a reference starts with ('' when it does not start like a code)."""
    m = _CODE.match(reference.strip())
    return m.group(1) if m else ""


def unresolved(citation: str) -> List[str]:
    """The references of ``citation`` (``;``-separated) that do not start with a known code."""
    out: List[str] = []
    for piece in citation.split(";"):
        piece = piece.strip()
        if not piece or code_of(piece) not in SOURCES:
            out.append(piece or "(empty reference)")
    return out


def unknown_codes_in_text(text: str) -> List[str]:
    """Code-shaped tokens in free text that are not in :data:`SOURCES`."""
    return sorted({m.group(1) for m in CODE_SHAPE.finditer(text) if m.group(1) not in SOURCES})


def sources_markdown(header: str) -> str:
    """docs/sources.md: every code, what it names and where to read it."""
    out = [header, "# Sources\n\n"]
    out.append(
        "Every rule, plan note and document of this project cites its facts with the codes below "
        "(for example `RT04 Table 3`, `INST05 step 9`, `MC:@v7.3.0 component/taskd/...`). A citation "
        "is one or more references separated by `;`; each starts with a code and may go on with a "
        "table, step or path. `PROJECT` marks a limit or estimate this project chose itself, "
        "`PROFILE` a value from your profile. The table is `resumable/sources.py`; a test fails when "
        "a citation does not resolve against it.\n\n"
    )
    out.append("| code | document | where | chapter | release read |\n|---|---|---|---|---|\n")
    for s in _ROWS:
        out.append(
            "| `%s` | %s | %s | %s | %s |\n"
            % (s.code, s.title, s.where.replace("|", "\\|"), s.chapter.replace("|", "\\|"), s.release)
        )
    return "".join(out)
