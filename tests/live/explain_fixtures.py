"""Real error messages for the China / Windows / Ascend / download entries of ``suanli explain``,
and ordinary log lines from the same environments that must match nothing.

Every message below was copied from a public issue thread or log (the source is named next to
it); only user names and paths were left as they were printed. They differ from the ``samples``
in ``errors.toml`` so the entries are tested on text they were not written from.
"""

from __future__ import annotations

#: (entry id, real message). One entry may appear several times.
REAL_MESSAGES: list[tuple[str, str]] = [
    # pytorch/pytorch#131662, xorbitsai/inference#1428, zai-org/ChatGLM3#69
    (
        "windows-dll-not-found",
        "OSError: [WinError 126] The specified module could not be found. Error loading "
        '"c:\\Users\\Noor\\anaconda3\\envs\\DL\\Lib\\site-packages\\torch\\lib\\fbgemm.dll" '
        "or one of its dependencies.",
    ),
    (
        "windows-dll-not-found",
        "OSError: [WinError 126] 找不到指定的模块。 Error loading "
        '"D:\\anaconda\\Lib\\site-packages\\torch\\lib\\shm.dll" or one of its dependencies.',
    ),
    (
        "windows-dll-not-found",
        "OSError: [WinError 126] 找不到指定的模块。 Error loading "
        '"D:\\python\\lib\\site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll" or one of its '
        "dependencies.",
    ),
    # 666ghj/BettaFish#428, RVC-Project/Retrieval-based-Voice-Conversion-WebUI#2019
    (
        "windows-dll-init-failed",
        "OSError: [WinError 1114] 动态链接库(DLL)初始化例程失败。 Error loading "
        '"C:\\Program Files\\Python311\\Lib\\site-packages\\torch\\lib\\c10.dll" or one of its '
        "dependencies.",
    ),
    (
        "windows-dll-init-failed",
        "OSError: [WinError 1114] A dynamic link library (DLL) initialization routine failed. "
        'Error loading "C:\\Users\\Toby\\Desktop\\RVC\\runtime\\lib\\site-packages\\torch\\lib'
        '\\cublas64_11.dll" or one of its dependencies.',
    ),
    # pytorch/pytorch#7070, pytorch/pytorch#28363, pytorch/pytorch#4518
    ("windows-dll-load-failed-import", "ImportError: DLL load failed: 找不到指定的模块。"),
    (
        "windows-dll-load-failed-import",
        "ImportError: DLL load failed: The specified module could not be found.",
    ),
    (
        "windows-dll-load-failed-import",
        "ImportError: DLL load failed while importing _C: the specified module could not be found",
    ),
    # zbf1991/WeCLIP#5, thu-ml/tianshou#297, prophesier/diff-svc#24
    (
        "windows-paging-file-too-small",
        "OSError: [WinError 1455] 页面文件太小，无法完成操作。 Error loading "
        '"D:\\Anaconda3\\envs\\wssam\\lib\\site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll" '
        "or one of its dependencies.",
    ),
    (
        "windows-paging-file-too-small",
        "OSError: [WinError 1455] The paging file is too small for this operation to complete",
    ),
    # The wording Python's multiprocessing raises (Lib/multiprocessing/spawn.py).
    (
        "windows-spawn-without-main-guard",
        "        An attempt has been made to start a new process before the",
    ),
    # torch.load on a CPU-only wheel (the text of torch/serialization.py)
    (
        "cuda-checkpoint-on-cpu-only",
        "RuntimeError: Attempting to deserialize object on a CUDA device but "
        "torch.cuda.is_available() is False. If you are running on a CPU-only machine, please "
        "use torch.load with map_location=torch.device('cpu') to map your storages to the CPU.",
    ),
    # The CPU wheel, already covered by an existing entry: still recognised.
    ("torch-not-compiled-with-cuda", "AssertionError: Torch not compiled with CUDA enabled"),
    # hiyouga/LlamaFactory#3796, open-mmlab/mmcv#3203
    (
        "ascend-ez9999-operator",
        "[E OpParamMaker.cpp:273] call aclnnEqScalar failed, detail:EZ9999: Inner Error!",
    ),
    ("ascend-ez9999-operator", "EZ9999: Inner Error!"),
    # llama.cpp CANN backend log, vllm-ascend#2182
    (
        "ascend-ee9999-runtime",
        "EE9999: [PID: 2750884] 2024-08-30-16:20:38.196.490 Stream destroy failed, stream is "
        "not in current ctx, stream_id=2.[FUNC:StreamDestroy][FILE:api_impl.cc][LINE:1032]",
    ),
    ("ascend-ee9999-runtime", "EE9999: Inner Error!"),
    # Ascend/pytorch#54 (lmdeploy on 910B2), a 910B distributed barrier log
    (
        "ascend-ei9999-device-task",
        "worker-1: EI9999: Inner Error!",
    ),
    # graph engine's ErrorManager fallback text; a TorchAir compile failure
    ("ascend-e19999-graph-engine", "E19999: Inner Error!"),
    (
        "ascend-e19999-graph-engine",
        "Graph engine process graph failed: E19999: Inner Error! Output shape is still unknown "
        "after shape inference. shape = [-1].",
    ),
    # vllm-project/vllm-ascend#6935
    (
        "ascend-err99999-unknown",
        "(EngineCore_DP0 pid=96) [ERROR] 2026-03-02-15:44:05 (PID:1, Device:-1, RankID:-1) "
        "ERR99999 UNKNOWN applicaiton exception",
    ),
    # vLLM-Ascend and torch_npu OOM reports
    (
        "ascend-npu-out-of-memory",
        "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 43.24 GiB total "
        "capacity; 40.39 GiB already allocated; 764.23 MiB free)",
    ),
    (
        "ascend-npu-out-of-memory",
        "torch_npu.memory: NPU out of memory. Tried to allocate 524.00 MiB",
    ),
    # Ascend/pytorch#90
    (
        "ascend-aclnn-call-failed",
        "RuntimeError: copy_d2d_baseformat_opapi:build/CMakeFiles/torch_npu.dir/"
        "compiler_depend.ts:88 NPU function error: call aclnnInplaceCopy failed, error code is "
        "561103",
    ),
    # vllm-project/vllm-ascend#486, vllm-project/afd-plugin#229
    (
        "ascend-hccl-socket-timeout",
        "Communication_Error_Get_Socket(EI0006)",
    ),
    # hiyouga/LlamaFactory#3839
    (
        "ascend-hccp-init-failed",
        "EJ0001: 2024-05-21-11:57:54.167.645 Failed to initialize the HCCP process. Reason: "
        "Maybe the last training process is running.",
    ),
    # transformers' offline message
    (
        "hf-hub-cannot-connect",
        "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't "
        "find it in the cached files and it looks like bert-base-chinese is not the path to a "
        "directory containing a file named config.json.",
    ),
    (
        "hf-hub-cannot-connect",
        "OSError: We couldn't connect to 'https://hf-mirror.com' to load this file, couldn't "
        "find it in the cached files and it looks like THUDM/chatglm3-6b is not the path to a "
        "directory containing a file named tokenizer_config.json.",
    ),
    # huggingface_hub over requests
    (
        "hf-hub-timeout",
        "ReadTimeoutError: HTTPSConnectionPool(host='huggingface.co', port=443): Read timed out. "
        "(read timeout=10)",
    ),
    (
        "hf-hub-timeout",
        'requests.exceptions.ConnectionError: (MaxRetryError("HTTPSConnectionPool('
        "host='huggingface.co', port=443): Max retries exceeded with url: "
        "/bert-base-uncased/resolve/main/config.json (Caused by NewConnectionError('<urllib3."
        "connection.HTTPSConnection object at 0x7f3c>: Failed to establish a new connection: "
        "[Errno 101] Network is unreachable'))\"), '(Request ID: 52e1)')",
    ),
    (
        "hf-local-entry-not-found",
        "LocalEntryNotFoundError: An error happened while trying to locate the file on the Hub "
        "and we cannot find the requested files in the local cache. Please check your "
        "connection and try again or make sure your Internet connection is on.",
    ),
    # pip on a slow link
    (
        "pip-read-timeout",
        "ReadTimeoutError: HTTPSConnectionPool(host='files.pythonhosted.org', port=443): Read "
        "timed out.",
    ),
    (
        "pip-read-timeout",
        "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) "
        "after connection broken by 'ConnectTimeoutError(<pip._vendor.urllib3.connection."
        "HTTPSConnection object at 0x000001F>, 'Connection to pypi.org timed out. (connect "
        "timeout=15)')': /simple/numpy/",
    ),
    (
        "pip-no-matching-distribution",
        "ERROR: Could not find a version that satisfies the requirement torch (from versions: "
        "none)",
    ),
    ("pip-no-matching-distribution", "ERROR: No matching distribution found for torch"),
]

#: Ordinary lines from Windows shells, Chinese-locale tools, Ascend machines, pip and the Hub:
#: none of them is an error, so none may match.
CHINA_ORDINARY_LINES: list[str] = [
    "Looking in indexes: https://pypi.tuna.tsinghua.edu.cn/simple",
    "Collecting torch==2.5.1",
    "  Downloading https://pypi.tuna.tsinghua.edu.cn/packages/torch-2.5.1-cp310-cp310-win_amd64"
    ".whl (2.6 MB)",
    "Successfully installed torch-npu-2.5.1 pyyaml-6.0.2",
    "Requirement already satisfied: torch_npu in /usr/local/lib/python3.10/site-packages",
    "Fetching 4 files: 100%|██████████| 4/4 [00:12<00:00,  3.05s/it]",
    "model-00001-of-00004.safetensors: 100%|██████████| 3.96G/3.96G [01:21<00:00, 48.6MB/s]",
    "Downloading shards: 100%|██████████| 2/2 [00:03<00:00,  1.62s/it] (HF_ENDPOINT=https://hf-mirror.com)",
    "正在加载模型权重，请稍候……",
    "训练完成，模型已保存到 D:\\output\\checkpoint-500",
    'C:\\Users\\lin>python -c "import torch; print(torch.__version__)"',
    "2.5.1+cu124",
    "torch.npu.is_available(): True, device_count: 8",
    "| npu-smi 24.1.rc1                 Version: 24.1.rc1                                     |",
    "| 0     910B3               | OK            | 101.8       43                0    / 0     |",
    "[INFO] 2024-10-21-10:41:58 HCCL_CONNECT_TIMEOUT=1200, HCCL_EXEC_TIMEOUT=1800",
    "source /usr/local/Ascend/ascend-toolkit/set_env.sh",
    "[W compiler_depend.ts:133] Warning: Device do not support double dtype now, dtype cast "
    "repalce with float.",
    "ERR_CODE=0 all ranks finished",
    "No running processes found in NPU 0",
    "HCU     Temp     AvgPwr     Perf     PwrCap     VRAM%      HCU%      Mode",
    "虚拟内存设置为 32768 MB，num_workers=2",
]
