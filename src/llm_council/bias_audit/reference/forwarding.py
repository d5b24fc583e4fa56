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
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

_IMPLEMENTATION = "__implementation__"


def _implementation_of(shim: ModuleType) -> ModuleType:
    # a module-level function, not a method: the shim's own globals would shadow a method
    implementation: ModuleType = shim.__dict__[_IMPLEMENTATION]
    return implementation


class ForwardingModule(ModuleType):
    """A module whose missing reads, and all writes and deletes, go to its implementation."""

    def __getattr__(self, name: str) -> Any:
        # called only for names the shim itself does not hold
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return getattr(_implementation_of(self), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if not (name.startswith("__") and name.endswith("__")):
            setattr(_implementation_of(self), name, value)
            if name not in self.__dict__:
                return
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if not (name.startswith("__") and name.endswith("__")):
            implementation = _implementation_of(self)
            if hasattr(implementation, name):
                delattr(implementation, name)
            if name not in self.__dict__:
                return
        super().__delattr__(name)

    def __dir__(self) -> list[str]:
        return sorted(set(self.__dict__) | set(dir(_implementation_of(self))))


def forward_to_implementation(shim_name: str, implementation: ModuleType) -> None:
    """Make the module ``shim_name`` forward to ``implementation`` (call it last in the shim)."""
    shim = sys.modules[shim_name]
    shim.__dict__[_IMPLEMENTATION] = implementation
    shim.__class__ = ForwardingModule
