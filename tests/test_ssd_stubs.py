"""The .pyi stubs of the compiled SSD and PCIe modules name exactly what the modules expose."""
import ast
from pathlib import Path

import pytest

import g10core


def stub_names(module_name):
    """{class name: set of member names} and the module-level names of a stub."""
    stub = Path(g10core.__file__).parent.joinpath(*module_name.split(".")).with_suffix(".pyi")
    tree = ast.parse(stub.read_text())
    classes, top = {}, set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign):
                    members.add(item.target.id)
            classes[node.name] = members
        elif isinstance(node, ast.AnnAssign):
            top.add(node.target.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            top.add(node.name)
    return classes, top


def public(obj):
    return {n for n in dir(obj) if not n.startswith("_")}


@pytest.mark.parametrize("module_name,cls_name", [("ssd._ssd", "SSDCore"), ("link._pcie", "LinkCore")])
def test_stub_matches_the_compiled_module(module_name, cls_name):
    import importlib
    mod = importlib.import_module(f"g10core.{module_name}")
    classes, top = stub_names(module_name)
    assert set(classes) == {cls_name}
    stubbed = {n for n in classes[cls_name] if not n.startswith("_")}
    assert stubbed == public(getattr(mod, cls_name))
    compiled_top = {n for n in public(mod) if not isinstance(getattr(mod, n), type(mod))} - {cls_name}
    assert top == compiled_top                  # module-level constants (modules such as np excluded)
