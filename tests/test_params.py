"""Each configuration fact once (issue 32): a component spec's field that is a configuration key
takes its default, unit, range and rule from that key's one declaration (``params.py``), and no
component module writes a range of such a field again."""
from __future__ import annotations

import ast
import numbers
import warnings
from dataclasses import fields
from pathlib import Path

import pytest

import g10core
from g10core import config, params, ssd, tlb
from g10core.link import pcie
from g10core.uvm import fault_handler
from g10core.params import _KEY, SECTIONS, declaration, param_of

SPECS = {"tlb": tlb.TLBSpec, "fault": fault_handler.FaultHandlerSpec, "link": pcie.PcieSpec, "ssd": ssd.SSDSpec}
MODULES = [Path(m.__file__) for m in (tlb, fault_handler, pcie, ssd, config)]


def keyed_fields():
    return [(cls, f) for cls in SPECS.values() for f in fields(cls) if _KEY in f.metadata]


@pytest.mark.parametrize("section,cls", SPECS.items())
def test_a_field_named_as_a_key_of_its_section_is_that_key(section, cls):
    keys = {f.name for f in fields(SECTIONS[section])}
    own = [f.name for f in fields(cls) if f.name in keys and f.metadata.get(_KEY) != f"{section}.{f.name}"]
    assert not own, f"{cls.__name__} declares {own} itself: take them with params.from_key"


@pytest.mark.parametrize("cls,f", keyed_fields(), ids=lambda x: getattr(x, "name", getattr(x, "__name__", "")))
def test_a_keyed_field_reads_the_declaration_itself(cls, f):
    assert param_of(cls, f.name) is declaration(f.metadata[_KEY])


def _numeric(node) -> bool:
    """A number written in the source: 8, -1, 1 << 20, 2**63 - 1, 1e6."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, numbers.Number) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand)
    if isinstance(node, ast.BinOp):
        return _numeric(node.left) and _numeric(node.right)
    return False


def _field_named(node, names) -> str | None:
    if isinstance(node, ast.Attribute) and node.attr in names:
        return node.attr
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) == 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value in names):
        return node.args[1].value
    return None


def second_declarations(source: str, path: str = "<source>") -> list[str]:
    """Places in ``source`` that bound a configuration parameter with a number of their own: an
    ordering comparison of a keyed field (``x.l1_entries > 65536``), a call that names a keyed
    field and passes numbers (``_int(self, p, "l1_entries", 1, 65536)``), a ``param(...)`` with a
    range for a keyed field's name."""
    names = {f.name for _, f in keyed_fields()}
    found = []
    for node in ast.walk(ast.parse(source, path)):
        where = f"{path}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Compare) and all(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE))
                                                 for op in node.ops):
            sides = [node.left] + node.comparators
            named = [n for n in map(lambda s: _field_named(s, names), sides) if n]
            if named and any(_numeric(s) for s in sides):
                found.append(f"{where}: {named[0]} compared with a number")
        elif isinstance(node, ast.Call):
            strings = [a.value for a in node.args if isinstance(a, ast.Constant) and a.value in names]
            if strings and any(_numeric(a) for a in node.args):
                found.append(f"{where}: {strings[0]} given a bound")
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id in names \
                and isinstance(node.value, ast.Call) and getattr(node.value.func, "id", "") in ("param", "Param") \
                and any(k.arg in ("min", "max", "choices") for k in node.value.keywords):
            found.append(f"{where}: {node.target.id} declared again")
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_component_module_bounds_a_configuration_parameter_again(path):
    found = second_declarations(path.read_text(), path.name)
    assert not found, "a range declared outside params.py (take it from the declaration): " + "; ".join(found)


@pytest.mark.parametrize("snippet", [
    "def check(self):\n    _int(self, p, 'l1_entries', 1, 65536)\n",
    "def check(self):\n    if self.sample_modulus > 4096:\n        raise ConfigError('')\n",
    "def check(self):\n    if not 0 <= getattr(self, 'batch_faults') <= 65536:\n        raise ConfigError('')\n",
    "class S:\n    l1_entries: int = param(64, min=1, max=65536, doc='')\n",
])
def test_the_scan_finds_a_second_declaration(snippet):
    assert second_declarations(snippet)


def test_one_checker_for_every_spec():
    # the validation helpers each spec module had are gone; params.check_value is the one checker
    for module in (tlb, fault_handler, pcie, ssd, config):
        for helper in ("_int", "_pow2", "_real"):
            assert not hasattr(module, helper), f"{module.__name__}.{helper}"
    assert config.check_value is params.check_value and config.param_of is params.param_of


def test_a_component_built_alone_takes_the_declarations_ranges():
    # the configuration's bound and, where the component's own limit is wider, that one
    with pytest.raises(g10core.errors.ConfigError, match=r"^ssd\.pages_per_block = 65537: must be >= 1 and <= 65536"):
        ssd.SSDSpec(pages_per_block=65537).check()
    tlb.TLBSpec(l1_entries=2, l1_ways=2, sample_modulus=1, sample_subsamples=1).check()   # below tlb.l1_entries' 8
    with pytest.raises(g10core.errors.ConfigError, match=r"^tlb\.l1_entries = 0: must be >= 1 and <= 65536"):
        tlb.TLBSpec(l1_entries=0).check()
    with pytest.raises(g10core.errors.ConfigError, match=r"^fault\.clock_GHz = 50: must be >= 0\.1 and <= 10 GHz"):
        fault_handler.FaultHandlerSpec(clock_GHz=50).check()


def test_a_spec_built_from_a_configuration_names_its_keys():
    with pytest.raises(g10core.errors.ConfigError, match=r"^gpu\.sms = 5000: must be >= 1 and <= 4096"):
        tlb.spec_from_config(config.replace(config.preset("detailed"), gpu=config.GPUSpec(sms=5000)))


def test_name_lists_are_the_declared_choices():
    assert tuple(pcie.GENERATIONS) == declaration("link.generation").choices == declaration("ssd.link_generation").choices
    assert pcie.LANES == declaration("link.lanes").choices and pcie.PAYLOADS == declaration("link.max_payload_bytes").choices
    assert tuple(ssd.SSD_PRESETS) == declaration("ssd.device").choices
    assert tuple(fault_handler.PREFETCHERS) == declaration("fault.prefetcher").choices
    assert tuple(fault_handler.EVICT_DESTINATIONS) == declaration("fault.evict_destination").choices


def test_one_ssd_spec_and_the_old_name_warns():
    assert config.SECTIONS["ssd"] is config.SSDTierSpec is not ssd.SSDSpec
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert config.SSDSpec is config.SSDTierSpec
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)
