"""Library timings with 10,000 takes: search, filters, sort, open a take, open the library.

    python bench/bench_library.py [--takes N] [--repeats N] [--root DIR]

Fills a fresh library quickly: a few dozen takes go through `ClipLibrary.add` (audio written,
hashed, embedded note), the rest reuse the same row-building code and insert their rows in one
transaction, each pointing at its own hard link of a real 5 s take (so audio/ holds N files,
as a real library would, without N times the disk space). Everything timed is the public API
on that library. Goal: every operation under 100 ms.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engines.backends.base import GenerationResult  # noqa: E402
from engines.catalog import EngineFiles  # noqa: E402
from engines.request import GenerationRequest, validate_request  # noqa: E402
from engines.store.library import ClipLibrary  # noqa: E402

GOAL_MS = 100.0
REAL_ADDS = 40
SOUNDS = ["rain", "wind", "thunder", "laser", "door", "footsteps", "engine", "bell", "glass",
          "crowd", "forest", "metal", "explosion", "coin", "whoosh", "water", "fire", "birds",
          "creak", "sword", "magic", "alarm", "heartbeat", "drone"]
WORDS = ["heavy", "light", "distant", "close", "on a tin roof", "in a cave", "short", "long",
         "bright", "dark", "metallic", "wet", "loop", "impact", "soft", "harsh", "reversed"]
MODELS = ["demo", "sm-sfx", "sm-music", "medium"]


def engine_files(folder: Path) -> EngineFiles:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for role in ("text_encoder", "tokenizer", "dit", "decoder", "encoder"):
        paths[role] = folder / f"{role}.bin"
        paths[role].write_bytes(os.urandom(1 << 20))
    return EngineFiles(format="onnx", codec_tier="canonical", **paths)


def result_for(files: EngineFiles, rng: random.Random, pcm: np.ndarray) -> GenerationResult:
    prompt = f"{rng.choice(WORDS)} {rng.choice(SOUNDS)}, {rng.choice(WORDS)}"
    req = validate_request(GenerationRequest(
        prompt=prompt, seed=rng.randrange(2**32), seconds=rng.choice([1.0, 2.5, 5.0]),
        model=rng.choice(MODELS), cfg=rng.choice([1.0, 3.0]), steps=rng.choice([8, 20])),
        max_seconds=380.0)
    return GenerationResult(pcm=pcm, latents=np.zeros((256, 1), np.float32),
                            step_latents=np.zeros((1, 256, 1), np.float32), seed=req.seed,
                            timings_ms={"text": 3.0, "sample": 250.0, "decode": 80.0,
                                        "total": 333.0},
                            backend="tensorrt", request=req, files=files)


def fill(lib: ClipLibrary, files: EngineFiles, count: int, rng: random.Random) -> float:
    """Returns seconds spent. Rows get created times spread over the last year."""
    start = time.perf_counter()
    pcm = np.random.default_rng(0).integers(-8000, 8000, (5 * 44100, 2), dtype=np.int16)
    real = [lib.add(result_for(files, rng, pcm)) for _ in range(min(REAL_ADDS, count))]
    now = dt.datetime.now(dt.UTC)
    with lib._db.write():  # the same row code as add(); audio is a hard link per take
        for index in range(len(real), count):
            row, _, _ = lib._keeper._row_for_result(result_for(files, rng, pcm), None, "",
                                                    None)
            take_id = lib._db.next_id()
            name = f"{take_id:06d}-bench.wav"
            os.link(real[index % len(real)].audio_path, lib.audio_dir / name)
            created = now - dt.timedelta(minutes=rng.randrange(525_600))
            row.update(created=created.isoformat(timespec="milliseconds"),
                       rating=rng.choice([0, 0, 0, 1, 2, 3, 4, 5]),
                       favourite=int(rng.random() < 0.1))
            lib._db.insert_take({"id": take_id, **row, "audio_file": name})
    for take_id in rng.sample(range(1, count + 1), count // 20):
        lib.update(take_id, tags=[rng.choice(SOUNDS), "keeper"], notes="use in level 3")
    return time.perf_counter() - start


def timed(action, repeats: int) -> tuple[float, float, object]:
    times, value = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        value = action()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), max(times), value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--takes", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--root", type=Path, help="where to build it (default: a temp folder)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="sa3-library-bench-") as temp:
        base = args.root or Path(temp)
        root = base / "library"
        if root.exists():
            print(f"{root} exists; give an empty --root.")
            return 2
        rng = random.Random(42)
        files = engine_files(base / "engines")
        lib = ClipLibrary(root)
        seconds = fill(lib, files, args.takes, rng)
        total = lib.count()
        lib.close()
        size = (root / "library.sqlite3").stat().st_size / 1e6
        print(f"library: {total} takes, database {size:.1f} MB, filled in {seconds:.1f} s "
              f"({REAL_ADDS} through add(), FTS5 search: ", end="")

        open_median, open_max, lib = timed(lambda: ClipLibrary(root), 1)
        print(f"{'yes' if lib._db.use_fts else 'no, LIKE'})")
        ids = [rng.randrange(1, total + 1) for _ in range(args.repeats)]
        picks = iter(ids * 3)
        month_ago = (dt.datetime.now(dt.UTC) - dt.timedelta(days=30)).date().isoformat()
        cases = [
            ("open the library (migrate check, tidy, FTS check)",
             lambda: ClipLibrary(root).close()),
            ('search("rain"), newest 200', lambda: lib.search("rain")),
            ('search("rain tin roof")', lambda: lib.search("rain tin roof")),
            ('search("keeper") (a tag)', lambda: lib.search("keeper")),
            ('search("on") (2 letters: LIKE scan)', lambda: lib.search("on")),
            ("search, no text, newest 200", lambda: lib.search()),
            ('search("wind", model, min_rating 3, last 30 days)',
             lambda: lib.search("wind", model="sm-sfx", min_rating=3, since=month_ago)),
            ("search(favourite, sort rating)", lambda: lib.search(favourite=True,
                                                                  sort="rating")),
            ('search(sort="rating"), top 200', lambda: lib.search(sort="rating")),
            ('search(sort="prompt", ascending)', lambda: lib.search(sort="prompt",
                                                                    descending=False)),
            ('count("rain")', lambda: lib.count("rain")),
            ("get(id)", lambda: lib.get(next(picks))),
            ("open a take: get(id) + load_audio(id) of a 5 s WAV",
             lambda: (lib.get(i := next(picks)), lib.load_audio(i))),
        ]
        print(f"{'operation':58} {'median ms':>10} {'max ms':>10}  rows")
        worst = 0.0
        for label, action in cases:
            median, most, value = timed(action, args.repeats)
            rows = len(value) if isinstance(value, list) else (value if isinstance(value, int)
                                                                else "")
            worst = max(worst, median)
            print(f"{label:58} {median:10.2f} {most:10.2f}  {rows}")
        lib.close()
        verdict = "met" if worst < GOAL_MS else "MISSED"
        print(f"goal: every median under {GOAL_MS:.0f} ms: {verdict} (worst median "
              f"{worst:.1f} ms; first open after filling {open_median:.1f} ms)")
        return 0 if worst < GOAL_MS else 1


if __name__ == "__main__":
    sys.exit(main())
