"""Shim modules at the reference's import paths that forward attribute access (ADR 0066).

The reference's tests patch module attributes at its paths, including private ones its
functions call (``patch("llm_council.bias_persistence._get_bias_store_path")``,
``@patch("llm_council.bias_aggregation.read_bias_records")``). A function looks its globals
up in the module that defines it, so a shim that only re-exported names would take the
patch while the implementation kept calling the original. A shim's module therefore gets
:class:`ForwardingModule` as its class (Python's documented way to customise a module's
attribute access, the language reference's "Customizing module attribute access"): a name
the shim does not hold is read from the implementation, and every write or delete goes to
the implementation (and to the shim's own copy of a public name, so both stay the same).
Deleting a name the shim does not hold, after a write to it through the shim, puts back
what that write replaced: that is how ``monkeypatch`` and ``unittest.mock`` undo a patch of
an attribute they did not find in the module's own ``__dict__``.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

_IMPLEMENTATION = "__implementation__"
_REPLACED = "__replaced_by_writes__"
_ABSENT = object()


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _implementation_of(shim: ModuleType) -> ModuleType:
    # a module-level function, not a method: the shim's own globals would shadow a method
    implementation: ModuleType = shim.__dict__[_IMPLEMENTATION]
    return implementation


class ForwardingModule(ModuleType):
    """A module whose missing reads, and all writes and deletes, go to its implementation."""

    def __getattr__(self, name: str) -> Any:
        # called only for names the shim itself does not hold
        if _is_dunder(name):
            raise AttributeError(name)
        return getattr(_implementation_of(self), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if not _is_dunder(name):
            implementation = _implementation_of(self)
            if name not in self.__dict__:
                # remember what the write replaced: undoing it is a delete (below)
                previous = getattr(implementation, name, _ABSENT)
                self.__dict__[_REPLACED].setdefault(name, []).append(previous)
            setattr(implementation, name, value)
            if name not in self.__dict__:
                return
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if _is_dunder(name):
            super().__delattr__(name)
            return
        implementation = _implementation_of(self)
        replaced = self.__dict__[_REPLACED].get(name)
        if replaced and name not in self.__dict__:
            # pytest's monkeypatch and unittest.mock undo a write to a name the shim does
            # not hold by deleting it: put back what that write replaced
            previous = replaced.pop()
            if previous is _ABSENT:
                delattr(implementation, name)
            else:
                setattr(implementation, name, previous)
            return
        if hasattr(implementation, name):
            delattr(implementation, name)
        if name in self.__dict__:
            super().__delattr__(name)

    def __dir__(self) -> list[str]:
        return sorted(set(self.__dict__) | set(dir(_implementation_of(self))))


def forward_to_implementation(shim_name: str, implementation: ModuleType) -> None:
    """Make the module ``shim_name`` forward to ``implementation`` (call it last in the shim)."""
    shim = sys.modules[shim_name]
    shim.__dict__[_IMPLEMENTATION] = implementation
    shim.__dict__.setdefault(_REPLACED, {})
    shim.__class__ = ForwardingModule
