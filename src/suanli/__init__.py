"""suanli (算力): plan and diagnose GPU compute for AI.

The public API is what ``__all__`` lists: the answer functions with their request and answer
types (the same answers the CLI and the web page render; docs/api.md), and the estimators and
model readers underneath. Importing it imports no torch, numpy or NVML; the live answers (doctor,
bench, verify, live readings) import them when called.
"""

import importlib
import logging
from typing import TYPE_CHECKING, Any

from suanli.catalog import GPU, CatalogError, find_gpu, load_catalog
from suanli.estimate.breakdown import MemoryBreakdown
from suanli.estimate.fitting import Fit, fit_inference, fit_training
from suanli.estimate.inference_memory import inference_memory
from suanli.estimate.memory import training_memory
from suanli.estimate.workload import InferWork, Overheads, Parallelism, TrainWork
from suanli.models.config import SUPPORTED_MODEL_TYPES, ModelConfigError, spec_from_config
from suanli.models.module import ModuleParams, module_params
from suanli.models.params import ParamCount, count_params
from suanli.models.presets import Preset, presets
from suanli.models.resolve import LoadedModel, ModelSourceError, model_from_module
from suanli.models.spec import AttentionSpec, MLPSpec, ModelSpec, MoESpec, NormSpec

# A library logs, the application decides where it goes (the logging HOWTO's rule): without a
# handler of the caller's, suanli's records are dropped rather than printed by logging's fallback.
logging.getLogger("suanli").addHandler(logging.NullHandler())

# The answers load on first use (PEP 562), so that ``suanli <command>`` imports only its own.
_LAZY: dict[str, tuple[str, str]] = {
    "SCHEMA_VERSION": ("suanli.answers.base", "SCHEMA_VERSION"),
    "Answer": ("suanli.answers.base", "Answer"),
    "BenchAnswer": ("suanli.answers.bench", "BenchAnswer"),
    "BenchRequest": ("suanli.answers.bench", "BenchRequest"),
    "bench": ("suanli.answers.bench", "bench"),
    "CapacityPlan": ("suanli.answers.capacity_result", "CapacityPlan"),
    "CapacityRequest": ("suanli.answers.capacity", "CapacityRequest"),
    "CapacitySimulation": ("suanli.answers.capacity_result", "CapacitySimulation"),
    "capacity": ("suanli.answers.capacity", "capacity"),
    "CardAnswer": ("suanli.answers.card", "CardAnswer"),
    "CardRequest": ("suanli.answers.card", "CardRequest"),
    "card": ("suanli.answers.card", "card"),
    "CompareAnswer": ("suanli.answers.compare", "CompareAnswer"),
    "CompareRequest": ("suanli.answers.compare", "CompareRequest"),
    "compare": ("suanli.answers.compare", "compare"),
    "CostAnswer": ("suanli.answers.cost", "CostAnswer"),
    "CostRequest": ("suanli.answers.cost", "CostRequest"),
    "cost": ("suanli.answers.cost", "cost"),
    "DoctorAnswer": ("suanli.answers.doctor", "DoctorAnswer"),
    "doctor": ("suanli.answers.doctor", "doctor"),
    "DoctorRunAnswer": ("suanli.answers.doctor_run", "DoctorRunAnswer"),
    "DoctorRunRequest": ("suanli.answers.doctor_run", "DoctorRunRequest"),
    "doctor_run": ("suanli.answers.doctor_run", "doctor_run"),
    "ExplainAnswer": ("suanli.answers.explain", "ExplainAnswer"),
    "ExplainRequest": ("suanli.answers.explain", "ExplainRequest"),
    "explain": ("suanli.answers.explain", "explain"),
    "FrameworksAnswer": ("suanli.answers.frameworks", "FrameworksAnswer"),
    "framework_list": ("suanli.answers.frameworks", "framework_list"),
    "FitAnswer": ("suanli.answers.fit", "FitAnswer"),
    "FitRequest": ("suanli.answers.fit", "FitRequest"),
    "fit": ("suanli.answers.fit", "fit"),
    "GpuAnswer": ("suanli.answers.gpus", "GpuAnswer"),
    "GpuListAnswer": ("suanli.answers.gpus", "GpuListAnswer"),
    "GpuListRequest": ("suanli.answers.gpus", "GpuListRequest"),
    "GpuRequest": ("suanli.answers.gpus", "GpuRequest"),
    "gpu_detail": ("suanli.answers.gpus", "gpu_detail"),
    "gpu_list": ("suanli.answers.gpus", "gpu_list"),
    "LiveAnswer": ("suanli.answers.live", "LiveAnswer"),
    "live_report": ("suanli.answers.live", "live_report"),
    "MemoryAnswer": ("suanli.answers.memory", "MemoryAnswer"),
    "MemoryRequest": ("suanli.answers.memory", "MemoryRequest"),
    "memory": ("suanli.answers.memory", "memory"),
    "ModelAnswer": ("suanli.answers.model", "ModelAnswer"),
    "ModelRequest": ("suanli.answers.model", "ModelRequest"),
    "model": ("suanli.answers.model", "model"),
    # The resolver that also knows the text-to-image pipelines' names (models/ cannot).
    "load_model": ("suanli.answers.model_source", "load_model"),
    "preset_rows": ("suanli.answers.model", "preset_rows"),
    "ImagePerfAnswer": ("suanli.answers.image", "ImagePerfAnswer"),
    "ImageRequest": ("suanli.answers.image", "ImageRequest"),
    "generate_image": ("suanli.answers.image", "generate_image"),
    "InferPerfAnswer": ("suanli.answers.perf", "InferPerfAnswer"),
    "PerfRequest": ("suanli.answers.perf", "PerfRequest"),
    "TrainPerfAnswer": ("suanli.answers.perf", "TrainPerfAnswer"),
    "perf": ("suanli.answers.perf", "perf"),
    "PlanAnswer": ("suanli.answers.plan", "PlanAnswer"),
    "PlanRequest": ("suanli.answers.plan", "PlanRequest"),
    "RenderingPlanAnswer": ("suanli.answers.plan", "RenderingPlanAnswer"),
    "plan_gpus": ("suanli.answers.plan", "plan"),
    "WorkRequest": ("suanli.answers.request", "WorkRequest"),
    "ScalingAnswer": ("suanli.answers.scaling", "ScalingAnswer"),
    "ScalingRequest": ("suanli.answers.scaling", "ScalingRequest"),
    "doctor_scaling": ("suanli.answers.scaling", "scaling"),
    "NodesScalingAnswer": ("suanli.answers.scaling", "NodesScalingAnswer"),
    "NodesScalingRequest": ("suanli.answers.scaling", "NodesScalingRequest"),
    "doctor_scaling_nodes": ("suanli.answers.scaling", "scaling_nodes"),
    "StencilAnswer": ("suanli.answers.stencil", "StencilAnswer"),
    "StencilRequest": ("suanli.answers.stencil", "StencilRequest"),
    "stencil": ("suanli.answers.stencil", "stencil"),
    "VerifyAnswer": ("suanli.answers.verify", "VerifyAnswer"),
    "VerifyRequest": ("suanli.answers.verify", "VerifyRequest"),
    "verify": ("suanli.answers.verify", "verify"),
}

if TYPE_CHECKING:
    from suanli.answers.base import SCHEMA_VERSION, Answer
    from suanli.answers.bench import BenchAnswer, BenchRequest, bench
    from suanli.answers.capacity import CapacityRequest, capacity
    from suanli.answers.capacity_result import CapacityPlan, CapacitySimulation
    from suanli.answers.card import CardAnswer, CardRequest, card
    from suanli.answers.compare import CompareAnswer, CompareRequest, compare
    from suanli.answers.cost import CostAnswer, CostRequest, cost
    from suanli.answers.doctor import DoctorAnswer, doctor
    from suanli.answers.doctor_run import DoctorRunAnswer, DoctorRunRequest, doctor_run
    from suanli.answers.explain import ExplainAnswer, ExplainRequest, explain
    from suanli.answers.fit import FitAnswer, FitRequest, fit
    from suanli.answers.frameworks import FrameworksAnswer, framework_list
    from suanli.answers.gpus import (
        GpuAnswer,
        GpuListAnswer,
        GpuListRequest,
        GpuRequest,
        gpu_detail,
        gpu_list,
    )
    from suanli.answers.image import ImagePerfAnswer, ImageRequest, generate_image
    from suanli.answers.live import LiveAnswer, live_report
    from suanli.answers.memory import MemoryAnswer, MemoryRequest, memory
    from suanli.answers.model import ModelAnswer, ModelRequest, model, preset_rows
    from suanli.answers.model_source import load_model
    from suanli.answers.perf import InferPerfAnswer, PerfRequest, TrainPerfAnswer, perf
    from suanli.answers.plan import PlanAnswer, PlanRequest, RenderingPlanAnswer
    from suanli.answers.plan import plan as plan_gpus
    from suanli.answers.request import WorkRequest
    from suanli.answers.scaling import (
        NodesScalingAnswer,
        NodesScalingRequest,
        ScalingAnswer,
        ScalingRequest,
    )
    from suanli.answers.scaling import scaling as doctor_scaling
    from suanli.answers.scaling import scaling_nodes as doctor_scaling_nodes
    from suanli.answers.stencil import StencilAnswer, StencilRequest, stencil
    from suanli.answers.verify import VerifyAnswer, VerifyRequest, verify

__version__ = "0.1.0"

__all__ = [
    "GPU",
    "SCHEMA_VERSION",
    "SUPPORTED_MODEL_TYPES",
    "Answer",
    "AttentionSpec",
    "BenchAnswer",
    "BenchRequest",
    "CapacityPlan",
    "CapacityRequest",
    "CapacitySimulation",
    "CardAnswer",
    "CardRequest",
    "CatalogError",
    "CompareAnswer",
    "CompareRequest",
    "CostAnswer",
    "CostRequest",
    "DoctorAnswer",
    "DoctorRunAnswer",
    "DoctorRunRequest",
    "ExplainAnswer",
    "ExplainRequest",
    "Fit",
    "FitAnswer",
    "FitRequest",
    "FrameworksAnswer",
    "GpuAnswer",
    "GpuListAnswer",
    "GpuListRequest",
    "GpuRequest",
    "ImagePerfAnswer",
    "ImageRequest",
    "InferPerfAnswer",
    "InferWork",
    "LiveAnswer",
    "LoadedModel",
    "MLPSpec",
    "MemoryAnswer",
    "MemoryBreakdown",
    "MemoryRequest",
    "MoESpec",
    "ModelAnswer",
    "ModelConfigError",
    "ModelRequest",
    "ModelSourceError",
    "ModelSpec",
    "ModuleParams",
    "NodesScalingAnswer",
    "NodesScalingRequest",
    "NormSpec",
    "Overheads",
    "Parallelism",
    "ParamCount",
    "PerfRequest",
    "PlanAnswer",
    "PlanRequest",
    "Preset",
    "RenderingPlanAnswer",
    "ScalingAnswer",
    "ScalingRequest",
    "StencilAnswer",
    "StencilRequest",
    "TrainPerfAnswer",
    "TrainWork",
    "VerifyAnswer",
    "VerifyRequest",
    "WorkRequest",
    "__version__",
    "bench",
    "capacity",
    "card",
    "compare",
    "cost",
    "count_params",
    "doctor",
    "doctor_run",
    "doctor_scaling",
    "doctor_scaling_nodes",
    "explain",
    "find_gpu",
    "fit",
    "fit_inference",
    "fit_training",
    "framework_list",
    "generate_image",
    "gpu_detail",
    "gpu_list",
    "inference_memory",
    "live_report",
    "load_catalog",
    "load_model",
    "memory",
    "model",
    "model_from_module",
    "module_params",
    "perf",
    "plan_gpus",
    "preset_rows",
    "presets",
    "spec_from_config",
    "stencil",
    "training_memory",
    "verify",
]


def __getattr__(name: str) -> Any:
    """Load an answer function or type the first time it is asked for."""
    if name not in _LAZY:
        raise AttributeError(f"module 'suanli' has no attribute {name!r}")
    module, attr = _LAZY[name]
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
