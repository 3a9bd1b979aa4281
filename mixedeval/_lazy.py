"""Lazy public names for mixedeval's packages.

``install(__name__, table)`` gives a package a module-level ``__getattr__`` that imports a
submodule on first access of one of its public names (so ``import mixedeval`` stays cheap), and
stops a submodule from shadowing a public function of the same name (Python binds a submodule as
an attribute of its package when it is first imported: after ``from mixedeval.lmm import
LMMFit``, ``mixedeval.lmm`` would otherwise be the module, not the function).
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import types
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

    class _Package(types.ModuleType):
        def __setattr__(self, name: str, value: Any) -> None:
            target = resolved.get(name)
            if (
                target is not None
                and target[1] is not None
                and isinstance(value, types.ModuleType)
                and value.__name__ == f"{package}.{name}"
            ):
                return  # keep the public function; the submodule stays in sys.modules
            super().__setattr__(name, value)

    module.__getattr__ = __getattr__  # type: ignore[attr-defined]
    module.__dir__ = __dir__  # type: ignore[attr-defined]
    module.__all__ = [*getattr(module, "__all__", ()), *(n for n in resolved if n not in getattr(module, "__all__", ()))]
    module.__class__ = _Package
