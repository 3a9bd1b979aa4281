"""Lazy public names for mixedeval's packages.

``install(__name__, table)`` gives a package a module-level ``__getattr__`` that imports a
submodule on first access of one of its public names (so ``import mixedeval`` stays cheap). No
public name shares its name with a submodule (modules holding internals are private, e.g.
``mixedeval.inference._lmm`` behind ``me.lmm``), so importing a submodule never shadows one.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any


def install(package: str, table: dict[str, tuple[str, str | None]]) -> None:
    """``table`` maps a public name to (absolute or ``.relative`` module, attribute or None)."""
    module = sys.modules[package]
    resolved = {
        name: (importlib.util.resolve_name(mod, package) if mod.startswith(".") else mod, attr)
        for name, (mod, attr) in table.items()
    }

    def __getattr__(name: str) -> Any:
        try:
            mod_name, attr = resolved[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        mod = importlib.import_module(mod_name)
        value = mod if attr is None else getattr(mod, attr)
        module.__dict__[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(module.__dict__) | set(resolved))

    module.__getattr__ = __getattr__  # type: ignore[attr-defined]
    module.__dir__ = __dir__  # type: ignore[attr-defined]
    module.__all__ = [*getattr(module, "__all__", ()), *(n for n in resolved if n not in getattr(module, "__all__", ()))]
