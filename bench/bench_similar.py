"""Search by sound (issue 22): ranking quality on demo renders, and speed and size at 100,000 takes.

    python bench/bench_similar.py [--prompts N] [--seeds N] [--takes N] [--queries N]
                                  [--no-record]

1. Quality: N prompts x M seeds rendered by the demo model (CPU), kept in a real library
   (ClipLibrary.add embeds each take). For every take, precision@5: the share of its 5 nearest
   neighbours made from the same prompt (goal >= 0.8), against a random ranking (expected and
   measured). Also printed: the latent part and the audio part alone, and the path an old
   library takes (embeddings computed again from the stored audio through the demo encoder).
2. Scale: a library of `--takes` synthetic takes (real embedding size; clustered random unit
   vectors over several latent spaces), its database file growth from the embeddings (goal
   < 100 MB per 100,000), the time to load the index, and search p50/p95 over `--queries`
   queries: the index alone and `similar_takes` end to end (goal < 50 ms).
Results go to bench/results/similar-YYYYMMDD.log and .json unless --no-record.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engines.catalog import Catalog  # noqa: E402
from engines.generator import Generator  # noqa: E402
from engines.request import GenerationRequest  # noqa: E402
from engines.similarity.embedding import (  # noqa: E402
    EMBEDDING_DIM,
    LATENT_DIMS,
    audio_part,
)
from engines.similarity.encoding import LatentEncoders  # noqa: E402
from engines.store.embedding_backfill import embed_missing  # noqa: E402
from engines.store.library import ClipLibrary  # noqa: E402
from engines.store.sound_search import similar_takes  # noqa: E402

PROMPTS = ["rain on a tin roof", "rain on a window", "laser blast, sci-fi",
           "laser zap, retro game", "footsteps on gravel", "footsteps on wood",
           "church bell ringing", "bicycle bell", "coin pickup, bright", "thunder, distant rumble",
           "wind howling through trees", "glass shattering"]
LENGTHS = [1.0, 2.0, 3.5, 5.0, 1.5, 6.0]  # seconds, varied so length is no clue
K = 5
GOAL_PRECISION, GOAL_MS, GOAL_MB = 0.8, 50.0, 100.0
RESULTS = Path(__file__).resolve().parent / "results"


def precision_at_k(vectors: np.ndarray, labels: np.ndarray, k: int = K) -> float:
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    similarity = unit @ unit.T
    np.fill_diagonal(similarity, -np.inf)
    nearest = np.argsort(-similarity, axis=1, kind="stable")[:, :k]
    return float((labels[nearest] == labels[:, None]).mean())


def random_precision(labels: np.ndarray, rng: np.random.Generator, k: int = K) -> float:
    hits = []
    for i in range(len(labels)):
        others = np.delete(np.arange(len(labels)), i)
        hits.append((labels[rng.choice(others, k, replace=False)] == labels[i]).mean())
    return float(np.mean(hits))


def quality(prompts: int, seeds: int, work: Path, say) -> dict:
    models = work / "models"
    generator = Generator(Catalog(models))
    library = ClipLibrary(work / "quality-library")
    start = time.perf_counter()
    for p, prompt in enumerate(PROMPTS[:prompts]):
        for s in range(seeds):
            library.add(generator.generate(GenerationRequest(
                prompt=prompt, seed=1000 + 37 * s, seconds=LENGTHS[(p + s) % len(LENGTHS)],
                backend="onnxruntime")))
    generator.close()
    rendered = time.perf_counter() - start
    index = library.similarity_index()
    records = library.search(limit=None, sort="created", descending=False)
    ids = [r.id for r in records]
    labels = np.array([PROMPTS.index(r.prompt) for r in records])
    vectors = np.stack([index.vector(i)[1] for i in ids])
    end_to_end = np.mean([np.mean([f.record.prompt == r.prompt
                                   for f in similar_takes(library, r.id, K)]) for r in records])
    # An old library's path: the same takes, as a library from before embeddings, opened and
    # embedded again from their stored audio.
    library.close()
    conn = sqlite3.connect(work / "quality-library" / "library.sqlite3")
    conn.execute("DROP TABLE embeddings")
    conn.commit()
    conn.close()
    library = ClipLibrary(work / "quality-library")
    encoders = LatentEncoders(Catalog(models), library.latent_spaces())
    start = time.perf_counter()
    embed_missing(library, encoders)
    migrated_s = time.perf_counter() - start
    index = library.similarity_index()
    migrated = np.stack([index.vector(i)[1] for i in ids])
    library.close()
    figures = {
        "renders": len(ids), "prompts": prompts, "seeds": seeds, "render_s": rendered,
        "precision_at_5": float(end_to_end),
        "precision_at_5_latent_part": precision_at_k(vectors[:, :LATENT_DIMS], labels),
        "precision_at_5_audio_part": precision_at_k(audio_part(vectors), labels),
        "precision_at_5_reembedded_from_audio": precision_at_k(migrated, labels),
        "reembed_ms_per_take": migrated_s * 1e3 / len(ids),
        "random_expected": (seeds - 1) / (len(ids) - 1) if len(ids) > 1 else 0.0,
        "random_measured": random_precision(labels, np.random.default_rng(0)),
    }
    say(f"demo renders: {prompts} prompts x {seeds} seeds = {len(ids)} takes "
        f"(rendered and kept in {rendered:.1f} s)")
    say(f"  precision@5, library search (similar_takes)  {figures['precision_at_5']:.3f}  "
        f"(goal >= {GOAL_PRECISION}: {'met' if end_to_end >= GOAL_PRECISION else 'NOT met'})")
    say(f"  random ranking: expected {figures['random_expected']:.3f}, measured "
        f"{figures['random_measured']:.3f}")
    say(f"  latent part alone {figures['precision_at_5_latent_part']:.3f}, audio part alone "
        f"{figures['precision_at_5_audio_part']:.3f}")
    say(f"  re-embedded from stored audio (old library pass, demo encoder) "
        f"{figures['precision_at_5_reembedded_from_audio']:.3f}, "
        f"{figures['reembed_ms_per_take']:.1f} ms a take")
    return figures


def synthetic_vectors(count: int, rng: np.random.Generator) -> tuple[np.ndarray, list[str]]:
    """Clustered unit vectors (1 centre per 50 takes), a quarter of them audio-only."""
    centres = rng.standard_normal((max(1, count // 50), EMBEDDING_DIM)).astype(np.float32)
    vectors = centres[rng.integers(0, len(centres), count)]
    vectors += 0.4 * rng.standard_normal((count, EMBEDDING_DIM)).astype(np.float32)
    spaces = list(rng.choice(["same-s", "same-l", "demo", ""], count, p=[.4, .25, .1, .25]))
    vectors[np.array(spaces) == "", :LATENT_DIMS] = 0.0
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors, spaces


def _db_bytes(root: Path) -> int:
    conn = sqlite3.connect(root / "library.sqlite3")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return sum(p.stat().st_size for p in root.glob("library.sqlite3*"))


def percentiles(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered), ordered[min(len(ordered) - 1,
                                                   int(round(0.95 * (len(ordered) - 1))))]


def scale(count: int, queries: int, work: Path, say) -> dict:
    rng = np.random.default_rng(1)
    root = work / "scale-library"
    library = ClipLibrary(root)
    created = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    with library._db.write():  # bare take rows: what the size and search figures need
        library._conn.executemany(
            "INSERT INTO takes (id, created, prompt, model, decoder, seconds, mode, audio_file, "
            "sample_rate, samples) VALUES (?, ?, ?, 'sm-sfx', 'same-s', 2.0, 't2a', ?, 44100, "
            "88200)", [(i, created, f"take {i}", f"{i:06d}.wav") for i in range(1, count + 1)])
    before = _db_bytes(root)
    vectors, spaces = synthetic_vectors(count, rng)
    start = time.perf_counter()
    with library._db.write():
        for i in range(count):
            library._embeddings.insert(i + 1, (spaces[i], vectors[i]))
    stored_s = time.perf_counter() - start
    growth = _db_bytes(root) - before
    library.close()

    library = ClipLibrary(root)
    start = time.perf_counter()
    index = library.similarity_index()
    load_ms = (time.perf_counter() - start) * 1e3
    picks = rng.integers(1, count + 1, queries)
    start = time.perf_counter()  # the first search after opening also checks every take
    similar_takes(library, int(picks[0]), 10)  # has an embedding (then remembered)
    first_ms = (time.perf_counter() - start) * 1e3
    index_times, full_times = [], []
    for take_id in picks:
        space, vector = index.vector(int(take_id))
        start = time.perf_counter()
        index.nearest(vector, space, 10, exclude={int(take_id)})
        index_times.append((time.perf_counter() - start) * 1e3)
    for take_id in picks:
        start = time.perf_counter()
        similar_takes(library, int(take_id), 10)
        full_times.append((time.perf_counter() - start) * 1e3)
    library.close()
    index_p50, index_p95 = percentiles(index_times)
    full_p50, full_p95 = percentiles(full_times)
    per_100k = growth * 100_000 / count
    figures = {"takes": count, "queries": queries, "db_growth_bytes": growth,
               "bytes_per_take": growth / count, "mb_per_100k": per_100k / 1e6,
               "store_s": stored_s, "index_load_ms": load_ms, "first_search_ms": first_ms,
               "index_search_p50_ms": index_p50, "index_search_p95_ms": index_p95,
               "similar_takes_p50_ms": full_p50, "similar_takes_p95_ms": full_p95}
    say(f"synthetic library: {count} takes, {EMBEDDING_DIM} values each")
    say(f"  database growth from embeddings {growth / 1e6:.1f} MB = {growth / count:.0f} bytes "
        f"a take = {per_100k / 1e6:.1f} MB per 100,000 (goal < {GOAL_MB:.0f} MB: "
        f"{'met' if per_100k / 1e6 < GOAL_MB else 'NOT met'}); stored in {stored_s:.1f} s")
    say(f"  index load {load_ms:.0f} ms (once per library, then kept in step); first search "
        f"after opening {first_ms:.0f} ms (checks every take has an embedding)")
    say(f"  search, index alone        p50 {index_p50:6.1f} ms  p95 {index_p95:6.1f} ms")
    say(f"  similar_takes, end to end  p50 {full_p50:6.1f} ms  p95 {full_p95:6.1f} ms  "
        f"(goal < {GOAL_MS:.0f} ms: {'met' if full_p50 < GOAL_MS else 'NOT met'} at p50, "
        f"{'met' if full_p95 < GOAL_MS else 'NOT met'} at p95)")
    load = os.getloadavg()
    say(f"  load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on "
        f"{os.cpu_count()} CPUs (other work on this machine slows every figure)")
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--takes", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    if not 2 <= args.prompts <= len(PROMPTS) or args.seeds < K + 1:
        parser.error(f"--prompts 2..{len(PROMPTS)} and --seeds {K + 1} or more")
    log = io.StringIO()

    def say(line: str) -> None:
        print(line, flush=True)
        log.write(line + "\n")

    load = os.getloadavg()
    say(f"bench_similar {dt.datetime.now().isoformat(timespec='seconds')}; {os.cpu_count()} "
        f"CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    with tempfile.TemporaryDirectory(prefix="sa3-similar-bench-") as temp:
        figures = {"quality": quality(args.prompts, args.seeds, Path(temp), say),
                   "scale": scale(args.takes, args.queries, Path(temp), say)}
    if not args.no_record:
        RESULTS.mkdir(exist_ok=True)
        stem = RESULTS / f"similar-{dt.date.today():%Y%m%d}"
        stem.with_suffix(".log").write_text(log.getvalue())
        stem.with_suffix(".json").write_text(json.dumps(figures, indent=2) + "\n")
        say(f"recorded in {stem}.log and .json")
    met = (figures["quality"]["precision_at_5"] >= GOAL_PRECISION
           and figures["scale"]["similar_takes_p50_ms"] < GOAL_MS
           and figures["scale"]["mb_per_100k"] < GOAL_MB)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
