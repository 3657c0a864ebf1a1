"""Synthetic team takes for bench_team.py's search figures: a vocabulary of sounds, tags and
designers, clustered sound embeddings (a library holds many takes of few kinds of sound), loaded
with COPY, and the index builds timed one by one."""

from __future__ import annotations

import time

import numpy as np

from engines.similarity.embedding import EMBEDDING_DIM, EMBEDDING_VERSION

ADJECTIVES = ("heavy light distant close muffled bright dark wet dry small large old rusty "
              "soft hard fast slow short long deep high low harsh gentle hollow sharp dull "
              "crisp warm cold loud quiet thin thick airy gritty smooth").split()
MATERIALS = ("wooden metal glass stone plastic paper cloth leather rubber ceramic concrete "
             "gravel sand water ice snow mud steel iron brass").split()
SOURCES = ("door footsteps engine wind rain thunder fire explosion gunshot sword punch bell "
           "whoosh impact creak crash splash drip hum buzz click beep laser coin pickup "
           "magic spell monster growl roar bird dog cat crowd applause car truck train "
           "plane helicopter boat river ocean waves forest insects cricket frog owl wolf "
           "horse clock alarm phone keyboard typewriter camera zipper drawer chair table "
           "window bottle cup plate knife chain rope whip arrow bow shield armor robot "
           "servo motor machine factory elevator escalator siren horn whistle drum cymbal "
           "guitar piano violin choir heartbeat breath scream laugh footstep jump land "
           "slide scrape rub tap knock bang thud pop crackle sizzle boil pour").split()
ACTIONS = ("slam open close hit fall break roll drag scrape rattle shake spin rise "
           "fade loop burst squeak").split()
TAGS = ("metal wood glass ui foley ambience impact whoosh magic weapon vehicle creature "
        "nature water fire electric mechanical footsteps voice music loop oneshot layer "
        "sweetener hero background short long dark bright cinematic retro").split()
MODELS = ("demo", "small", "medium", "large")
CLUSTERS = 1000
SPREAD = 0.35


def _zipf_choice(rng: np.random.Generator, count: int, size: int) -> np.ndarray:
    """Indices into `count` items, the first ones far more often (as words are used)."""
    weights = 1.0 / np.arange(1, count + 1)
    return rng.choice(count, size=size, p=weights / weights.sum())


def _vector_text(rows: np.ndarray) -> list[str]:
    """pgvector text for each row, written as scaled integers ("123e-5"): several times
    faster to format than floats, and read back as the same floats."""
    scaled = np.round(rows * 1e5).astype(np.int64)
    return ["[" + "e-5,".join(map(str, row)) + "e-5]" for row in scaled.tolist()]


def _chunk(rng: np.random.Generator, start: int, count: int, centers: np.ndarray) -> bytes:
    adjectives = _zipf_choice(rng, len(ADJECTIVES), count)
    materials = _zipf_choice(rng, len(MATERIALS), count)
    sources = _zipf_choice(rng, len(SOURCES), count)
    actions = _zipf_choice(rng, len(ACTIONS), count)
    cluster = rng.integers(0, CLUSTERS, count)
    vectors = centers[cluster] + SPREAD * rng.standard_normal((count, EMBEDDING_DIM)) / np.sqrt(
        EMBEDDING_DIM)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    texts = _vector_text(vectors.astype(np.float32))
    rated = rng.random(count) < 0.3
    ratings = np.where(rated, np.round(rng.uniform(1, 5, count) * 2) / 2, 0.0)
    tag_counts = rng.integers(0, 4, count)
    tag_picks = _zipf_choice(rng, len(TAGS), count * 3).reshape(count, 3)
    lines = []
    for i in range(count):
        n = start + i
        prompt = (f"{ADJECTIVES[adjectives[i]]} {MATERIALS[materials[i]]} "
                  f"{SOURCES[sources[i]]} {ACTIONS[actions[i]]}")
        tags = sorted({TAGS[t] for t in tag_picks[i][:tag_counts[i]]})
        day = 1 + n % 28
        lines.append("\t".join((
            f"{n:064x}", f"{n:064x}", "", prompt, "", str(n), MODELS[n % 4], "canonical", "t2a",
            "2.0", "44100", "88200", f'{{"seed": {n}}}', f"designer{n % 30:02d}",
            f"2026-11-{day:02d} 12:00:00+00", f"{ratings[i]:.1f}", "1" if rated[i] else "0",
            "{" + ",".join(tags) + "}", " ".join(tags), texts[i], str(EMBEDDING_VERSION))))
    return ("\n".join(lines) + "\n").encode("utf-8")


COLUMNS = ("take_key, content_sha256, name, prompt, negative_prompt, seed, model, tier, mode, "
           "seconds, sample_rate, samples, provenance, designer, created, rating_avg, "
           "rating_count, tag_list, tag_text, embedding, embedding_version")


def bulk_load(admin: str, rows: int, chunk: int = 20_000) -> dict:
    """`rows` synthetic takes into the (migrated, empty) team database at `admin`, its
    secondary indexes dropped for the load and built again one by one: the times."""
    import psycopg

    rng = np.random.default_rng(2026)
    centers = rng.standard_normal((CLUSTERS, EMBEDDING_DIM))
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    with psycopg.connect(admin, autocommit=True) as conn:
        indexes = conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = "
                               "'takes' AND indexname NOT IN ('takes_pkey', "
                               "'takes_take_key_key')").fetchall()
        for name, _ in indexes:
            conn.execute(f"DROP INDEX {name}")
        conn.execute("ALTER TABLE takes DISABLE TRIGGER USER")  # no million notifications
        began = time.perf_counter()
        with conn.cursor().copy(f"COPY takes ({COLUMNS}) FROM STDIN") as copy:
            for start in range(0, rows, chunk):
                copy.write(_chunk(rng, start, min(chunk, rows - start), centers))
        conn.execute("ANALYZE takes")
        load_s = time.perf_counter() - began
        conn.execute("SET maintenance_work_mem = '2GB'")
        conn.execute("SET max_parallel_maintenance_workers = 0")  # one core: the machine is shared
        index_s = {}
        for name, definition in sorted(indexes, key=lambda item: "embedding" in item[0]):
            began = time.perf_counter()
            conn.execute(definition)
            index_s[name] = time.perf_counter() - began
        conn.execute("ALTER TABLE takes ENABLE TRIGGER USER")
        size = conn.execute("SELECT pg_size_pretty(pg_total_relation_size('takes'))"
                            ).fetchone()[0]
    return {"load_s": load_s, "index_s": index_s, "table_size": size}


def query_texts(rng: np.random.Generator, count: int) -> list[str]:
    """Searches as designers type them: a common word, two words, a rare word, a prefix."""
    texts = []
    for n in range(count):
        kind = n % 4
        if kind == 0:
            texts.append(SOURCES[int(_zipf_choice(rng, len(SOURCES), 1)[0])])
        elif kind == 1:
            texts.append(f"{MATERIALS[int(rng.integers(len(MATERIALS)))]} "
                         f"{SOURCES[int(rng.integers(len(SOURCES)))]}")
        elif kind == 2:
            texts.append(SOURCES[-1 - int(rng.integers(20))])
        else:
            texts.append(SOURCES[int(rng.integers(len(SOURCES)))][:4])
    return texts


def recall_at_10(conn, probes: list[int]) -> tuple[float, float]:
    """(how many of the exact 10 nearest takes the HNSW index finds, on average; how much
    farther its 10th is than the exact 10th, relatively). Takes of one synthetic cluster lie
    at nearly equal distances, so a miss is mostly a near-tie: the second figure says so."""
    from engines.team.entries import TeamQuery
    from engines.team.records import similar

    found, gaps = 0, []
    for probe in probes:
        fast = similar(conn, probe, TeamQuery(limit=10), "bench")
        with conn.transaction():
            conn.execute("SET LOCAL enable_indexscan = off")
            exact = similar(conn, probe, TeamQuery(limit=10), "bench")
        found += len({e.id for e in fast} & {e.id for e in exact})
        gaps.append((fast[-1].distance - exact[-1].distance) / max(exact[-1].distance, 1e-9))
    return found / (10 * len(probes)), float(np.mean(gaps))
