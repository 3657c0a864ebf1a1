"""ClipLibrary is a facade over parts that each hold their own state (issue 33): the parts are
composed, never mixed in, and the facade offers each part's methods exactly as the part does."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from engines.store.database import LibraryDatabase
from engines.store.editing import TakeEditing
from engines.store.embeddings import TakeEmbeddings
from engines.store.export_plan import LibraryExport
from engines.store.keeper import TakeKeeper
from engines.store.library import ClipLibrary
from engines.store.lookup import TakeLookup
from engines.store.quality_check import QualityCheck
from engines.store.sound_files import SoundFiles
from engines.store.take_audio import TakeAudio

STORE = Path(__file__).resolve().parents[2] / "engines" / "store"
PARTS = (LibraryDatabase, TakeLookup, TakeAudio, TakeKeeper, TakeEditing, TakeEmbeddings,
         QualityCheck, LibraryExport, SoundFiles)
LIFETIME = {"close"}


def test_no_store_class_inherits_another() -> None:
    """A part that subclassed another would reach into it through `self` again."""
    defined: dict[str, str] = {}
    bases: list[tuple[str, str]] = []
    for path in sorted(STORE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                defined[node.name] = path.name
                bases += [(f"{path.name}:{node.name}", ast.unparse(base)) for base in node.bases]
    assert "ClipLibrary" in defined and len(defined) > 10  # the walk found the classes
    inherited = [f"{cls}({base})" for cls, base in bases if base.split(".")[-1] in defined]
    assert not inherited, "store classes built on other store classes:\n" + "\n".join(inherited)
    assert ClipLibrary.__mro__ == (ClipLibrary, object)


def _public_methods(cls: type) -> dict[str, object]:
    return {name: member for name, member in vars(cls).items()
            if not name.startswith("_") and inspect.isfunction(member)}


def test_each_library_method_is_one_parts_method_with_its_signature() -> None:
    facade = _public_methods(ClipLibrary)
    assert {"add", "get", "search", "update", "export", "keep_embeddings"} <= set(facade)
    for name, method in facade.items():
        if name in LIFETIME:
            continue
        owners = [part for part in PARTS if name in _public_methods(part)]
        assert len(owners) == 1, f"ClipLibrary.{name} is defined by {owners or 'no part'}"
        part_method = vars(owners[0])[name]
        assert inspect.signature(method) == inspect.signature(part_method), \
            f"ClipLibrary.{name} differs from {owners[0].__name__}.{name}"
