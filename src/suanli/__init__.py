"""suanli (算力): plan and diagnose GPU compute for AI.

The public API is what ``__all__`` lists; everything here is pure and imports no torch.
"""

from suanli.catalog import GPU, CatalogError, find_gpu, load_catalog
from suanli.estimate.memory import (
    Fit,
    MemoryBreakdown,
    fit_inference,
    fit_training,
    inference_memory,
    training_memory,
)
from suanli.estimate.workload import InferWork, Overheads, Parallelism, TrainWork
from suanli.models.config import SUPPORTED_MODEL_TYPES, ModelConfigError, spec_from_config
from suanli.models.module import ModuleParams, module_params
from suanli.models.params import ParamCount, count_params
from suanli.models.presets import Preset, presets
from suanli.models.resolve import LoadedModel, ModelSourceError, load_model, model_from_module
from suanli.models.spec import AttentionSpec, MLPSpec, ModelSpec, MoESpec, NormSpec

__version__ = "0.1.0"

__all__ = [
    "GPU",
    "SUPPORTED_MODEL_TYPES",
    "AttentionSpec",
    "CatalogError",
    "Fit",
    "InferWork",
    "LoadedModel",
    "MLPSpec",
    "MemoryBreakdown",
    "MoESpec",
    "ModelConfigError",
    "ModelSourceError",
    "ModelSpec",
    "ModuleParams",
    "NormSpec",
    "Overheads",
    "Parallelism",
    "ParamCount",
    "Preset",
    "TrainWork",
    "__version__",
    "count_params",
    "find_gpu",
    "fit_inference",
    "fit_training",
    "inference_memory",
    "load_catalog",
    "load_model",
    "model_from_module",
    "module_params",
    "presets",
    "spec_from_config",
    "training_memory",
]
