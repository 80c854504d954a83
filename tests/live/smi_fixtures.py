"""Recorded-style outputs of the vendor command-line tools, for fake executables on PATH.

Formats:

- ``nvidia-smi --query-gpu=index,name,memory.total,memory.used,utilization.gpu,temperature.gpu,
  power.draw,driver_version --format=csv,noheader,nounits``: NVIDIA's nvidia-smi documentation
  (the nvidia-smi(1) manual page, ``nvidia-smi --help-query-gpu``): one line per GPU, fields in
  the order asked, separated by ", ", memory in MiB, power in W, ``[N/A]`` for a field the GPU
  does not report (laptop GPUs often leave power.draw ``[N/A]``).
- The plain ``nvidia-smi`` table: the header line of driver 550 (``NVIDIA-SMI ... Driver Version:
  ... CUDA Version: 12.4``), as printed by the R550 drivers.
- ``rocm-smi --showproductname --showmeminfo vram --showuse --showpower --showtemp --json``: the
  ROCm SMI documentation (rocm-smi-lib, ``--json``): one object per ``cardN`` with string values
  keyed by the human-readable field names; VRAM in bytes; ``N/A`` for unsupported sensors (an
  MI300X has no edge sensor).
- ``amd-smi metric --json`` / ``amd-smi static --asic --vram --json``: the AMD SMI CLI
  documentation (ROCm 6.1, "Using AMD SMI Command Line Interface tool"): a list of GPU objects,
  values as ``{"value": ..., "unit": ...}``, VRAM in MB (MiB).
"""

from __future__ import annotations

NVIDIA_SMI_QUERY_CSV = """\
0, NVIDIA GeForce RTX 4090, 24564, 18230, 97, 71, 412.35, 550.54.15
1, NVIDIA GeForce RTX 4090, 24564, 1, 0, 34, 21.08, 550.54.15
2, NVIDIA GeForce RTX 3060 Laptop GPU, 6144, 5, 0, 45, [N/A], 550.54.15
"""

NVIDIA_SMI_TABLE = """\
Tue Mar 12 10:15:02 2024
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GeForce RTX 4090        Off |   00000000:01:00.0 Off |                  Off |
| 30%   71C    P2            412W /  450W |   18230MiB /  24564MiB |     97%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+
"""

#: What nvidia-smi prints (exit status 9) when the kernel module is not loaded.
NVIDIA_SMI_NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n"
)

ROCM_SMI_JSON = """\
{"card0": {"Temperature (Sensor edge) (C)": "N/A", "Temperature (Sensor junction) (C)": "45.0",
"Temperature (Sensor memory) (C)": "38.0", "Current Socket Graphics Package Power (W)": "133.0",
"GPU use (%)": "0", "VRAM Total Memory (B)": "206141652992",
"VRAM Total Used Memory (B)": "296222720", "Card Series": "AMD Instinct MI300X OAM",
"Card Model": "0x74a1", "Card Vendor": "Advanced Micro Devices, Inc. [AMD/ATI]",
"Card SKU": "M3000100", "Subsystem ID": "0x74a1", "Device Rev": "0x00", "Node ID": "2",
"GUID": "28851", "GFX Version": "gfx942"},
"card1": {"Temperature (Sensor edge) (C)": "N/A", "Temperature (Sensor junction) (C)": "47.0",
"Temperature (Sensor memory) (C)": "39.0", "Current Socket Graphics Package Power (W)": "131.0",
"GPU use (%)": "12", "VRAM Total Memory (B)": "206141652992",
"VRAM Total Used Memory (B)": "10737418240", "Card Series": "AMD Instinct MI300X OAM",
"Card Model": "0x74a1", "Card Vendor": "Advanced Micro Devices, Inc. [AMD/ATI]",
"Card SKU": "M3000100", "Subsystem ID": "0x74a1", "Device Rev": "0x00", "Node ID": "3",
"GUID": "45373", "GFX Version": "gfx942"}}
"""

AMD_SMI_METRIC_JSON = """\
[{"gpu": 0,
  "usage": {"gfx_activity": {"value": 87, "unit": "%"}, "umc_activity": {"value": 40, "unit": "%"},
            "mm_activity": "N/A"},
  "power": {"socket_power": {"value": 650, "unit": "W"}, "gfx_voltage": "N/A",
            "power_management": "ENABLED", "throttle_status": "UNTHROTTLED"},
  "temperature": {"edge": "N/A", "hotspot": {"value": 70, "unit": "C"},
                  "mem": {"value": 55, "unit": "C"}},
  "mem_usage": {"total_vram": {"value": 196592, "unit": "MB"},
                "used_vram": {"value": 150000, "unit": "MB"},
                "free_vram": {"value": 46592, "unit": "MB"}}}]
"""

AMD_SMI_STATIC_JSON = """\
[{"gpu": 0,
  "asic": {"market_name": "AMD Instinct MI300X", "vendor_id": "0x1002",
           "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]", "subvendor_id": "0x1002",
           "device_id": "0x74a1", "rev_id": "0x00", "asic_serial": "0xD1CA3A8B2A9C0C4E",
           "oam_id": 0, "num_compute_units": 304, "target_graphics_version": "gfx942"},
  "vram": {"type": "HBM", "vendor": "N/A", "size": {"value": 196592, "unit": "MB"},
           "bit_width": 8192}}]
"""

#: ``/proc/driver/nvidia/version`` of an open-kernel-module 550 driver.
PROC_NVIDIA_VERSION = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  "
    "(dvs-builder@U16-I3-B03-4-3)  Tue Mar  5 22:15:33 UTC 2024\n"
    "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"
)

#: ``/proc/driver/nvidia/gpus/0000:01:00.0/information``.
PROC_NVIDIA_INFORMATION = """\
Model: \t\t NVIDIA GeForce RTX 4090
IRQ:   \t\t 186
GPU UUID: \t GPU-5e1a4f3c-1d2b-4c6e-9f7a-2b3c4d5e6f70
Video BIOS: \t 95.02.18.80.5f
Bus Type: \t PCIe
DMA Size: \t 47 bits
DMA Mask: \t 0x7fffffffffff
Bus Location: \t 0000:01:00.0
Device Minor: \t 0
GPU Excluded:\t No
"""

#: ``npu-smi info`` on an Atlas 800T A2 with 910B3 NPUs (driver 24.1.rc1). Format: Huawei's
#: "npu-smi command reference" (Ascend HDK docs, EDOC1100079287) and outputs published with
#: Ascend setups (e.g. a public CANN 8.0.RC3 / 910B3 environment report): two rows per NPU,
#: a process table after the devices.
NPU_SMI_INFO = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 24.1.rc1                 Version: 24.1.rc1                                             |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B3               | OK            | 101.8       43                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3318 / 65536         |
+===========================+===============+====================================================+
| 1     910B3               | OK            | 99.1        37                0    / 0             |
| 0                         | 0000:C2:00.0  | 87          0    / 0          59784/ 65536         |
+===========================+===============+====================================================+
+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| 1       0                 | 6277          | python                   | 56485                   |
+===========================+===============+====================================================+
"""

#: ``npu-smi info`` on an older Atlas 300T (910, 32 GB HBM, DDR column filled), npu-smi 23.0.3:
#: the layout of the Ascend Python/Sphinx docs' "npu-smi info" example.
NPU_SMI_INFO_910 = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 23.0.3                   Version: 23.0.3                                               |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B                | OK            | 68.5        40                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           2382 / 15038      0    / 32768         |
+===========================+===============+====================================================+
"""

#: ``hy-smi --showproductname --showmeminfo vram --showuse --showpower --showtemp --json`` on a
#: current hyhal (BW-series DCU): rocm-smi-style keys, HCU naming, VRAM in MiB, and the missing
#: commas between the power fields that real hyhal releases print (as published with Hygon
#: monitoring tools that parse it).
HY_SMI_JSON = (
    "WARNING: hyhal init, 2 devices\n"
    '{"card0": {"Card Series": "BW", "Card Vendor": "C-3000 IC Design Co., Ltd.", '
    '"Average Graphics Package Power (W)": "91.0""Average GFX Core Power (W)": "20.0"'
    '"Average Memory Power (W)": "38.0", "Temperature (Sensor edge) (C)": "54.0", '
    '"Temperature (Sensor junction) (C)": "57.0", "HCU use (%)": "12.5", '
    '"HCU memory use (%)": "98", "": "", "": "", "vram Total Memory (MiB)": "65520", '
    '"vram Total Used Memory (MiB)": "64169"}, '
    '"card1": {"Card Series": "BW", "Average Graphics Package Power (W)": "80.0", '
    '"Temperature (Sensor junction) (C)": "52.0", "HCU use (%)": "0.0", '
    '"vram Total Memory (MiB)": "65520", "vram Total Used Memory (MiB)": "1166"}}\n'
)

#: The plain ``hy-smi`` table (DTK 26.04 style, from public Hygon DCU guides): no names, no
#: memory sizes.
HY_SMI_TABLE = """\
================================= System Management Interface ==================================
================================================================================================
HCU     Temp     AvgPwr     Perf     PwrCap     VRAM%      HCU%      Dec%      Enc%      Mode
0       50.0C    80.0W      auto     1000.0W    0%         0.0%      0.0%      0.0%      Normal
1       78.5C    310.0W     auto     1000.0W    64%        97.5%     0.0%      0.0%      Normal
================================================================================================
======================================== End of SMI Log ========================================
"""
