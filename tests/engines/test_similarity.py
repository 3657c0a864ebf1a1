"""Search by sound (issue 22), through the engine API: takes rendered by the real demo model, kept
in a real library, found again by how they sound. The oracle is what made each take (its prompt),
never the embedding itself."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from engines.catalog import Catalog
from engines.errors import AudioFileError
from engines.generator import Generator
from engines.request import GenerationRequest
from engines.similarity.embedding import EMBEDDING_DIM, LATENT_DIMS, take_embedding
from engines.similarity.encoding import LatentEncoders
from engines.similarity.index import EmbeddingIndex
from engines.similarity.stored import BLOB_BYTES, from_blobs, to_blob
from engines.store.embedding_backfill import embed_missing
from engines.store.library import ClipLibrary, LibraryError
from engines.store.sound_search import similar_takes, similar_to_file

PROMPTS = ("rain on a tin roof", "laser blast, sci-fi", "church bell ringing",
           "footsteps on gravel")
SEEDS = (11, 22, 33)


@pytest.fixture(scope="module")
def renders(models: Path) -> list:
    """Demo takes of four prompts, three seeds each, lengths varied so length is no clue."""
    generator = Generator(Catalog(models))
    try:
        return [generator.generate(GenerationRequest(
                    prompt=prompt, seed=seed, seconds=1.0 + (i + j) % 3, steps=4,
                    backend="onnxruntime"))
                for i, prompt in enumerate(PROMPTS) for j, seed in enumerate(SEEDS)]
    finally:
        generator.close()


@pytest.fixture
def filled(tmp_path: Path, renders: list) -> ClipLibrary:
    library = ClipLibrary(tmp_path / "library")
    for result in renders:
        library.add(result)
    yield library
    library.close()


def _stored(root: Path) -> list[tuple]:
    conn = sqlite3.connect(root / "library.sqlite3")
    try:
        return conn.execute("SELECT take_id, space, length(vector) FROM embeddings "
                            "ORDER BY take_id").fetchall()
    finally:
        conn.close()


def test_every_kept_take_has_a_compact_embedding_in_its_codec_space(filled: ClipLibrary):
    rows = _stored(filled.root)
    assert [row[0] for row in rows] == list(range(1, len(PROMPTS) * len(SEEDS) + 1))
    assert {row[1] for row in rows} == {"demo"}  # the demo codec's latent space
    assert {row[2] for row in rows} == {BLOB_BYTES} and BLOB_BYTES <= 2 * EMBEDDING_DIM


def test_a_takes_nearest_neighbours_are_the_takes_of_its_prompt(filled: ClipLibrary):
    for record in filled.search(limit=None):
        found = similar_takes(filled, record.id, limit=len(SEEDS) - 1)
        assert [f.record.prompt for f in found] == [record.prompt] * (len(SEEDS) - 1), record
        assert all(f.same_space for f in found)
        assert record.id not in [f.record.id for f in found]
        distances = [f.distance for f in found]
        assert distances == sorted(distances) and 0.0 <= distances[0] <= 2.0
        assert found[0].similarity_text == f"similarity {round(100 * (1 - distances[0]))}%"


def test_takes_in_the_trash_are_not_found(filled: ClipLibrary):
    first = similar_takes(filled, 1, limit=1)[0].record.id
    filled.delete(first)
    assert first not in [f.record.id for f in similar_takes(filled, 1, limit=50)]
    filled.restore(first)
    assert similar_takes(filled, 1, limit=1)[0].record.id == first


def test_a_file_finds_the_take_it_was_exported_from_even_resampled(filled: ClipLibrary,
                                                                    tmp_path: Path, models):
    import soxr

    take = filled.get(7)
    audio = filled.load_float_audio(take.id)
    path = tmp_path / "dropped.flac"
    sf.write(path, soxr.resample(audio, 44100, 48000), 48000, subtype="PCM_24")
    encoders = LatentEncoders(Catalog(models), filled.latent_spaces())
    assert encoders.spaces == ["demo"]
    found = similar_to_file(filled, path, limit=3, encoders=encoders)
    assert found[0].record.id == take.id and found[0].same_space
    assert [f.record.prompt for f in found] == [take.prompt] * 3
    without = similar_to_file(filled, path, limit=3)  # no encoder: audio features alone
    assert without[0].record.id == take.id and not without[0].same_space


def test_a_file_that_is_not_audio_is_one_sentence(filled: ClipLibrary, tmp_path: Path):
    bad = tmp_path / "notes.wav"
    bad.write_text("not audio")
    with pytest.raises(AudioFileError) as caught:
        similar_to_file(filled, bad)
    assert str(caught.value).count(". ") == 0 and "notes.wav" in str(caught.value)
    with pytest.raises(LibraryError, match="no take #99"):
        similar_takes(filled, 99)


def test_a_library_from_before_embeddings_gains_them_in_one_pass(tmp_path: Path, renders,
                                                                 models):
    root = tmp_path / "library"
    with ClipLibrary(root) as library:
        for result in renders:
            library.add(result)
    conn = sqlite3.connect(root / "library.sqlite3")
    conn.execute("DROP TABLE embeddings")  # as every library was before issue 22
    conn.commit()
    conn.close()
    with ClipLibrary(root) as library:
        assert _stored(root) == []
        encoders = LatentEncoders(Catalog(models), library.latent_spaces())
        todo = library.takes_to_embed(encoders.spaces)
        assert [take_id for take_id, _ in todo] == list(range(1, len(renders) + 1))
        seen: list[tuple[int, int]] = []
        assert embed_missing(library, encoders, lambda done, total: seen.append(
            (done, total))) == len(renders)
        assert seen == [(i, len(renders)) for i in range(1, len(renders) + 1)]
        assert library.takes_to_embed(encoders.spaces) == []
        assert embed_missing(library, encoders) == 0  # nothing left: nothing done again
        # Re-encoded from the stored audio, the old takes still find their own prompts.
        found = similar_takes(library, 1, limit=len(SEEDS) - 1)
        assert [f.record.prompt for f in found] == [PROMPTS[0]] * (len(SEEDS) - 1)
    assert {row[1] for row in _stored(root)} == {"demo"}


def test_a_read_only_library_from_before_embeddings_is_searched_in_memory(tmp_path: Path,
                                                                          renders):
    from tests.engines.test_library import read_only_folder

    root = tmp_path / "library"
    with ClipLibrary(root) as library:
        for result in renders:
            library.add(result)
        library._conn.execute("DROP TABLE embeddings")
    before = (root / "library.sqlite3").read_bytes()
    with read_only_folder(root):
        with ClipLibrary(root) as library:
            assert library.read_only
            found = similar_takes(library, 4, limit=2)
            assert [f.record.prompt for f in found] == [PROMPTS[1]] * 2
            assert library.takes_to_embed() == []  # kept in memory for this session
    assert (root / "library.sqlite3").read_bytes() == before


def test_a_take_without_readable_audio_is_skipped_and_tried_again(tmp_path: Path, renders):
    root = tmp_path / "library"
    with ClipLibrary(root) as library:
        ids = [library.add(result).id for result in renders[:3]]
        library._conn.execute("DELETE FROM embeddings")
        library.get(ids[1]).audio_path.unlink()
        assert embed_missing(library) == 2
        assert [take_id for take_id, _ in library.takes_to_embed()] == [ids[1]]
        with pytest.raises(LibraryError, match="missing"):
            similar_takes(library, ids[1])


def test_imported_audio_without_latents_is_compared_by_its_sound(tmp_path: Path, renders):
    with ClipLibrary(tmp_path / "library") as library:
        for result in renders:
            library.add(result)
        source = renders[4]  # the second seed of the second prompt
        imported = library.add_imported(source.pcm.astype(np.float32) / 32767, "copy.wav")
        assert _stored(library.root)[-1][1] == ""  # no latents: audio features only
        found = similar_takes(library, imported.id, limit=1)
        assert found[0].record.prompt == source.request.prompt and not found[0].same_space


def test_stored_vectors_keep_the_ranking():
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((200, EMBEDDING_DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    restored = from_blobs([to_blob(v) for v in vectors])
    assert np.max(np.abs(restored @ vectors[0] - vectors @ vectors[0])) < 2e-3


def test_latent_parts_count_only_within_one_latent_space():
    """Two candidates, one sounding like the query (audio part), one whose latents match it:
    in the query's own space the latents decide, across spaces only the sound does."""
    audio_dims = EMBEDDING_DIM - LATENT_DIMS
    query = np.zeros(EMBEDDING_DIM, np.float32)
    query[0], query[LATENT_DIMS] = 1.0, 1.0
    sounds_alike = np.zeros(EMBEDDING_DIM, np.float32)
    sounds_alike[1], sounds_alike[LATENT_DIMS] = 1.0, 1.0
    latents_alike = np.zeros(EMBEDDING_DIM, np.float32)
    latents_alike[0], latents_alike[LATENT_DIMS + audio_dims - 1] = 2.0, 0.5
    for space in ("same-s", "same-l"):
        index = EmbeddingIndex(capacity=1)  # grows as takes come
        index.add_many([1, 2], [space, space], np.stack([sounds_alike, latents_alike]) /
                       np.linalg.norm(np.stack([sounds_alike, latents_alike]), axis=1,
                                      keepdims=True))
        ranked = [n.take_id for n in index.nearest(query / np.sqrt(2), "same-s", 2)]
        assert ranked == ([2, 1] if space == "same-s" else [1, 2]), space


def test_embedding_is_a_unit_vector_of_the_advertised_size(renders):
    result = renders[0]
    vector = take_embedding(result.pcm, 44100, result.latents)
    assert vector.dtype == np.float32 and vector.shape == (EMBEDDING_DIM,)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
    silent = take_embedding(np.zeros((100, 2), np.int16), 44100)
    assert np.all(np.isfinite(silent))
