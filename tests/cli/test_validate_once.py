"""`generate` checks each take's request once: the command line makes the checked request and
the generator runs it as it is (issue 33: validation ran in more than one place per take)."""

from __future__ import annotations

import json
from pathlib import Path

import main as entry
from tests.validation_counts import count_calls


def test_each_take_is_validated_once_and_its_tier_normalised_once(capsys, monkeypatch,
                                                                  tmp_path: Path, models: Path):
    calls = count_calls(monkeypatch)
    out = tmp_path / "coin.wav"
    code = entry.main(["generate", "--prompt", "coin", "--seconds", "0.5", "--seed", "7",
                       "--variations", "3", "--codec-tier", "coarse",
                       "--models-dir", str(models), "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    assert calls == {"validate_request": 3, "normalize_tier": 3}
    # the tier as asked reached the take, in its canonical name
    meta = json.loads(out.with_name("coin_01.json").read_text())
    assert meta["request"]["codec_tier"] == "coarse" and meta["seed"] == 7
