# gnnrepro: `make figures` runs the main job, `make test` the tests. Both set up what they need.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
DEPS   := $(VENV)/.stamp-deps
BUILD  := $(VENV)/.stamp-build
CSRC   := $(shell find csrc -name '*.cpp' -o -name '*.cu' -o -name '*.h') setup.py
THREADS ?= 2
BENCH_OUT ?= benchmarks/results/sampling-cpu.json
TRAIN_OUT ?= benchmarks/results/train-cpu.json

.PHONY: setup test test-gpu asan check-cuda check-cuda-if-nvcc check-cuda-link gpu-session \
        gpu-session-dry-run gpu-notebooks gpu-notebooks-dry-run gpu-notebook-wheels gpu-wheels \
        gpu-pyg-wheels \
        bench-sampling bench-end-to-end figures report lab clean peers

setup: $(BUILD) $(DEPS)

$(PY):
	$(PYTHON) -m venv $(VENV)

# torch first: a local wheel where pip's find-links has one (no multi-GB CUDA download on CPU
# machines), else the registry's. Then, side by side (make -j): the package with every extra
# (mostly unpacking: disk) and what compiles against that torch (CPU): the extension, and
# check-cuda where nvcc exists.
TORCH  := $(VENV)/.stamp-torch
$(TORCH): | $(PY)
	$(PIP) install -q --upgrade pip setuptools wheel ninja numpy pybind11
	$(PIP) install -q --no-index --no-deps 'torch>=2.3' 2>/dev/null || true
	$(PIP) install -q 'torch>=2.3'
	touch $@

$(DEPS): pyproject.toml $(TORCH)
	GNNREPRO_NO_EXT=1 $(PIP) install -q --no-build-isolation -e '.[all]'
	touch $@

# Rebuild the extension in place (ninja, incremental) when a C++/CUDA source changes.
$(BUILD): $(TORCH) $(CSRC)
	$(PY) setup.py -q build_ext --inplace
	touch $@

# The peers, each in an environment of its own under .peers/ (gnnrepro.peers): GraphBolt needs
# the torch its native library was built for (2.2.1, with its CUDA libraries: about 5 GB);
# PyG's torch-scatter and torch-sparse are built from source against our torch (about 11
# minutes on 2 cores). Optional: benchmarks list a peer that is not set up as not run.
PEERS_DIR ?= .peers
peers: $(PEERS_DIR)/graphbolt/.stamp $(PEERS_DIR)/pyg/.stamp

$(PEERS_DIR)/graphbolt/.stamp:
	$(PYTHON) -m venv $(PEERS_DIR)/graphbolt
	$(PEERS_DIR)/graphbolt/bin/pip install -q torch==2.2.1 dgl==2.1.0 torchdata==0.7.1 \
	    'numpy<2' 'pandas<2.3' pydantic pyyaml tqdm
	$(PEERS_DIR)/graphbolt/bin/python -c "import dgl.graphbolt"
	touch $@

$(PEERS_DIR)/pyg/.stamp: $(DEPS)
	$(PYTHON) -m venv $(PEERS_DIR)/pyg
	$(PEERS_DIR)/pyg/bin/pip install -q "torch==$$($(PY) -c 'import torch; print(torch.__version__.split("+")[0])')" \
	    torch_geometric==2.8.1 numpy scipy pandas tqdm setuptools wheel
	MAX_JOBS=$(THREADS) $(PEERS_DIR)/pyg/bin/pip install -q --no-build-isolation \
	    torch-scatter==2.1.2 torch-sparse==0.6.18
	$(PEERS_DIR)/pyg/bin/python -c "import torch_geometric, torch_sparse"
	touch $@

# The tests in two parts: the files whose tests bound a run in seconds and check what it did by
# then (a hang's silence, a step or store past its time limit, a peer's heartbeats) run alone
# (SERIAL_TESTS); the others on TEST_WORKERS pytest-xdist workers, a file per worker (in one
# process the suite keeps about one of 2 cores busy).
TEST_WORKERS ?= 2
SERIAL_TESTS := $(addprefix tests/test_,$(addsuffix .py,supervisor gpu_session bench_storage \
  peers))

# The tests' hundreds of Python processes each import the package: its bytecode is compiled
# first, once (where PYTHONDONTWRITEBYTECODE is set, as on this project's machines, no process
# would write it, and each would compile every module it imports again).
test:
	$(MAKE) --no-print-directory -j3 setup check-cuda-if-nvcc
	$(PY) -m compileall -q -j 2 gnnrepro benchmarks
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=15 \
	  $(addprefix --ignore=,$(SERIAL_TESTS)) tests
	$(PY) -m pytest -q --durations=10 $(SERIAL_TESTS)

test-gpu: setup
	$(PY) -m pytest -q tests/gpu

# ---- CUDA sources, compiled without a GPU ----------------------------------------------------
# check-cuda compiles every .cu to an object file (no link) with nvcc against the installed
# torch's headers, for each architecture in CUDA_ARCHS, warnings as errors for our code (torch's
# and CUDA's headers are -isystem). A CPU torch ships the ATen/c10 CUDA headers except one
# generated file, supplied by csrc/cuda_shim (after torch's own on the include path).
NVCC       ?= $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard $(CUDA_HOME)/bin/nvcc /usr/local/cuda/bin/nvcc))
# The GPU architectures every CUDA build targets, listed once (csrc/cuda_archs.txt, which
# setup.py reads too): compute capabilities as torch writes them (8.0 9.0).
CUDA_ARCHS ?= $(shell cat csrc/cuda_archs.txt)
SM_ARCHS   := $(subst .,,$(CUDA_ARCHS))
CU_SRC     := $(shell find csrc -name '*.cu')
CU_HEADERS := $(shell find csrc -name '*.h' -o -name '*.cuh')
# One object per source and architecture list, each its own target: under make -j the sources
# compile side by side and beside the extension's build, not one after another on one core.
CHECK_CUDA := build/check-cuda/sm$(subst $(eval) ,-,$(SM_ARCHS))
CU_OBJ     := $(patsubst %.cu,$(CHECK_CUDA)/%.o,$(CU_SRC))
NVCC_FLAGS  = -std=c++20 -O3 --threads 2 --expt-relaxed-constexpr -Xcompiler -fPIC -DGNNREPRO_WITH_CUDA \
  -DTORCH_API_INCLUDE_EXTENSION_H -DTORCH_EXTENSION_NAME=_C \
  $(foreach a,$(SM_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
  --Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror \
  $$($(PY) -c 'import sysconfig; from torch.utils.cpp_extension import include_paths; \
    print(" ".join("-isystem " + p for p in include_paths() + [sysconfig.get_paths()["include"]]))') \
  -Xcompiler -idirafter,csrc/cuda_shim

check-cuda: $(CU_OBJ)
	@echo "check-cuda: $(words $(CU_SRC)) CUDA sources compiled (sm: $(SM_ARCHS))"

$(CHECK_CUDA)/%.o: %.cu $(CU_HEADERS) $(TORCH)
	@test -n "$(NVCC)" || { echo "check-cuda: nvcc not found (set NVCC= or CUDA_HOME=)"; exit 1; }
	@mkdir -p $(@D)
	@echo "nvcc -c $< (sm: $(SM_ARCHS))"; start=$$(date +%s); \
	  $(NVCC) $(NVCC_FLAGS) -c $< -o $@ && echo "nvcc: $< compiled in $$(( $$(date +%s) - start )) s"

# make test runs check-cuda where nvcc exists, and says so where it does not. Its torch first, in
# this make: under make -j the sub-make must not build it a second time beside this one. It
# compiles for the oldest architecture only (half the time on CI's 2 cores; `make check-cuda`
# compiles for each one, as the GPU build does).
check-cuda-if-nvcc: $(TORCH)
	@if [ -n "$(NVCC)" ]; then $(MAKE) --no-print-directory check-cuda \
	    CUDA_ARCHS="$(firstword $(CUDA_ARCHS))"; \
	else echo "check-cuda: SKIPPED, no nvcc on this machine (the CUDA sources were not compiled)"; fi

# Not in CI (a CUDA torch is ~5.5 GB): build the whole extension against a CUDA build of torch
# in its own venv ($(CUDA_VENV)) and import it, checking that every op has a CPU and a CUDA kernel
# registered. Needs nvcc; no GPU (nothing runs on one).
CUDA_VENV  ?= .venv-cuda
CUDA_TORCH ?= torch==2.14.1
CUDA_TOOLKIT ?= $(firstword $(wildcard $(CUDA_HOME) /usr/local/cuda))
EMPTY :=
TORCH_ARCHS  ?= $(subst $(EMPTY) $(EMPTY),;,$(strip $(CUDA_ARCHS)))
$(CUDA_VENV)/.stamp-torch:
	$(PYTHON) -m venv $(CUDA_VENV)
	$(CUDA_VENV)/bin/pip install -q --upgrade pip setuptools wheel ninja numpy pybind11
	$(CUDA_VENV)/bin/pip install -q '$(CUDA_TORCH)'
	touch $@

check-cuda-link: $(CUDA_VENV)/.stamp-torch
	@test -n "$(NVCC)" || { echo "check-cuda-link: nvcc not found"; exit 1; }
	rm -rf build/cuda-link && mkdir -p build/cuda-link
	cp -r gnnrepro build/cuda-link/ && rm -f build/cuda-link/gnnrepro/_C*.so
	FORCE_CUDA=1 CUDA_HOME=$(CUDA_TOOLKIT) TORCH_CUDA_ARCH_LIST="$(TORCH_ARCHS)" \
	  MAX_JOBS=2 $(CUDA_VENV)/bin/python setup.py -q build_ext --build-temp build/cuda-link-obj \
	  --build-lib build/cuda-link
	cd build/cuda-link && ../../$(CUDA_VENV)/bin/python -c 'import torch; from gnnrepro import _ops; \
	  has = torch._C._dispatch_has_kernel_for_dispatch_key; \
	  missing = [(op, key) for op in ("gnnrepro::sample_fused", "gnnrepro::gather_rows") \
	             for key in ("CPU", "CUDA") if not has(op, key)]; \
	  assert _ops.cuda_compiled() and not missing, missing; \
	  print("check-cuda-link: torch", torch.__version__, "- CPU and CUDA kernels registered for", \
	        "sample_fused and gather_rows")'

# The GPU session (benchmarks/gpu_session.py): on a machine with a GPU as it comes (its own
# Python and CUDA torch, nvcc, no network, no venv of ours), in one command bounded to under 7
# minutes: build for this GPU, tests/gpu with CUDA required, compute-sanitizer memcheck and
# racecheck, the paper's 1-GPU measurements at products-sim 1.0, the host-to-device ceiling.
# Every result goes under OUT as soon as its step ends. Modules that Python lacks come from
# $(GPU_WHEELS) (make gpu-wheels fills it here, to be copied along). GPU_SESSION_ARGS passes
# more options (--reuse-build, --scale, --deadline-s); `make gpu-session-dry-run` rehearses it
# on the CPU (make test runs the same).
GPU_PYTHON ?= python3
GPU_WHEELS ?= build/gpu-wheels
GPU_WHEELS_PY ?= 3.12
OUT ?= build/gpu-session-out
GPU_SESSION_ARGS ?=
gpu-session:
	$(GPU_PYTHON) benchmarks/gpu_session.py --out $(OUT) --wheels $(GPU_WHEELS) $(GPU_SESSION_ARGS)

gpu-session-dry-run: setup
	$(PY) benchmarks/gpu_session.py --dry-run --out $(OUT) $(GPU_SESSION_ARGS)

# The notebooks themselves on a lent GPU machine (benchmarks/gpu_notebooks.py): 01-05 through
# papermill with notebooks/params/gpu.yaml into figures/gpu-<machine>/, packed into
# OUT/figures.tar.gz (store it with tar xzf OUT/figures.tar.gz -C figures/). papermill, its
# kernel and their dependencies come from $(GPU_NOTEBOOK_WHEELS) (make gpu-notebook-wheels
# here, 19 MB, carried along); only what the machine lacks is installed.
# `make gpu-notebooks-dry-run` rehearses it on the CPU with DGL hidden (into
# build/gpu-notebooks-dry-run/). GPU_NOTEBOOK_ARGS passes more options (--notebooks,
# --reuse-build, --commit, --deadline-s).
GPU_NOTEBOOK_WHEELS ?= build/gpu-notebook-wheels
GPU_NOTEBOOK_ARGS ?=
gpu-notebooks:
	$(GPU_PYTHON) benchmarks/gpu_notebooks.py --out $(OUT) --wheels $(GPU_NOTEBOOK_WHEELS) \
	  $(GPU_NOTEBOOK_ARGS)

gpu-notebooks-dry-run: setup
	$(PY) benchmarks/gpu_notebooks.py --dry-run --out $(OUT) $(GPU_NOTEBOOK_ARGS)

gpu-notebook-wheels: $(DEPS)
	$(PIP) download -q --only-binary=:all: --python-version $(GPU_WHEELS_PY) \
	  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
	  --platform manylinux_2_28_x86_64 -d $(GPU_NOTEBOOK_WHEELS) papermill ipykernel
	@du -sh $(GPU_NOTEBOOK_WHEELS)

gpu-wheels: $(DEPS)
	$(PIP) download -q --only-binary=:all: --python-version $(GPU_WHEELS_PY) \
	  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d $(GPU_WHEELS) \
	  pytest setuptools ninja numpy tqdm psutil pandas pyyaml
	@du -sh $(GPU_WHEELS)

# The GPU session's PyG step (benchmarks/gpu_pyg_peer.py) needs torch-sparse for PyG's
# NeighborLoader, built against the lent machines' torch: too slow to build there, so it is
# built here (CPU ops only), with torch-scatter which it imports, in a venv of their Python and
# torch (about 5 GB, 16 minutes on 2 cores), and put with scipy's wheel in $(GPU_PYG_WHEELS);
# carry that folder along (38 MB).
GPU_TORCH ?= 2.11.0
GPU_WHEELS_PYTHON ?= python$(GPU_WHEELS_PY)
GPU_PYG_WHEELS ?= build/gpu-pyg-wheels
GPU_PYG_BUILD := build/gpu-pyg-build
gpu-pyg-wheels: $(DEPS)
	rm -rf $(GPU_PYG_BUILD) && $(GPU_WHEELS_PYTHON) -m venv $(GPU_PYG_BUILD)/venv
	$(GPU_PYG_BUILD)/venv/bin/pip install -q torch==$(GPU_TORCH) numpy setuptools wheel
	$(PIP) download -q --no-deps --no-binary=:all: --no-build-isolation -d $(GPU_PYG_BUILD) \
	  torch_sparse==0.6.18 torch_scatter==2.1.2
	for package in torch_sparse-0.6.18 torch_scatter-2.1.2; do \
	  tar xzf $(GPU_PYG_BUILD)/$$package.tar.gz -C $(GPU_PYG_BUILD) && \
	  FORCE_ONLY_CPU=1 $(GPU_PYG_BUILD)/venv/bin/python tools/build_wheel_parallel.py \
	    $(GPU_PYG_BUILD)/$$package $(GPU_PYG_WHEELS) $(THREADS) || exit 1; done
	$(PIP) download -q --no-deps --only-binary=:all: --python-version $(GPU_WHEELS_PY) \
	  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d $(GPU_PYG_WHEELS) scipy
	$(GPU_PYG_BUILD)/venv/bin/pip install -q --no-deps --find-links $(GPU_PYG_WHEELS) \
	  torch_sparse torch_scatter scipy
	$(GPU_PYG_BUILD)/venv/bin/python -c "import torch, torch_sparse; torch.ops.torch_sparse.neighbor_sample"
	rm -rf $(GPU_PYG_BUILD)
	@du -sh $(GPU_PYG_WHEELS)

# The C++ op tests once more against an AddressSanitizer + UBSan build of the extension.
# Sanitizer reports go to build/asan/report.* (pytest's capture would swallow them) and are
# printed if the run fails.
ASAN_TESTS := tests/test_sampler.py tests/test_sampler_errors.py tests/test_sampler_adversarial.py \
              tests/test_parallel_relabel.py \
              tests/test_features.py tests/gpu/test_sample_errors.py tests/test_disk_store.py
asan: setup
	rm -rf build/asan && mkdir -p build/asan
	cp -r gnnrepro build/asan/ && rm -f build/asan/gnnrepro/_C*.so
	GNNREPRO_ASAN=1 FORCE_CPU=1 $(PY) setup.py -q build_ext --build-temp build/asan-obj --build-lib build/asan
	cd build/asan && LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
	  ASAN_OPTIONS=detect_leaks=0:log_path=$(CURDIR)/build/asan/report \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(CURDIR)/build/asan/report \
	  PYTHONPATH=$(CURDIR)/build/asan $(abspath $(PY)) -m pytest -q -p no:cacheprovider \
	  $(addprefix $(CURDIR)/,$(ASAN_TESTS)) \
	  || { cat $(CURDIR)/build/asan/report.* 2>/dev/null | grep -v '^    #[1-9][0-9]'; exit 1; }
	@if ls build/asan/report.* >/dev/null 2>&1; then cat build/asan/report.*; exit 1; fi
	@echo "asan: no sanitizer reports"

bench-sampling: setup
	$(PY) -m gnnrepro bench sampling --dataset products-sim --scale 0.25 --fanouts 15,10,5 \
	  --batch-size 1024 --batches 50 --threads $(THREADS) --out $(BENCH_OUT)

bench-end-to-end: setup
	$(PY) -m gnnrepro bench end-to-end --dataset products-sim --scale 0.05 --fanouts 15,10,5 \
	  --batch-size 1024 --pipelines dgl,fused,fused+pinned --epochs 3 --threads $(THREADS) \
	  --repeats 6 --timeline-batches 4 --out $(TRAIN_OUT)

# The paper's tables and figures: every notebook through papermill with $(PARAMS), cells logged
# as they run; executed notebooks go to build/notebooks/, figures and tables to figures/ (other
# PARAMS: to figures/<figures_name>/ or figures/<dataset>-<scale>-<hash>/), results to results/
# (stored results are reused for identical parameters and code; FORCE=1 measures again;
# REDRAW=1 draws from the newest stored result of the same parameters even where older code
# measured it, e.g. after a change to the plots, and each figure names both commits; in a fresh
# checkout, from the results committed beside the figures in their folder's data/).
# papermill's cell progress bar is off: --log-output already shows every cell as it runs, and the
# long loops inside the notebooks report their own progress.
PARAMS    ?= notebooks/params/default.yaml
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
NB_OUT    := build/notebooks
FORCE     ?=
FORCE_ARG := $(if $(filter 1 true yes,$(FORCE)),-p force True,)
REDRAW    ?=
REDRAW_ARG := $(if $(filter 1 true yes,$(REDRAW)),-p redraw True,)

# One run id for all notebooks: force=True re-measures a run that several notebooks share once.
figures: setup
	@mkdir -p $(NB_OUT)
	@set -e; export GNNREPRO_FIGURES_RUN="figures-$$(date +%s)-$$$$"; for nb in $(NOTEBOOKS); do \
	  echo "== $$nb ($(PARAMS))"; \
	  $(PY) -m papermill --log-output --no-progress-bar -f $(PARAMS) -p out_dir "$(CURDIR)" \
	    $(FORCE_ARG) $(REDRAW_ARG) $$nb $(NB_OUT)/$$(basename $$nb); \
	done
	@echo "figures and tables: figures/ (other PARAMS: a folder in it, named by figures_name or" \
	  "by the parameters); executed notebooks: $(NB_OUT)/ (make report renders them)"

# The executed notebooks (from make figures) as HTML in build/report/.
report:
	@ls $(NB_OUT)/*.ipynb >/dev/null 2>&1 || \
	  { echo "no executed notebooks in $(NB_OUT)/: run make figures first"; exit 1; }
	$(VENV)/bin/jupyter nbconvert --to html --output-dir build/report $(NB_OUT)/*.ipynb

# JupyterLab at the repository root: notebooks/ holds the source notebooks, build/notebooks/ the
# executed ones once make figures has run. As root (containers, cloud VMs) Jupyter refuses to
# start without --allow-root; this target adds it and says so. LAB_ARGS passes more options
# (e.g. LAB_ARGS="--no-browser --port 8890").
LAB_ARGS ?=
lab: setup
	@ls $(NB_OUT)/*.ipynb >/dev/null 2>&1 && echo "executed notebooks: $(NB_OUT)/" || \
	  echo "no executed notebooks yet (make figures writes them to $(NB_OUT)/); sources: notebooks/"
	@if [ "$$(id -u)" = 0 ]; then echo "running as root: starting JupyterLab with --allow-root"; \
	  root_flag=--allow-root; fi; \
	exec $(VENV)/bin/jupyter lab --notebook-dir="$(CURDIR)" $$root_flag $(LAB_ARGS)

clean:
	rm -rf build gnnrepro/_C*.so $(VENV)/.stamp-*
