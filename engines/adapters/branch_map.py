"""The branch engine's map: which linears carry a branch, their sizes, the adapter key each one
answers to, and the names of its operand inputs. The official JSON layout:

    {"rank_max": 512, "layers": {"lora::<name>": {"in": .., "out": .., "A": "loraA::<name>",
     "B": "loraB::<name>", "P": "loraP::<name>", "adapter_key": .. (or "ckpt_suffix")}}}

and one strength input, "lora_srow", shared by every layer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from engines.errors import ModelUnavailableError

SROW_INPUT = "lora_srow"
# Older maps store only the suffix under this prefix (every block linear sits there).
BLOCK_PREFIX = "model.transformer."
DEFAULT_RANK_MAX = 512


@dataclass(frozen=True)
class BranchLayer:
    name: str
    in_features: int
    out_features: int
    adapter_key: str  # the layer's name in adapter files
    a_input: str  # (1, R, in)
    b_input: str  # (1, R, out), rank-major
    p_input: str  # (1, 1, out)


@dataclass(frozen=True)
class BranchMap:
    layers: dict[str, BranchLayer]
    rank_max: int = DEFAULT_RANK_MAX
    srow_input: str = SROW_INPUT

    def by_adapter_key(self) -> dict[str, BranchLayer]:
        return {layer.adapter_key: layer for layer in self.layers.values()}

    def input_names(self) -> tuple[str, ...]:
        names = [n for layer in self.layers.values()
                 for n in (layer.a_input, layer.b_input, layer.p_input)]
        return (*names, self.srow_input)

    def to_json(self) -> dict:
        return {"rank_max": self.rank_max, "layers": {
            layer.name: {"in": layer.in_features, "out": layer.out_features,
                         "adapter_key": layer.adapter_key, "A": layer.a_input,
                         "B": layer.b_input, "P": layer.p_input}
            for layer in self.layers.values()}}


def branch_map_from_json(data: dict) -> BranchMap:
    layers = {}
    for name, rec in data["layers"].items():
        key = rec.get("adapter_key") or BLOCK_PREFIX + rec["ckpt_suffix"]
        layers[name] = BranchLayer(name=name, in_features=int(rec["in"]),
                                   out_features=int(rec["out"]), adapter_key=key,
                                   a_input=rec["A"], b_input=rec["B"], p_input=rec["P"])
    return BranchMap(layers=layers, rank_max=int(data.get("rank_max", DEFAULT_RANK_MAX)))


def load_branch_map(path: Path) -> BranchMap:
    """The map beside a branch engine. ModelUnavailableError when it is missing or damaged: an
    engine driven with another engine's map mis-sizes every operand and raises nothing."""
    path = Path(path)
    try:
        return branch_map_from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelUnavailableError(
            f"The adapter map '{path.name}' of the branch engine could not be read; download "
            f"or build the branch engine again.") from exc
