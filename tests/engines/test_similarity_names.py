"""A take's stored name (issue 22: a rename, F2 in the window or `library rename`) is the name
every derived name uses: the export file name and its sidecar, the delivery name rule the window's
Save As suggestion and drag name go through, the list's title and text search, and the search by
sound results."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from engines.delivery.delivery_take import from_record
from engines.delivery.names import DEFAULT_TEMPLATE, take_stem
from engines.store.library import ClipLibrary
from engines.store.sound_search import similar_takes
from tests.engines.test_library import engine_files_in, make_result


def test_a_renamed_take_goes_out_under_its_new_name(tmp_path: Path):
    files = engine_files_in(tmp_path / "engines")
    with ClipLibrary(tmp_path / "library") as library:
        first = library.add(make_result(files, prompt="coin pickup, bright", seed=1))
        library.add(make_result(files, prompt="coin pickup, bright", seed=2))
        assert take_stem(DEFAULT_TEMPLATE, from_record(first, library.load_audio(first.id))) \
            == "coin-pickup-bright_01"

        renamed = library.update(first.id, name="  Gold   Coin ")
        assert renamed.name == "Gold Coin" and renamed.title() == "Gold Coin"
        stem = take_stem(DEFAULT_TEMPLATE, from_record(renamed, library.load_audio(first.id)))
        assert stem == "Gold Coin_01"  # what Save As suggests and a drag is named
        assert [r.id for r in library.search("gold coin")] == [first.id]

        (tmp_path / "out").mkdir()
        written = library.export([first.id], tmp_path / "out")
        assert [p.name for p in written] == ["Gold Coin_01.wav"]
        sidecar = json.loads(written[0].with_suffix(".json").read_text())
        assert sidecar["library"]["name"] == "Gold Coin"
        assert np.array_equal(library.verified_audio(first.id), library.load_audio(first.id))

    with ClipLibrary(tmp_path / "library") as reopened:  # stored, not just in memory
        assert reopened.get(first.id).name == "Gold Coin"
        assert similar_takes(reopened, 2, limit=1)[0].record.name == "Gold Coin"
