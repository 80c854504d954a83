"""Pin the public API: adding or removing a name is a deliberate change."""

import suanli


def test_exported_members() -> None:
    assert sorted(suanli.__all__) == sorted(
        [
            "GPU",
            "SUPPORTED_MODEL_TYPES",
            "AttentionSpec",
            "CatalogError",
            "LoadedModel",
            "MLPSpec",
            "ModelConfigError",
            "ModelSourceError",
            "ModelSpec",
            "ModuleParams",
            "MoESpec",
            "NormSpec",
            "ParamCount",
            "Preset",
            "__version__",
            "count_params",
            "find_gpu",
            "load_catalog",
            "load_model",
            "model_from_module",
            "module_params",
            "presets",
            "Fit",
            "InferWork",
            "MemoryBreakdown",
            "Overheads",
            "Parallelism",
            "TrainWork",
            "fit_inference",
            "fit_training",
            "inference_memory",
            "training_memory",
            "spec_from_config",
        ]
    )
    for name in suanli.__all__:
        assert hasattr(suanli, name)
