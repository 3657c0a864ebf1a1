"""A new embedding recipe (EMBEDDING_VERSION) in a library kept by an older one: the old vectors
are never compared with new ones, and the next search computes them again from the audio."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import soundfile as sf

from engines.audio_io import read_audio
from engines.similarity.embedding import EMBEDDING_DIM, EMBEDDING_VERSION
from engines.similarity.stored import from_blobs, to_blob
from engines.sound_import import import_folders, make_sound_extras
from engines.store.embedding_backfill import embed_missing
from engines.store.embeddings import audio_embedding
from engines.store.library import ClipLibrary
from engines.store.sound_search import similar_takes

RATE = 44100


def _write_sounds(folder: Path) -> None:
    """Two families of two: a low hum and a bright hiss, each at two lengths."""
    folder.mkdir()
    rng = np.random.default_rng(7)
    for number, seconds in enumerate((0.6, 0.8), start=1):
        t = np.arange(int(seconds * RATE)) / RATE
        sf.write(folder / f"hum-{number}.wav", 0.3 * np.sin(2 * np.pi * 110 * t), RATE)
        hiss = rng.standard_normal(t.size)
        sf.write(folder / f"hiss-{number}.wav", 0.1 * (hiss - np.roll(hiss, 1)), RATE)


def _rows(root: Path) -> list[tuple]:
    conn = sqlite3.connect(root / "library.sqlite3")
    try:
        return conn.execute("SELECT take_id, version, vector FROM embeddings ORDER BY take_id"
                            ).fetchall()
    finally:
        conn.close()


def test_vectors_of_an_older_recipe_are_made_again_before_a_search(tmp_path: Path):
    folder = tmp_path / "sfx"
    _write_sounds(folder)
    root = tmp_path / "library"
    with ClipLibrary(root) as library:
        import_folders(library, [folder])
        make_sound_extras(library)
        paths = {r.id: Path(r.audio_path) for r in library.search("", limit=None,
                                                                  source="imported")}
    assert {row[1] for row in _rows(root)} == {EMBEDDING_VERSION}
    # As an older release left it: every take the same (misleading) vector of version 1.
    old = np.zeros(EMBEDDING_DIM, dtype=np.float32)
    old[-1] = 1.0
    conn = sqlite3.connect(root / "library.sqlite3")
    with conn:
        conn.execute("UPDATE embeddings SET version = ?, vector = ?",
                     (EMBEDDING_VERSION - 1, to_blob(old)))
    conn.close()

    with ClipLibrary(root) as library:
        assert len(library.similarity_index()) == 0  # an old vector is never compared
        assert sorted(take for take, _ in library.takes_to_embed()) == sorted(paths)
        hum = next(take for take, path in paths.items() if path.name == "hum-1.wav")
        found = similar_takes(library, hum, limit=1)
        assert Path(found[0].record.audio_path).name == "hum-2.wav"
        assert embed_missing(library) == 0  # the search did it; nothing left
    rows = _rows(root)
    assert {row[1] for row in rows} == {EMBEDDING_VERSION}
    for take_id, _, blob in rows:
        fresh = audio_embedding(read_audio(paths[take_id]))[1]
        assert float(from_blobs([bytes(blob)])[0] @ fresh) > 0.999
