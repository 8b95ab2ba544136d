"""What ``biped-sim list`` prints: every name and every ``--set`` key with its default and meaning.

Defaults come from the settings dataclasses (or a behaviour's ``PARAMS``), meanings from their
docstrings' ``Attributes:``/``Params:`` sections, so the list cannot drift from the code.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from typing import Any

SECTION = re.compile(r"^\s*(Attributes|Params|Parameters):\s*$")
ENTRY = re.compile(r"^(\s+)([A-Za-z_][\w, ]*):\s*(.*)$")


def doc_meanings(obj: Any) -> dict[str, str]:
    """``{name: meaning}`` from the ``Attributes:`` or ``Params:`` section of a docstring.

    An entry is ``name: text`` (or ``a, b: text`` for several names), continued on lines indented
    deeper than the entry.
    """
    doc = inspect.getdoc(obj) or ""
    out: dict[str, str] = {}
    inside, indent, names = False, None, []
    for line in doc.splitlines():
        if SECTION.match(line):
            inside, indent, names = True, None, []
            continue
        if not inside:
            continue
        if not line.strip():
            continue
        match = ENTRY.match(line)
        depth = len(line) - len(line.lstrip())
        if match and (indent is None or depth == indent):
            indent = depth
            names = [n.strip() for n in match.group(2).split(",") if n.strip()]
            for name in names:
                out[name] = match.group(3).strip()
        elif indent is not None and depth > indent and names:
            for name in names:
                out[name] += " " + line.strip()
        elif depth == 0 or (indent is not None and depth < indent):
            inside = False
    return out


def dataclass_entries(cls: type) -> list[tuple[str, Any, str]]:
    """``(name, default, meaning)`` of every field of a settings dataclass."""
    meanings = doc_meanings(cls)
    out = []
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        out.append((f.name, default, meanings.get(f.name, "")))
    return out


def behavior_entries(name: str) -> list[tuple[str, Any, str]]:
    """``(param, default, meaning)`` of a behaviour: its ``PARAMS`` dict (meanings from the
    class docstring), or the dataclass its docstring names (``fields of ``WalkParams````)."""
    from biped_contact_sim.control import behavior_class

    cls = behavior_class(name)
    params = getattr(cls, "PARAMS", None)
    if params:
        meanings = {**doc_meanings(cls)}
        return [(key, value, meanings.get(key, "")) for key, value in params.items()]
    text = (inspect.getdoc(cls) or "") + (inspect.getdoc(cls.__init__) or "")
    found = re.search(r"fields of ``(\w+)``", text)
    if found:
        module = importlib.import_module(cls.__module__)
        params_cls = getattr(module, found.group(1), None)
        if params_cls is not None and dataclasses.is_dataclass(params_cls):
            return dataclass_entries(params_cls)
    return []


def format_entry(prefix: str, name: str, default: Any, meaning: str, width: int = 100) -> str:
    """One line (wrapped) of the list: ``prefix.name = default  meaning``."""
    import textwrap

    head = f"      {prefix}{name} = {default!r}"
    if not meaning:
        return head
    return textwrap.fill(meaning, width=width, initial_indent=head + "  ",
                         subsequent_indent=" " * 10)
