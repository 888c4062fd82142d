"""The g10sim command gives numpy's OpenBLAS one thread (it does no linear algebra; each
idle worker thread would spin ~0.1 s of CPU per process), set before numpy is imported;
a user's own setting stands, and importing the library alone changes nothing."""
import os
import subprocess
import sys


def _run(code: str, **env_extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_the_command_sets_one_blas_thread_before_numpy_loads():
    out = _run("import sys, os\n"
               "import g10core\n"
               "print('numpy' in sys.modules)\n"
               "import g10core.cli\n"
               "print(os.environ.get('OPENBLAS_NUM_THREADS'))")
    assert out.split() == ["False", "1"]


def test_a_users_blas_setting_stands():
    out = _run("import os, g10core.cli; print(os.environ['OPENBLAS_NUM_THREADS'])",
               OPENBLAS_NUM_THREADS="4")
    assert out == "4"


def test_the_library_alone_leaves_blas_alone():
    out = _run("import os, g10core.simulator; print(os.environ.get('OPENBLAS_NUM_THREADS'))")
    assert out == "None"
