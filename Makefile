# RED Searcher — developer entry points. `make run` and `make test` work on a fresh machine:
# both create .venv and install what they need (Python >= 3.11, pip and gcc required).

PY ?= python3
VENV = .venv
BIN = $(VENV)/bin
STAMP = $(VENV)/.installed
# The browser tests drive Debian's Chromium through Playwright (never `playwright install`).
CHROMIUM ?= /usr/bin/chromium
BROWSER_STAMP = $(VENV)/.browser

# Runs write their SQLite database (and bench output) here, not under the home directory.
export RED_DATA_DIR ?= $(CURDIR)/.redsearch-data
# The demo stops planning after this many steps (the engine default is 36) so that the
# bundled 270M model finishes in a few minutes on 2 cores.
SAMPLE_STEPS ?= 8

# llama-cpp-python compiles llama.cpp when it is installed. A native build (-march=native) on a
# CPU that reports AMX uses AMX kernels, which fault (SIGILL) where a virtual machine does not
# really enable AMX; so on x86-64 the wheel is built for a portable baseline (AVX2, no AVX-512 or
# AMX), once per machine, into a wheelhouse keyed by version and flags, and installed from there
# (pip's own wheel cache would hand back a natively built wheel whatever the flags).
# GPU workers (docs/models.md, "GPU workers"): override LLAMA_CMAKE_ARGS to build with CUDA
# (needs the CUDA toolkit's nvcc), keeping the portable CPU flags; on a fresh machine:
#   make install LLAMA_CMAKE_ARGS='$(LLAMA_CPU_CMAKE_ARGS) -DGGML_CUDA=on'
# The wheel lands in its own folder of the wheelhouse (keyed by the flags), beside the CPU one.
LLAMA_VERSION = 0.3.36
LLAMA_CPU_CMAKE_ARGS = $(if $(filter x86_64,$(shell uname -m)),-DGGML_NATIVE=OFF -DGGML_AVX=ON \
	-DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
LLAMA_CMAKE_ARGS ?= $(LLAMA_CPU_CMAKE_ARGS)
WHEELHOUSE ?= $(HOME)/.cache/redsearch/wheels
LLAMA_WHEELS = $(WHEELHOUSE)/llama-$(LLAMA_VERSION)-$(shell echo '$(LLAMA_CMAKE_ARGS)' | cksum | cut -d' ' -f1)

PYTEST = $(BIN)/pytest
PYTEST_ARGS ?=
BENCH_JSON = $(RED_DATA_DIR)/bench.json

.DEFAULT_GOAL := help
.PHONY: help install browser run demo test test-fast bench chaos soak load lint clean gpu-check

help:
	@echo "make run        redsearch up: Redis, worker, bot and the browser playground (embedded defaults)"
	@echo "make demo       research the sample question in the terminal (bundled corpus and model)"
	@echo "make test       all tests (PYTEST_ARGS=... passes options to pytest)"
	@echo "make test-fast  tests without the bundled GGUF model (-m 'not gguf')"
	@echo "make bench      goal tree vs monolithic agent, equal steps and equal answers, N swept (ends: both ratios at N=32)"
	@echo "make chaos      workers on PostgreSQL under kills, a Redis restart, a DB cut, a 429 storm"
	@echo "make soak       an hour of steady runs under kills, a Redis restart, a DB cut (SOAK_S=3600)"
	@echo "make load       ack latency, click-to-progress and runs in flight per worker"
	@echo "make lint       ruff + mypy"
	@echo "make gpu-check  build llama-cpp-python with CUDA; the default model's tokens/s on GPU against CPU"
	@echo "make browser    Debian's chromium for the browser tests (make test does this)"
	@echo "make clean      remove .venv, caches and .redsearch-data"

install: $(STAMP)

# Re-install whenever pyproject.toml changes; only the first install on a machine compiles
# llama-cpp-python (see LLAMA_CMAKE_ARGS above).
$(STAMP): pyproject.toml
	@$(PY) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "error: Python >= 3.11 needed; '$(PY)' is missing or older. Run e.g. 'make PY=python3.11 $(MAKECMDGOALS)'" >&2; exit 1; }
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	@if ! ls "$(LLAMA_WHEELS)"/llama_cpp_python-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1; then \
		echo "building llama-cpp-python $(LLAMA_VERSION) once for this machine (~7 min on 2 cores)…"; \
		mkdir -p "$(LLAMA_WHEELS)" && CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip wheel \
			--no-deps --no-cache-dir -w "$(LLAMA_WHEELS)" llama-cpp-python==$(LLAMA_VERSION); fi
	$(BIN)/python -m pip install --find-links "$(LLAMA_WHEELS)" -e '.[dev]'
	touch $@

# Chromium for the browser tests: Debian's package, installed with apt-get when it is missing
# (as root, or through sudo). Where that is impossible the browser tests skip and say why.
browser: $(BROWSER_STAMP)

$(BROWSER_STAMP): $(STAMP)
	@if [ ! -x "$(CHROMIUM)" ] && command -v apt-get >/dev/null; then \
		if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null; then SUDO="sudo -n"; \
		else SUDO=none; fi; \
		if [ "$$SUDO" = none ]; then echo "note: not root and no sudo: cannot install chromium"; \
		else echo "installing Debian's chromium for the browser tests…"; \
			$$SUDO apt-get update -qq && \
			$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-zenhei >/dev/null || \
			echo "note: chromium could not be installed; the browser tests will skip"; fi; \
	fi
	@if [ -x "$(CHROMIUM)" ]; then touch $@; \
	else echo "note: $(CHROMIUM) missing; the browser tests will skip"; fi

# `make run` serves the playground at http://127.0.0.1:$(PORT) until Ctrl-C. MCP="COMMAND…" (or
# a URL) adds an MCP server to search, e.g. make run MCP="$(BIN)/python -m tests.mcp_wiki_server".
PORT ?= 8080
MCP ?=
run: $(STAMP)
	RED_BUDGET_STEPS=$(SAMPLE_STEPS) $(BIN)/redsearch up --port $(PORT) $(if $(MCP),--mcp "$(MCP)")

demo: $(STAMP)
	RED_BUDGET_STEPS=$(SAMPLE_STEPS) $(BIN)/redsearch sample

test: $(STAMP) $(BROWSER_STAMP)
	$(PYTEST) $(PYTEST_ARGS)

test-fast: $(STAMP) $(BROWSER_STAMP)
	$(PYTEST) -m "not gguf" $(PYTEST_ARGS)

# The benchmark: the goal tree against the naive monolithic agent doing equal work (exactly N
# steps each, N = 4, 8, 16, 32) on a generated corpus with a deterministic tier, and at equal
# answers (facts of the corpus each answer states, cited), then a smoke row on the bundled
# model; ends with "token ratio at N=32: …" and "equal-answer ratio at N=32: …". BENCH_ARGS passes options,
# e.g. make bench BENCH_ARGS="--quick" (N = 2, 4, no smoke row).
bench: $(STAMP)
	@mkdir -p "$(RED_DATA_DIR)"
	$(BIN)/python -m redsearch.harness.bench --json "$(BENCH_JSON)" $(BENCH_ARGS)

# The chaos and load suites (docs/reliability.md): local Redis and PostgreSQL only. They need a
# PostgreSQL server at SUITE_DATABASE_URL that lets its role create databases; each suite
# creates its own database and drops it at the end. CHAOS_ARGS / LOAD_ARGS pass options
# (e.g. CHAOS_ARGS="--seed 7 --kills 5").
SUITE_DATABASE_URL ?= postgresql+asyncpg://postgres@127.0.0.1:5432/postgres
SOAK_S ?= 3600
chaos: $(STAMP)
	$(BIN)/python -m redsearch.harness.chaos --db-server "$(SUITE_DATABASE_URL)" $(CHAOS_ARGS)

soak: $(STAMP)
	$(BIN)/python -m redsearch.harness.chaos --db-server "$(SUITE_DATABASE_URL)" --soak $(SOAK_S) $(CHAOS_ARGS)

load: $(STAMP)
	$(BIN)/python -m redsearch.harness.load --db-server "$(SUITE_DATABASE_URL)" $(LOAD_ARGS)

# The GPU check (a machine with an NVIDIA GPU and the CUDA toolkit): builds llama-cpp-python with
# CUDA once into the wheelhouse (for the GPUs present: LLAMA_CUDA_CMAKE_ARGS), unpacks it into
# GPU_LLAMA (.venv keeps its CPU build, so `make test` is unchanged) and prints the default
# model's tokens/s with every layer on the GPU against none, in one run. Without CUDA it says
# so in one line and fails. GPU_CHECK_ARGS passes options (--tokens N, --model FILE.gguf);
# LLAMA_SOURCE=path/to/llama_cpp_python-$(LLAMA_VERSION).tar.gz builds from a local sdist.
CUDA_HOME ?= /usr/local/cuda
LLAMA_CUDA_CMAKE_ARGS ?= $(LLAMA_CPU_CMAKE_ARGS) -DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=native
LLAMA_CUDA_WHEELS = $(WHEELHOUSE)/llama-$(LLAMA_VERSION)-$(shell echo '$(LLAMA_CUDA_CMAKE_ARGS)' | cksum | cut -d' ' -f1)
LLAMA_SOURCE ?= llama-cpp-python==$(LLAMA_VERSION)
GPU_LLAMA = $(VENV)/gpu-llama
GPU_CHECK_ARGS ?=
gpu-check: $(STAMP)
	@$(BIN)/python -m redsearch.harness.gpu_check --preflight --cuda-bin "$(CUDA_HOME)/bin"
	@if ! ls "$(LLAMA_CUDA_WHEELS)"/llama_cpp_python-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1; then \
		echo "building llama-cpp-python $(LLAMA_VERSION) with CUDA once for this machine…"; \
		mkdir -p "$(LLAMA_CUDA_WHEELS)" && PATH="$$PATH:$(CUDA_HOME)/bin" \
			CMAKE_ARGS="$(LLAMA_CUDA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL="$$(nproc)" \
			$(BIN)/python -m pip wheel --no-deps --no-cache-dir -w "$(LLAMA_CUDA_WHEELS)" \
			"$(LLAMA_SOURCE)" || exit 1; fi
	rm -rf "$(GPU_LLAMA)"
	$(BIN)/python -m pip install --quiet --no-deps --target "$(GPU_LLAMA)" \
		"$(LLAMA_CUDA_WHEELS)"/llama_cpp_python-$(LLAMA_VERSION)-*.whl
	PYTHONPATH="$(GPU_LLAMA)" LD_LIBRARY_PATH="$(CUDA_HOME)/lib64:$$LD_LIBRARY_PATH" \
		$(BIN)/python -m redsearch.harness.gpu_check $(GPU_CHECK_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .redsearch-data build dist *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
