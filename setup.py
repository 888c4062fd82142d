"""Build the compiled layer of g10core.

Every ``src/g10core/**/*.pyx`` becomes one extension module, named by its path
(``src/g10core/workload/_traceidx.pyx`` -> ``g10core.workload._traceidx``): a compiled module
moved into a subpackage is built where it lies.
All Cython directives live in ``DIRECTIVES`` below.  ``G10_CYTHON_DEBUG=1``
switches on bounds/overflow checks (CI runs the unit tests once on that build).
On x86-64 the build uses the POPCNT instruction (every x86-64 CPU since 2008; numpy >= 2.4's
wheels require it too); ``G10_NO_POPCNT=1`` builds without it.
"""
import os
import platform
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, find_namespace_packages, setup

HERE = Path(__file__).parent
DEBUG = os.environ.get("G10_CYTHON_DEBUG", "0") == "1"

# One table of directives for every module.
DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "initializedcheck": False,
    "cdivision": True,
    "nonecheck": False,
    "overflowcheck": False,
    "embedsignature": True,
    "binding": False,
}
if DEBUG:
    DIRECTIVES.update(
        boundscheck=True,
        wraparound=True,
        initializedcheck=True,
        # nonecheck stays off: it needs the GIL, and the hot loops run without it
        overflowcheck=True,
        cdivision=False,
    )

COMPILE_ARGS = ["-std=c++17", "-O0", "-g"] if DEBUG else ["-std=c++17", "-O3"]
if platform.machine().lower() in ("x86_64", "amd64") and os.environ.get("G10_NO_POPCNT", "0") != "1":
    # gcc turns g10_popcount64's bit steps into one instruction: the tree prefetcher and the
    # batch's block maps count bits at every fault (Belady SENet154 -2 %)
    COMPILE_ARGS.append("-mpopcnt")
DEFINES = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
if DEBUG:
    DEFINES.append(("G10_DEBUG", "1"))


def extensions():
    exts = []
    src = HERE / "src"
    for pyx in sorted((src / "g10core").rglob("*.pyx")):
        name = ".".join(pyx.relative_to(src).with_suffix("").parts)
        exts.append(
            Extension(
                name,
                [str(pyx.relative_to(HERE))],
                include_dirs=[numpy.get_include(), "include", "src/g10core"],
                language="c++",
                extra_compile_args=COMPILE_ARGS,
                define_macros=DEFINES,
            )
        )
    return exts


def _mode_changed():
    """Regenerate the C++ when switching between debug and release builds."""
    stamp = HERE / "build" / "g10_cython_mode"
    mode = "debug" if DEBUG else "release"
    old = stamp.read_text() if stamp.exists() else None
    stamp.parent.mkdir(exist_ok=True)
    stamp.write_text(mode)
    return old != mode


# The package's folders: every package below src/ (as a src layout), and the shipped traces, which
# the project's layout keeps in the top-level traces/ and every wheel and sdist installs as the
# package data g10core/workload/traces/ (g10core.workload.tracestore finds them either way).
TRACES_PACKAGE = "g10core.workload.traces"
PACKAGE_DIR = {"": "src", TRACES_PACKAGE: "traces"}
PACKAGES = find_namespace_packages("src", include=["g10core", "g10core.*"], exclude=["*.__pycache__"]) + [TRACES_PACKAGE]

setup(
    package_dir=PACKAGE_DIR,
    packages=PACKAGES,
    ext_modules=cythonize(
        extensions(),
        compiler_directives=DIRECTIVES,
        include_path=["src"],
        annotate=os.environ.get("G10_CYTHON_ANNOTATE", "0") == "1",
        force=_mode_changed(),
    ),
)
