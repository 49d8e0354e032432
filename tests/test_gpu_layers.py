"""GPU offload of local GGUF models (issue 46): `RED_<TIER>_GPU_LAYERS` and
`RED_EMBED_GPU_LAYERS` reach llama-cpp-python, llama.cpp's own load log says where the layers
went, `redsearch doctor` and the worker's start log repeat it (a failing doctor line when a GPU
was asked for and none is used), bad values are one line each, and `make gpu-check` says in
one line when there is no CUDA.

The llama.cpp tests load the tiny Gemma 3 270M with the installed build: on a CPU build they
check the CPU side (llama_supports_gpu_offload() is false, so no layer is offloaded whatever
is asked); on a CUDA build the same tests check that every layer went to the GPU."""

from __future__ import annotations

import logging
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from redsearch import doctor_checks
from redsearch.doctor import Check, run_check
from redsearch.harness.gpu_check import cuda_problem
from research_core.errors import SettingsError
from research_core.models.embeddings import (
    CachingEmbedder,
    GGUFEmbedder,
    build_embedder,
    build_similarity,
)
from research_core.models.offload import Offload, gpu_build
from research_core.models.tier_factory import (
    build_tier,
    build_tiers,
    describe_tier,
    offload_of,
    placements,
)
from research_core.search.corpus import CorpusBackend, sample_corpus_dir
from research_core.settings import EmbeddingSettings, Settings
from tests.bad_input import assert_clean
from workers.services import Services

INT32_MAX = 0x7FFFFFFF  # what llama-cpp-python passes to llama.cpp for -1 (all layers)
# llama.cpp's load log on a CUDA machine (src/llama.cpp, src/llama-model.cpp), as it prints it
CUDA_LOG = (
    "llama_model_load_from_file_impl: using device CUDA0 (NVIDIA H100 80GB HBM3) "
    "(0000:01:00.0) - 80718 MiB free\n"
    "load_tensors: offloading output layer to GPU\n"
    "load_tensors: offloading 28 repeating layers to GPU\n"
    "load_tensors: offloaded 29/29 layers to GPU\n"
    "load_tensors:        CUDA0 model buffer size =   934.82 MiB\n")


# -- settings -----------------------------------------------------------------------------------

def test_each_tier_and_the_embedder_read_their_gpu_layers() -> None:
    settings = Settings.from_env({"RED_PLANNER_GPU_LAYERS": "-1",
                                  "RED_EXECUTOR_GPU_LAYERS": "12",
                                  "RED_EMBED_GPU_LAYERS": "-1"})
    layers = {name: tier.gpu_layers for name, tier in settings.tiers.items()}
    assert layers == {"planner": -1, "executor": 12, "reporter": 0}
    assert settings.embedding.gpu_layers == -1
    assert Settings.from_env({}).embedding.gpu_layers == 0


@pytest.mark.parametrize(("key", "raw", "said"), [
    ("RED_PLANNER_GPU_LAYERS", "all", "is not a whole number of layers"),
    ("RED_EXECUTOR_GPU_LAYERS", "1.5", "is not a whole number of layers"),
    ("RED_REPORTER_GPU_LAYERS", "-1 ", None),
    ("RED_EMBED_GPU_LAYERS", "ten", "is not a whole number of layers"),
    ("RED_PLANNER_GPU_LAYERS", "-2", "must be at least -1"),
    ("RED_EMBED_GPU_LAYERS", "100000", "must be at most 10000"),
])
def test_a_bad_layer_count_is_one_line_naming_it(key: str, raw: str, said: str | None) -> None:
    if said is None:  # the edge: -1 (all layers) with stray spaces is accepted
        Settings.from_env({key: raw})
        return
    with pytest.raises(SettingsError) as raised:
        Settings.from_env({key: raw})
    message = str(raised.value)
    assert message.startswith(f"{key}=") and said in message, message
    assert "\n" not in message
    assert_clean(message)


def test_a_tier_with_gpu_layers_says_so_when_described() -> None:
    settings = Settings.from_env({"RED_EXECUTOR_MODEL": "/models/q.gguf",
                                  "RED_EXECUTOR_GPU_LAYERS": "-1",
                                  "RED_PLANNER_GPU_LAYERS": "20"})
    assert describe_tier("executor", settings.tiers["executor"]).endswith(
        "file=/models/q.gguf, on a GPU: all layers")
    assert describe_tier("planner", settings.tiers["planner"]).endswith(", on a GPU: 20 layers")
    assert "GPU" not in describe_tier("reporter", settings.tiers["reporter"])


# -- llama.cpp's report -------------------------------------------------------------------------

def test_llama_cpp_s_load_log_says_where_the_layers_went() -> None:
    on_gpu = Offload.from_log(-1, True, CUDA_LOG)
    assert (on_gpu.on_gpu, on_gpu.gpu_layers, on_gpu.layers) == (True, 29, 29)
    assert on_gpu.describe("RED_PLANNER_GPU_LAYERS") == \
        "GPU (29/29 layers on CUDA0 (NVIDIA H100 80GB HBM3))"
    part = Offload.from_log(10, True, CUDA_LOG.replace("29/29", "10/29"))
    assert part.describe("X").startswith("GPU and CPU (10/29 layers on CUDA0")
    none = Offload.from_log(-1, True, "load_tensors: offloaded 0/29 layers to GPU\n")
    assert none.missed and "llama.cpp offloaded no layer" in none.describe("RED_X_GPU_LAYERS")


def test_a_cpu_build_asked_for_a_gpu_says_why_it_runs_on_the_cpu() -> None:
    cpu = Offload.from_log(-1, False, "load_tensors: layer   0 assigned to device CPU\n")
    assert cpu.missed and not cpu.on_gpu
    said = cpu.describe("RED_PLANNER_GPU_LAYERS")
    assert said.startswith("CPU, though RED_PLANNER_GPU_LAYERS=-1 asks for a GPU")
    assert "llama_supports_gpu_offload() is false" in said and "docs/models.md" in said
    asked_none = Offload.from_log(0, False, "")
    assert not asked_none.missed
    assert asked_none.describe("RED_PLANNER_GPU_LAYERS") == "CPU (RED_PLANNER_GPU_LAYERS=0)"


@pytest.mark.gguf
def test_the_layer_count_reaches_llama_cpp_and_keys_the_loaded_model() -> None:
    from research_core.models.llama_tier import gemma_model_path, load_llama

    path = gemma_model_path()
    cpu = load_llama(path, n_ctx=512, n_threads=1, gpu_layers=0)
    every = load_llama(path, n_ctx=512, n_threads=1, gpu_layers=-1)
    some = load_llama(path, n_ctx=512, n_threads=1, gpu_layers=3)
    assert len({id(cpu.llama), id(every.llama), id(some.llama)}) == 3
    assert load_llama(path, n_ctx=512, n_threads=1, gpu_layers=-1) is every
    assert cpu.llama.model_params.n_gpu_layers == 0
    assert every.llama.model_params.n_gpu_layers == INT32_MAX
    assert some.llama.model_params.n_gpu_layers == 3
    assert (cpu.offload.asked, every.offload.asked, some.offload.asked) == (0, -1, 3)
    assert every.offload.gpu_build is gpu_build()
    assert every.offload.on_gpu is gpu_build()  # a CPU build offloads nothing
    assert not cpu.offload.on_gpu


# -- doctor and the worker's log ----------------------------------------------------------------

def _gemma_env(layers: str) -> dict[str, str]:
    from research_core.models.llama_tier import gemma_model_path

    return {"RED_EXECUTOR_MODEL": gemma_model_path(), "RED_EXECUTOR_GPU_LAYERS": layers,
            "RED_PLANNER_MODEL": "none", "RED_REPORTER_MODEL": "none", "RED_GGUF_CONTEXT": "1024"}


async def _tier_line(layers: str) -> tuple[bool, str]:
    settings = Settings.from_env(_gemma_env(layers))
    check = Check("model executor", lambda: doctor_checks.tier_check("executor", settings, 60))
    result = await run_check(check, 60, [])
    return result.ok, result.detail


@pytest.mark.gguf
async def test_doctor_says_per_tier_whether_the_model_runs_on_the_gpu() -> None:
    ok, line = await _tier_line("0")
    assert ok and "loaded; runs on CPU (RED_EXECUTOR_GPU_LAYERS=0)" in line, line
    ok, line = await _tier_line("-1")
    if gpu_build():
        assert ok and "runs on GPU (" in line, line
    else:  # asked for a GPU, running on the CPU: the one failing line, saying why
        assert not ok, line
        assert "runs on CPU, though RED_EXECUTOR_GPU_LAYERS=-1 asks for a GPU" in line
        assert "\n" not in line


@pytest.mark.gguf
async def test_doctor_says_where_a_gguf_embedder_runs() -> None:
    from research_core.models.llama_tier import gemma_model_path

    settings = Settings(embedding=EmbeddingSettings(model=gemma_model_path(), gguf_context=512))
    line = await doctor_checks.embeddings_check(settings, 60)
    assert "; runs on CPU (RED_EMBED_GPU_LAYERS=0)" in line, line
    embedder = build_embedder(EmbeddingSettings(model=gemma_model_path(), gguf_context=512,
                                                gpu_layers=-1))
    await embedder.embed(["heat pumps"])
    assert isinstance(embedder, CachingEmbedder) and isinstance(embedder.inner, GGUFEmbedder)
    offload = embedder.inner.offload
    assert offload is not None and offload.asked == -1 and offload.on_gpu is gpu_build()


@pytest.mark.gguf
def test_the_tiers_built_at_start_say_where_they_run() -> None:
    settings = Settings.from_env(_gemma_env("-1"))
    tiers = build_tiers(settings)
    found = placements(tiers)
    assert [name for name, _ in found] == ["executor"]  # the others have no model
    assert found[0][1] is offload_of(build_tier("executor", settings))
    assert found[0][1].asked == -1 and found[0][1].on_gpu is gpu_build()


@pytest.mark.gguf
async def test_the_worker_logs_where_each_tier_runs_at_start(
        tmp_path: Path, redis: Any, caplog: pytest.LogCaptureFixture) -> None:
    settings = replace(Settings.from_env(_gemma_env("-1")), data_dir=tmp_path)
    corpus = CorpusBackend.from_folder(sample_corpus_dir())
    with caplog.at_level(logging.INFO, logger="workers.services"):
        services = await Services.load(settings, redis, corpus,
                                       build_similarity(EmbeddingSettings()))
    await services.aclose()
    said = [r for r in caplog.records if r.getMessage().startswith("model executor runs on ")]
    assert len(said) == 1, caplog.text
    if gpu_build():
        assert said[0].levelno == logging.INFO and "runs on GPU (" in said[0].getMessage()
    else:  # asked for every layer on a GPU, running on the CPU: a warning saying why
        assert said[0].levelno == logging.WARNING
        assert "RED_EXECUTOR_GPU_LAYERS=-1 asks for a GPU" in said[0].getMessage()


# -- make gpu-check -----------------------------------------------------------------------------

def test_no_cuda_compiler_or_no_gpu_is_said_plainly(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    said = cuda_problem(cuda_bin=empty, path=str(empty), devices=empty)
    assert said is not None and said.startswith("no CUDA compiler: nvcc is neither on PATH")
    nvcc = empty / "nvcc"
    nvcc.write_text("#!/bin/sh\n")
    nvcc.chmod(0o755)
    said = cuda_problem(cuda_bin=empty, path=str(empty), devices=empty)
    assert said == f"no NVIDIA GPU: no {empty}/nvidia0 device on this machine"
    (empty / "nvidia0").write_text("")
    assert cuda_problem(cuda_bin=empty, path=str(empty), devices=empty) is None


def _gpu_check(*args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": path} if path is not None else None
    return subprocess.run([sys.executable, "-m", "redsearch.harness.gpu_check", *args],
                          capture_output=True, text=True, timeout=300, env=env, check=False)


def test_the_preflight_without_cuda_is_one_line(tmp_path: Path) -> None:
    done = _gpu_check("--preflight", "--cuda-bin", str(tmp_path), path=str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith("gpu-check: error: no CUDA compiler: nvcc"), done.stderr


@pytest.mark.gguf
def test_the_cpu_half_measures_the_tiny_model() -> None:
    from research_core.models.llama_tier import gemma_model_path

    done = _gpu_check("--cpu-only", "--model", gemma_model_path(), "--tokens", "8")
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert line.startswith("CPU  0 GPU layers, ") and "generation " in line, line
    assert float(line.split("generation ")[1].split()[0]) > 0


@pytest.mark.gguf
def test_a_build_without_a_gpu_backend_is_one_clear_line() -> None:
    from research_core.models.llama_tier import gemma_model_path

    if gpu_build():
        pytest.skip("this llama-cpp-python build offloads to a GPU")
    done = _gpu_check("--model", gemma_model_path(), "--tokens", "8")
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu-check: error: llama-cpp-python "), lines
    assert "cannot offload to a GPU (llama_supports_gpu_offload() is false" in lines[0]
