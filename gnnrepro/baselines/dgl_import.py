"""Import DGL 2.1.0 next to a newer PyTorch.

DGL 2.1.0 is the last PyPI release. Its GraphBolt C++ library ships only for torch <= 2.2.1, and
`dgl/graphbolt/__init__.py` (imported by `dgl.distributed`, itself imported by `dgl`) also imports
pydantic, so a plain `import dgl` fails with a newer torch: with pydantic missing it fails on
`import pydantic`, otherwise on loading `libgraphbolt_pytorch_<torch version>.so`. DGL's core
(graph structure, `dgl.sampling`, `dgl.to_block`, `dgl.dataloading.NeighborSampler`) does not use
GraphBolt, so we stand an empty package in for `dgl.graphbolt` and import the rest unchanged.
`dgl/utils` falls back to `setuptools.extern.packaging` only when `packaging` is missing, and
aliasing that to `packaging` could not help then, so no workaround is needed for it.
"""
from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import types
import warnings

__all__ = ["HIDE_DGL", "dgl_available", "dgl_missing", "import_dgl", "set_dgl_threads"]

#: Set to 1, this process and its children behave as on a machine without DGL (the lent GPU
#: machines have none): how the GPU notebook session is rehearsed here.
HIDE_DGL = "GNNREPRO_HIDE_DGL"
_INSTALL_HINT = "pip install dgl==2.1.0 torchdata==0.9.0 pydantic"
_dgl: types.ModuleType | None = None


def _drop_dgl_modules() -> None:
    """Remove `dgl` and every `dgl.*` entry (half-initialised after a failed import)."""
    for name in [n for n in sys.modules if n == "dgl" or n.startswith("dgl.")]:
        del sys.modules[name]


def _import_fresh() -> types.ModuleType:
    """`import dgl` with the PyTorch backend and without DGL's first-run side effects.

    Without DGLBACKEND (and without ~/.dgl/config.json) DGL prints a notice and writes that
    config file; setting DGLBACKEND=pytorch for the import avoids both and pins the backend.
    DGL reads the variable only at import time, so the caller's value is restored afterwards.
    """
    old = os.environ.get("DGLBACKEND")
    os.environ["DGLBACKEND"] = "pytorch"
    try:
        with warnings.catch_warnings():
            # torchdata 0.9 warns on import that its datapipes are deprecated (GraphBolt only).
            warnings.filterwarnings("ignore", message=r"(?s).*'datapipes', 'dataloader2'")
            return importlib.import_module("dgl")
    finally:
        if old is None:
            del os.environ["DGLBACKEND"]
        else:
            os.environ["DGLBACKEND"] = old


def _stub_graphbolt() -> None:
    """Register an empty package as `dgl.graphbolt` (only used inside dgl.distributed functions)."""
    stub = types.ModuleType("dgl.graphbolt", "Empty stand-in: GraphBolt needs torch <= 2.2.1.")
    stub.__path__ = []
    stub.__spec__ = importlib.machinery.ModuleSpec("dgl.graphbolt", None, is_package=True)
    sys.modules["dgl.graphbolt"] = stub


def import_dgl() -> types.ModuleType:
    """Return the `dgl` module, importing it (with a GraphBolt stand-in if needed) on first use.

    Raises ImportError with install instructions if DGL is absent or cannot be imported.
    """
    global _dgl
    if os.environ.get(HIDE_DGL) == "1":
        raise ImportError(f"DGL is hidden from this process ({HIDE_DGL}=1)")
    if _dgl is not None:
        return _dgl
    if "dgl" not in sys.modules and importlib.util.find_spec("dgl") is None:
        raise ImportError(f"DGL is not installed; install it with `{_INSTALL_HINT}`")
    try:
        dgl = _import_fresh()
    except Exception as plain_error:  # GraphBolt raises FileNotFoundError, not ImportError
        _drop_dgl_modules()
        _stub_graphbolt()
        try:
            dgl = _import_fresh()
        except Exception as error:
            _drop_dgl_modules()
            raise ImportError(
                f"cannot import DGL, neither plainly ({plain_error!r}) nor with dgl.graphbolt "
                f"stubbed out ({error!r}); DGL 2.1.0 is expected: `{_INSTALL_HINT}`") from error
    if dgl.backend.backend_name != "pytorch":
        raise ImportError(f"DGL was already imported with the {dgl.backend.backend_name!r} "
                          "backend; gnnrepro needs DGLBACKEND=pytorch")
    _dgl = dgl
    return dgl


def dgl_available() -> bool:
    """Whether `import_dgl()` succeeds."""
    return dgl_missing() is None


def dgl_missing() -> str | None:
    """Why DGL cannot be used here (None: it can), for rows listed as not run."""
    try:
        import_dgl()
    except ImportError as error:
        return str(error)
    return None


def set_dgl_threads(threads: int) -> None:
    """Set DGL's OpenMP thread count for the calling thread (the samplers also do this per call,
    from `torch.get_num_threads()`)."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")
    dgl = import_dgl()
    dgl.utils.set_num_threads(threads)
    if dgl.utils.get_num_threads() != threads:
        raise RuntimeError(f"DGL kept {dgl.utils.get_num_threads()} OpenMP threads, "
                           f"asked for {threads}")
