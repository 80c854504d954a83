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
            "generate_image",
            "ImagePerfAnswer",
            "ImageRequest",
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
            "SCHEMA_VERSION",
            "Answer",
            "WorkRequest",
            "MemoryRequest",
            "MemoryAnswer",
            "memory",
            "PerfRequest",
            "TrainPerfAnswer",
            "InferPerfAnswer",
            "perf",
            "PlanRequest",
            "PlanAnswer",
            "RenderingPlanAnswer",
            "plan_gpus",
            "FitRequest",
            "FitAnswer",
            "fit",
            "FrameworksAnswer",
            "framework_list",
            "CardRequest",
            "CardAnswer",
            "card",
            "CompareRequest",
            "CompareAnswer",
            "compare",
            "CostRequest",
            "CostAnswer",
            "cost",
            "CapacityRequest",
            "CapacitySimulation",
            "CapacityPlan",
            "capacity",
            "StencilRequest",
            "StencilAnswer",
            "stencil",
            "ModelRequest",
            "ModelAnswer",
            "model",
            "preset_rows",
            "GpuListRequest",
            "GpuListAnswer",
            "gpu_list",
            "GpuRequest",
            "GpuAnswer",
            "gpu_detail",
            "LiveAnswer",
            "live_report",
            "DoctorAnswer",
            "doctor",
            "DoctorRunRequest",
            "DoctorRunAnswer",
            "doctor_run",
            "ScalingRequest",
            "ScalingAnswer",
            "doctor_scaling",
            "NodesScalingRequest",
            "NodesScalingAnswer",
            "doctor_scaling_nodes",
            "BenchRequest",
            "BenchAnswer",
            "bench",
            "VerifyRequest",
            "VerifyAnswer",
            "verify",
            "ExplainRequest",
            "ExplainAnswer",
            "explain",
        ]
    )
    for name in suanli.__all__:
        assert hasattr(suanli, name)


def test_answers_load_on_first_use_and_are_the_answer_modules_own() -> None:
    import subprocess
    import sys

    code = (
        "import sys, suanli; "
        "assert not any(m.startswith('suanli.answers.') for m in sys.modules), 'eager'; "
        "f = suanli.memory; import suanli.answers.memory as m; assert f is m.memory; "
        "assert suanli.plan_gpus.__module__ == 'suanli.answers.plan'; "
        "heavy = [x for x in ('torch', 'numpy', 'pynvml', 'click', 'fastapi') "
        "if x in sys.modules]; "
        "assert heavy == [], heavy"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_the_python_api_answers_like_the_cli() -> None:
    answer = suanli.memory(
        suanli.MemoryRequest("llama-3.1-8b", suanli.WorkRequest(task="qlora"), gpu="4090")
    )
    assert isinstance(answer, suanli.MemoryAnswer) and answer.fit is not None
    # The answer is the estimator's number, seen through the lower-level API.
    spec = suanli.load_model("llama-3.1-8b").spec
    expected = suanli.training_memory(spec, suanli.TrainWork(task="qlora"))
    assert answer.total_bytes == round(expected.total_bytes)
    # QLoRA stores the 8B base in NF4 (about 4.5 bits per weight with its scales), not bf16.
    assert 3.5e9 < answer.breakdown["weights"] < 6.5e9
    assert answer.fit.fits == (answer.total_bytes <= answer.fit.usable_bytes)
    doc = answer.to_json()
    assert (
        doc["schema_version"] == suanli.SCHEMA_VERSION and doc["total_bytes"] == answer.total_bytes
    )
