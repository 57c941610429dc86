"""Build a torch C++ extension package's wheel with its extensions compiled in parallel:
`python tools/build_wheel_parallel.py SRC_DIR OUT_DIR JOBS` (run by the Python whose torch it is
built against; `make gpu-pyg-wheels`).

setuptools builds a package's extensions one after another unless `build_ext -j N`; torch's
ninja backend writes one build.ninja per build folder, which extensions built in parallel would
share, so it is switched off here (each extension then compiles its own files in its own call).
"""
from __future__ import annotations

import os
import runpy
import sys

import torch.utils.cpp_extension as cpp_extension


def main(argv: list[str]) -> None:
    """Run SRC_DIR/setup.py: build_ext -j JOBS, then bdist_wheel into OUT_DIR."""
    if len(argv) != 3 or not argv[2].isdigit():
        raise SystemExit(__doc__.split("\n\n")[0])
    source, out, jobs = os.path.abspath(argv[0]), os.path.abspath(argv[1]), argv[2]
    cpp_extension.is_ninja_available = lambda: False
    os.chdir(source)
    sys.path.insert(0, source)
    sys.argv = ["setup.py", "-q", "build_ext", "-j", jobs, "bdist_wheel", "-d", out]
    runpy.run_path("setup.py", run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
