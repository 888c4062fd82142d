"""The import graph of ``src/g10core`` has no cycle, its wings are layered, and only tests import the oracles.

Every module is parsed with ``ast``; every import counts, at the top and inside
functions (a lazy import is still a dependency: it only hides the cycle until the
function runs).  Relative imports are resolved; ``from P import name`` depends on
``P.name`` when that is a module, else on ``P``; importing ``P.Q.m`` also runs
``P`` and ``P.Q`` (their ``__init__``; not a dependency of a module inside them).  A package whose ``__init__`` loads modules
through ``importlib`` (a registry) is taken to depend on the submodules its ``__init__`` names in a
string (the registry's list of built-in modules), or on all of them where it names none.  The
``.pyx`` modules are scanned for Python-level ``import`` lines the same way.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = "g10core"
SRC = Path(__file__).resolve().parents[1] / "src" / PACKAGE
ORACLE = f"{PACKAGE}.testing"


def module_name(path: Path) -> str:
    parts = [PACKAGE, *path.relative_to(SRC).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(SRC.rglob("*")):
        if path.suffix in (".py", ".pyx") and "__pycache__" not in path.parts:
            found[module_name(path)] = path
    return found


MODULES = modules()


def _resolve(current: str, is_package: bool, module: str | None, level: int) -> str:
    if level == 0:
        return module or ""
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _pyx_imports(text: str) -> list[tuple[str | None, int, list[str]]]:
    """(module, level, names) of the Python-level imports of a .pyx (cimports skipped)."""
    out = []
    for line in text.splitlines():
        m = re.match(r"\s*from\s+(\.*)([\w.]*)\s+import\s+(?!.*\bcimport\b)(.+)", line)
        if m and "cimport" not in line:
            names = [n.strip().split(" as ")[0].strip("() ") for n in m.group(3).split(",")]
            out.append((m.group(2) or None, len(m.group(1)), names))
            continue
        m = re.match(r"\s*import\s+([\w.]+)", line)
        if m:
            out.append((m.group(1), 0, []))
    return out


def imports_of(name: str, path: Path) -> tuple[set[str], bool]:
    """(g10core modules ``name`` imports, whether it calls importlib)."""
    is_package = path.name == "__init__.py"
    text = path.read_text()
    entries: list[tuple[str | None, int, list[str]]] = []
    dynamic = False
    if path.suffix == ".pyx":
        entries = _pyx_imports(text)
    else:
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.Import):
                entries += [(a.name, 0, []) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                entries.append((node.module, node.level, [a.name for a in node.names]))
            elif (isinstance(node, ast.Attribute) and node.attr == "import_module"
                  and isinstance(node.value, ast.Name) and node.value.id == "importlib"):
                dynamic = True
    deps = set()
    for module, level, names in entries:
        target = _resolve(name, is_package, module, level)
        if target != PACKAGE and not target.startswith(PACKAGE + "."):
            continue
        targets = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES]
        if len(targets) < len(names) or not names:
            targets.append(target)
        for t in targets:  # and the packages it runs, except those ``name`` itself is inside
            parts = t.split(".")
            deps.update(p for p in (".".join(parts[:i]) for i in range(1, len(parts) + 1))
                        if not (name + ".").startswith(p + ".") or p == t)
    deps &= set(MODULES)
    deps.discard(name)
    return deps, dynamic


def loaded_by_name(package: str, init: Path) -> set[str]:
    """The submodules a registry's ``__init__`` may load through importlib: those it names in a
    string literal, or all of them when it names none (a list built at run time)."""
    children = {m for m in MODULES if m.startswith(package + ".") and m.count(".") == package.count(".") + 1}
    literals = {n.value for n in ast.walk(ast.parse(init.read_text(), str(init)))
                if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    named = {m for m in children if m.rpartition(".")[2] in literals}
    return named or children


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        deps, dynamic = imports_of(name, path)
        if dynamic and path.name == "__init__.py":
            deps |= loaded_by_name(name, path)
        graph[name] = deps
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as [a, b, ..., a], or None (iterative depth-first search)."""
    colour = dict.fromkeys(graph, 0)      # 0 new, 1 on the stack, 2 done
    for root in sorted(graph):
        if colour[root]:
            continue
        stack = [(root, iter(sorted(graph[root])))]
        path = [root]
        colour[root] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[node] = 2
                stack.pop()
                path.pop()
            elif colour[nxt] == 1:
                return path[path.index(nxt):] + [nxt]
            elif colour[nxt] == 0:
                colour[nxt] = 1
                stack.append((nxt, iter(sorted(graph[nxt]))))
                path.append(nxt)
    return None


def all_cycles(graph):
    """Every edge that lies on some cycle, grouped per strongly connected component."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_scan_sees_the_package():
    graph = import_graph()
    assert {"g10core.simulator", "g10core.cli", "g10core.config", "g10core.uvm._replay"} <= set(graph)
    # lazy (function-level) imports count: the run command imports the simulator inside its function
    assert "g10core.simulator" in graph["g10core.cli.run"]
    # relative imports resolve to modules; a submodule import runs its packages (not the importer's own)
    assert "g10core.cli.common" in graph["g10core.cli.trace"] and "g10core.cli" not in graph["g10core.cli.trace"]
    assert "g10core.policies" in graph["g10core.simulator"]         # (it never imports a policy by name)
    # a registry that loads its package's modules through importlib depends on those it names
    assert {"g10core.policies.g10", "g10core.policies.flashneuron"} <= graph["g10core.policies"]
    assert "g10core.policies.modelled" not in graph["g10core.policies"]


def test_a_registry_that_names_no_module_depends_on_all(tmp_path):
    names = {f"{PACKAGE}.fake", f"{PACKAGE}.fake.a", f"{PACKAGE}.fake.b"}
    init = tmp_path / "__init__.py"
    try:
        MODULES.update(dict.fromkeys(names, init))
        init.write_text("import importlib\nfor m in ('a',):\n    importlib.import_module(m)\n")
        assert loaded_by_name(f"{PACKAGE}.fake", init) == {f"{PACKAGE}.fake.a"}
        init.write_text("import importlib, os\nfor m in os.listdir('.'):\n    importlib.import_module(m)\n")
        assert loaded_by_name(f"{PACKAGE}.fake", init) == {f"{PACKAGE}.fake.a", f"{PACKAGE}.fake.b"}
    finally:
        for n in names:
            MODULES.pop(n, None)


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle():
    graph = import_graph()
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle) + f"; all: {all_cycles(graph)}"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if not (n + ".").startswith(ORACLE + ".")))
def test_production_code_never_imports_the_oracle(name):
    deps, _ = imports_of(name, MODULES[name])
    oracles = sorted(d for d in deps if (d + ".").startswith(ORACLE + "."))
    assert not oracles, f"{MODULES[name]} imports {oracles}, the test oracles; only tests may"


# The layers, bottom up (DESIGN.md "Layout"): a module may import its own layer and those below,
# never one above.  The machine model's packages (one per component, compiled modules and Python
# face together) and the top level's shared modules (config, params, codes, errors, results) are
# layer 0; the drivers that run a policy's plan on them are layer 3.  capture/ records workloads
# (traces) and experiments/ runs the simulator on them (``reproduce llm`` on the captured LLM traces,
# Fig. 11 on the captured twins): the wing that records sits below the wing that runs experiments
# (issue 44).
# The top level's one driver (layer 3): the conductor of a run.  (Issue 44 split ``slot_model`` into
# the machine's quotas, uvm/slots.py, and the workload's inputs to them, workload/slot_inputs.py, and
# moved ``modelled`` into policies/: the registry's __init__ loads only the modules it names.)
DRIVERS = {"simulator"}
# The package's face at the top (issue 44): what users import (the package, ``python -m``, the old
# import paths), the configuration's declarations, the codes, the result formats, the errors, the
# safe file reads and the GPU catalogue a config names; layer 0.  A device's or a wing's part lives in
# its package, never here.
FACE = {"__init__", "__main__", "_moved", "params", "config", "codes", "gpus", "results", "timeline",
        "errors", "files"}
WING_LAYER = {"examples": 0, "workload": 1, "policies": 2, "inference": 3, "machine": 3, "capture": 4,
              "experiments": 5, "cli": 6,
              "testing": 6, "__main__": 7}
# The machine model's packages, bottom up (docs/architecture.md): the shared C types and the event
# engine; the links; the devices on a link; the UVM driver and the replay that use them all.
MACHINE = {"core": 0, "link": 1, "ssd": 2, "tlb": 2, "uvm": 3}


# The example files (examples/*.py, not the package's __init__) are a user's files that g10sim
# loads by path (--eviction FILE.py:FUNC, --policy FILE.py:NAME), never modules the package
# imports: like a user's file they may import any layer (a policy imports g10core.policies).
USER_FILES = f"{PACKAGE}.examples."


def layer(name: str) -> int | None:
    """The layer of module ``name`` (None: the package itself, which every module runs, and the
    user files, which none imports)."""
    parts = name.split(".")
    if len(parts) == 1 or name.startswith(USER_FILES):
        return None
    if parts[1] in WING_LAYER:
        return WING_LAYER[parts[1]]
    if parts[1] in MACHINE:
        return 0
    assert len(parts) == 2, f"{name}: a subpackage that is not a wing ({', '.join(WING_LAYER)})"
    return 3 if parts[1] in DRIVERS else 0


def cimport_graph() -> dict[str, set[str]]:
    """Module -> the g10core modules its .pyx and .pxd cimport (the compile-time dependencies)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(SRC.rglob("*")):
        if path.suffix not in (".pyx", ".pxd"):
            continue
        name = module_name(path)
        for line in path.read_text().splitlines():
            m = re.match(r"\s*from\s+(\.*)([\w.]*)\s+cimport\b", line) or re.match(r"\s*cimport\s+()([\w.]+)", line)
            if m:
                target = _resolve(name, False, m.group(2) or None, len(m.group(1)))
                if target.startswith(PACKAGE + "."):
                    graph.setdefault(name, set()).add(target)
        graph.setdefault(name, set())
    return graph


def machine_rank(name: str) -> int | None:
    parts = name.split(".")
    return MACHINE.get(parts[1]) if len(parts) >= 2 else None


def test_the_machine_packages_are_layered_by_import_and_cimport():
    # a component imports (and cimports) only its own package and the packages below it: the SSD
    # may use the link, never the UVM driver; core knows no device
    graph = import_graph()
    cgraph = cimport_graph()
    assert "g10core.link._pcie" in cgraph["g10core.ssd._ssd"]              # the scan sees cimports
    assert "g10core.core._types" in cgraph["g10core.uvm._replay"]
    for g in (cgraph, graph):
        missing = sorted(d for deps in g.values() for d in deps
                         if d not in g and d not in MODULES and machine_rank(d) is not None)
        assert not missing, f"cimports of modules that do not exist: {missing}"
    upward = sorted(f"{a} -> {b}" for g in (graph, cgraph) for a, deps in g.items() for b in deps
                    if machine_rank(a) is not None and machine_rank(b) is not None
                    and a.split(".")[1] != b.split(".")[1] and machine_rank(b) >= machine_rank(a))
    assert not upward, "a machine package uses one beside or above it: " + "; ".join(upward)
    # the machine model never reaches up into the drivers, the policies or the workload
    for a, deps in graph.items():
        if machine_rank(a) is not None:
            assert all(layer(b) in (None, 0) for b in deps), (a, sorted(deps))
    assert find_cycle(cgraph) is None, find_cycle(cgraph)


def test_the_top_level_holds_no_compiled_module():
    # issue 44: a device's parts live in its package; the top holds the package's face
    top = sorted(p.name for p in SRC.iterdir() if p.suffix in (".pyx", ".pxd", ".pyi"))
    assert not top, f"compiled modules at the top of g10core: {top}"


def test_the_top_level_holds_only_the_face_and_the_drivers():
    # issue 44: every module at the top is the face or a driver, every folder a wing or a machine package
    assert not FACE & DRIVERS and not set(WING_LAYER) & set(MACHINE)
    strays = []
    for path in sorted(SRC.iterdir()):
        if path.name == "__pycache__":
            continue
        if path.is_dir():
            if path.name not in WING_LAYER and path.name not in MACHINE or not (path / "__init__.py").exists():
                strays.append(path.name + "/")
        elif path.suffix != ".py" or path.stem not in FACE | DRIVERS:
            strays.append(path.name)
    assert not strays, f"at the top of g10core, neither the face nor a driver nor a wing: {strays}"
    # (and the allow-list names only what is there: a module that moved out leaves it)
    assert {p.stem for p in SRC.glob("*.py")} == FACE | DRIVERS
    assert all(layer(f"{PACKAGE}.{m}") == 0 for m in FACE - {"__init__", "__main__"})
    # the kernel-time noise perturbs a workload's kernel times: the workload's wing, below the simulator
    assert layer(f"{PACKAGE}.workload.noise") == 1 < layer(f"{PACKAGE}.simulator")


def test_every_subpackage_is_a_wing():
    for name in MODULES:
        layer(name)


def test_no_module_imports_a_layer_above_its_own():
    graph = import_graph()
    upward = sorted(f"{a} ({layer(a)}) -> {b} ({layer(b)})" for a, deps in graph.items() for b in deps
                    if layer(a) is not None and layer(b) is not None and layer(b) > layer(a))
    assert not upward, "imports of a layer above: " + "; ".join(upward)


def test_no_module_imports_a_user_file():
    graph = import_graph()
    importers = sorted(f"{a} -> {b}" for a, deps in graph.items() for b in deps
                       if b.startswith(USER_FILES) and not a.startswith(USER_FILES))
    assert not importers, "the example files are loaded by path, never imported: " + "; ".join(importers)


def test_the_layer_check_sees_an_upward_import():
    assert layer("g10core.workload.hints") < layer("g10core.policies") < layer("g10core.simulator")
    assert layer("g10core.simulator") < layer("g10core.experiments.sweep") < layer("g10core.cli.run")
    assert layer("g10core.config") == 0 and layer("g10core") is None
    assert layer("g10core.ssd._ssd") == layer("g10core.uvm.evictors") == 0 < layer("g10core.simulator")


def test_capture_imports_nothing_from_experiments():
    # the wing that records workloads never depends on the one that runs experiments on them (issue 44)
    assert layer("g10core.capture.llm") < layer("g10core.experiments.llm")
    graph = import_graph()
    into = sorted(f"{a} -> {b}" for a, deps in graph.items() for b in deps
                  if a.startswith(f"{PACKAGE}.capture") and b.startswith(f"{PACKAGE}.experiments"))
    assert not into, "capture/ imports experiments/: " + "; ".join(into)
    # and the LLM table's runner is an experiment that uses the captured workloads
    assert "g10core.capture.llm" in graph["g10core.experiments.llm"]


def test_every_public_error_type_is_defined_in_errors_py():
    """Exception classes users can see live in g10core/errors.py (private control-flow ones may not)."""
    import builtins

    elsewhere = []
    for name, path in MODULES.items():
        if path.suffix != ".py" or name == f"{PACKAGE}.errors":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
                if any(isinstance(getattr(builtins, b, None), type) and issubclass(getattr(builtins, b), BaseException)
                       or b.endswith("Error") for b in bases):
                    elsewhere.append(f"{path.name}: {node.name}")
    assert not elsewhere, f"error types defined outside errors.py: {elsewhere}"


def test_the_old_import_paths_name_the_same_classes():
    from g10core import config, errors, simulator
    from g10core.workload import vitality as analysis
    from g10core.workload import g10artifact
    from g10core.workload import hints
    from g10core.policies import tensorsim
    from g10core.workload import trace

    assert config.ConfigError is errors.ConfigError and trace.TraceError is errors.TraceError
    assert hints.HintError is errors.HintError and g10artifact.ArtifactError is errors.ArtifactError
    assert analysis.CannotFit is errors.CannotFit is simulator.CannotFit
    assert simulator.SimulationError is errors.SimulationError and tensorsim.TensorSimError is errors.TensorSimError
    assert issubclass(errors.SimulationError, RuntimeError)
    for bad_input in (errors.ConfigError, errors.TraceError, errors.HintError, errors.ArtifactError,
                      errors.CannotFit, errors.TensorSimError):
        assert issubclass(bad_input, ValueError) and issubclass(bad_input, errors.G10Error)


def test_structured_errors_pickle_whole():
    import pickle

    from g10core.errors import CannotFit, HintError, TraceError

    for exc in (TraceError("t.h5", "/kernels", "negative time", row=3, field="time_ideal_ns"),
                HintError("h.h5", "tensor out of range", row=2, field="tensor"),
                CannotFit(7, 1 << 33, 1 << 32, model="bert_base-b256")):
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is type(exc) and str(back) == str(exc)


def test_the_replay_keeps_only_the_event_loop_and_the_kernel_state_machine():
    # issue 11: components live in their own modules; the replay stays small enough to read whole
    lines = (SRC / "uvm" / "_replay.pyx").read_text().count("\n")
    assert 0 < lines <= 600, lines


def test_every_pyx_is_built_as_the_module_its_path_names():
    # setup.py builds every .pyx below src/g10core by its path (issue 32): a compiled module moved
    # into a wing (workload/_traceidx, policies/_g10sched) imports from there as an extension
    import importlib.machinery
    import importlib.util

    pyx = sorted(name for name, path in MODULES.items() if path.suffix == ".pyx")
    assert {"g10core.workload._traceidx", "g10core.policies._g10sched", "g10core.uvm._replay"} <= set(pyx)
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    not_built = [name for name in pyx
                 if not (getattr(importlib.util.find_spec(name), "origin", None) or "").endswith(suffixes)]
    assert not not_built, f"no compiled module for {not_built}"


def test_the_architecture_map_names_every_package():
    # issue 44: a newcomer's map (docs/architecture.md) names every package of g10core
    text = (SRC.parents[1] / "docs" / "architecture.md").read_text()
    packages = sorted(p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    assert {"uvm", "inference", "machine"} <= set(packages)
    missing = [p for p in packages if f"`{p}/" not in text]
    assert not missing, f"docs/architecture.md does not name {missing}"
