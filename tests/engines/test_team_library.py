"""The team library against a real PostgreSQL (engines.team): publishing is idempotent and
complete, designers working at once lose nothing, another designer's take is seen within a
second, a read-only login cannot change anything, and every fetched file is checked."""

from __future__ import annotations

import json
import random
import threading
import time
from urllib.parse import urlsplit

import numpy as np
import psycopg
import pytest
import soundfile as sf

from engines.similarity.embedding import take_embedding
from engines.store.library import ClipLibrary
from engines.team.connection import parse_line
from engines.team.entries import TeamQuery
from engines.team.errors import TeamError, TeamRefused, TeamUnreachable
from engines.team.service import TeamLibrary
from tests.hostile_support import sha256_of
from tests.team_support import (
    PortForward,
    add_take,
    engine_files,
    require_postgres,
    rows,
    team_library,
    with_port,
)

require_postgres()


def test_publishing_twice_is_one_entry_with_every_file_in_the_store(team_server, team_db, local,
                                                                   tmp_path):
    library, files = local
    rain = add_take(library, files, "rain on a tin roof", 1)
    library.update(rain.id, rating=4, tags=["rain", "Ambience"], notes="good tail")
    with team_library(team_db, "alice", tmp_path / "outbox") as team:
        first = team.publish(library, [rain.id])
        again = team.publish(library, [rain.id, rain.id])
        entry = team.entry(first.published[0][1])
    assert [(r[0], r[2]) for r in first.published] == [(rain.id, True)]
    assert [(r[1], r[2]) for r in again.published] == [(entry.id, False)]
    assert first.waiting == again.waiting == 0
    admin = team_server.admin(team_db)
    assert rows(admin, "SELECT count(*) FROM takes") == [(1,)]
    assert (entry.prompt, entry.seed, entry.designer) == ("rain on a tin roof", 1, "alice")
    assert entry.rating_average == 4 and entry.rating_count == 1 and entry.my_rating == 4
    assert entry.tags == ["Ambience", "rain"]  # as given, ordered without case
    assert rows(admin, "SELECT designer, body FROM notes") == [("alice", "good tail")]
    # The take's own file and sidecar, in the store under their SHA-256, read-only.
    assert sorted(f.role for f in entry.files) == ["take", "take-sidecar"]
    store = team_server.root / "store"
    for file in entry.files:
        stored = store / file.sha256[:2] / file.sha256
        assert sha256_of(stored) == file.sha256 and stored.stat().st_size == file.size
        assert not stored.stat().st_mode & 0o222
    audio = next(f for f in entry.files if f.role == "take")
    samples, rate = sf.read(store / audio.sha256[:2] / audio.sha256, dtype="int16")
    assert rate == 44100 and np.array_equal(samples, library.load_audio(rain.id))
    provenance = rows(admin, "SELECT provenance FROM takes")[0][0]
    assert provenance["request"]["prompt"] == "rain on a tin roof"
    assert "output" not in provenance  # where the file lay on alice's machine


def test_a_finished_take_brings_its_finished_file(team_db, local, tmp_path):
    from engines.finish.finished_take import finish_take
    from engines.finish.settings import FinishSettings

    library, files = local
    take = add_take(library, files, "door slam", 3, "tone:300", seconds=1.0)
    settings = FinishSettings(fade_out_ms=200.0)
    finished = finish_take(library.load_float_audio(take.id), settings)
    library.set_finishing(take.id, finished.record())
    with team_library(team_db, "alice", tmp_path / "outbox") as team:
        entry = team.entry(team.publish(library, [take.id]).published[0][1])
    roles = sorted(f.role for f in entry.files)
    assert roles == ["finished", "finished-sidecar", "take", "take-sidecar"]
    names = {f.role: f.name for f in entry.files}
    assert names["take"].endswith("_raw.wav") and not names["finished"].endswith("_raw.wav")


def test_a_batch_folder_publishes_its_takes_with_the_delivered_files(team_db, local, tmp_path):
    library, files = local
    takes = [add_take(library, files, f"coin {n}", n) for n in range(3)]
    out = tmp_path / "batch"
    out.mkdir()
    paths = library.export([t.id for t in takes], out)
    items = [{"status": "ok", "library_id": t.id, "file": p.name}
             for t, p in zip(takes, paths, strict=True)]
    items.append({"status": "failed", "library_id": None, "file": "broken.wav"})
    (out / "manifest.json").write_text(json.dumps({"items": items}))
    with team_library(team_db, "bob", tmp_path / "outbox") as team:
        report = team.publish_batch(library, out)
        entries = [team.entry(team_id) for _, team_id, _ in report.published]
    assert sorted(local_id for local_id, _, _ in report.published) == [t.id for t in takes]
    for entry, path in zip(sorted(entries, key=lambda e: e.prompt), paths, strict=True):
        # The batch's file is one of the entry's (here the raw take itself, so not twice).
        assert sha256_of(path) in {f.sha256 for f in entry.files}
        assert [f.role for f in entry.files].count("take") == 1
    with team_library(team_db, "bob", tmp_path / "outbox") as team, \
            pytest.raises(TeamError, match="manifest"):
        team.publish_batch(library, tmp_path)


def test_concurrent_publishers_lose_nothing_and_duplicate_nothing(team_server, team_db,
                                                                  tmp_path):
    # Four designers, five takes each; takes 0-1 of every designer are the same sounds
    # (same request, same samples), so the team must hold 2 + 4 * 3 = 14 entries.
    designers = ["ann", "ben", "cleo", "dev"]
    for name in designers:
        library = ClipLibrary(tmp_path / name / "library")
        files = engine_files(tmp_path / "engines")
        for n in range(5):
            shared = n < 2
            record = add_take(library, files, f"{'shared' if shared else name} take {n}",
                              n if shared else 100 + n + 10 * designers.index(name))
            library.update(record.id, rating=1 + designers.index(name), tags=[name])
        library.close()  # each publisher opens it on its own thread (sqlite3's rule)
    errors: list[BaseException] = []
    start = threading.Barrier(len(designers))

    def publish(name: str) -> None:
        try:
            with team_library(team_db, name, tmp_path / name / "outbox") as team, \
                    ClipLibrary(tmp_path / name / "library") as library:
                start.wait()
                report = team.publish(library, range(1, 6))
                assert len(report.published) == 5 and report.waiting == 0
        except BaseException as err:  # noqa: BLE001 - handed to the main thread
            errors.append(err)

    threads = [threading.Thread(target=publish, args=(name,)) for name in designers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    admin = team_server.admin(team_db)
    assert rows(admin, "SELECT count(*), count(DISTINCT take_key) FROM takes") == [(14, 14)]
    shared = rows(admin, "SELECT rating_count, rating_avg, tag_list FROM takes WHERE "
                         "prompt LIKE 'shared%' ORDER BY id")
    assert shared == [(4, 2.5, designers)] * 2  # every designer's stars and tags, none lost
    assert rows(admin, "SELECT count(*) FROM takes t WHERE NOT EXISTS (SELECT 1 FROM "
                       "take_files f WHERE f.take_id = t.id AND f.role = 'take')") == [(0,)]


def test_ratings_and_tags_per_designer_have_no_lost_updates(team_server, team_db, local,
                                                            tmp_path):
    library, files = local
    take = add_take(library, files, "wind", 5)
    with team_library(team_db, "owner", tmp_path / "outbox") as team:
        team_id = team.publish(library, [take.id]).published[0][1]
    designers = [f"d{n}" for n in range(8)]
    final: dict[str, tuple[int, set[str]]] = {}
    errors: list[BaseException] = []

    def work(name: str) -> None:
        rng = random.Random(name)
        try:
            with team_library(team_db, name, tmp_path / f"outbox-{name}") as team:
                tags: set[str] = set()
                stars = 0
                for _ in range(15):
                    stars = rng.randint(1, 5)
                    team.rate(team_id, stars)
                    tag = f"{name}-{rng.randint(0, 3)}"
                    if tag in tags:
                        team.tag(team_id, remove=[tag])
                        tags.discard(tag)
                    else:
                        team.tag(team_id, [tag])
                        tags.add(tag)
                final[name] = (stars, tags)
        except BaseException as err:  # noqa: BLE001
            errors.append(err)

    threads = [threading.Thread(target=work, args=(name,)) for name in designers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    admin = team_server.admin(team_db)
    stored = dict(rows(admin, "SELECT designer, stars FROM ratings"))
    assert stored == {name: stars for name, (stars, _) in final.items()}
    count, average, tag_list = rows(admin, "SELECT rating_count, rating_avg, tag_list FROM "
                                           "takes WHERE id = %s", (team_id,))[0]
    assert count == 8
    assert average == pytest.approx(sum(s for s, _ in final.values()) / 8, abs=1e-5)
    assert tag_list == sorted(set().union(*(tags for _, tags in final.values())))


def test_another_designers_take_is_seen_within_a_second(team_db, local, tmp_path):
    library, files = local
    takes = [add_take(library, files, f"laser {n}", n) for n in range(3)]
    with team_library(team_db, "watcher", tmp_path / "w") as watching, \
            team_library(team_db, "maker", tmp_path / "m") as making:
        watcher = watching.watch()
        assert watcher.poll(0.05) == []  # connected, nothing new yet
        seen: list[tuple[int, float]] = []

        def watch() -> None:
            deadline = time.monotonic() + 10
            while len(seen) < 3 and time.monotonic() < deadline:
                seen.extend((e.id, time.monotonic()) for e in watcher.poll(0.5))

        thread = threading.Thread(target=watch)
        thread.start()
        published: list[tuple[int, float]] = []
        for take in takes:
            team_id = making.publish(library, [take.id]).published[0][1]
            published.append((team_id, time.monotonic()))
            time.sleep(0.2)
        thread.join(15)
        watcher.close()
    assert [team_id for team_id, _ in seen] == [team_id for team_id, _ in published]
    delays = [s - p for (_, s), (_, p) in zip(seen, published, strict=True)]
    print(f"\nnotify delays: {', '.join(f'{d * 1000:.0f} ms' for d in delays)}")
    assert max(delays) < 1.0


def test_a_read_only_login_can_browse_but_not_change(team_server, team_db, local, tmp_path):
    library, files = local
    take = add_take(library, files, "thunder", 2)
    with team_library(team_db, "pub", tmp_path / "p") as team:
        team_id = team.publish(library, [take.id]).published[0][1]
    with team_library(team_db, "reader", tmp_path / "r", reader=True) as reader:
        assert [e.id for e in reader.find()] == [team_id]
        assert reader.fetch(team_id, tmp_path / "got")
        with pytest.raises(TeamRefused, match="may only read"):
            reader.publish(library, [add_take(library, files, "other", 3).id])
        assert reader.outbox.count() == 0  # refused, not queued in vain
        with pytest.raises(TeamRefused, match="may only read"):
            reader.rate(team_id, 5)
        with psycopg.connect(team_db.reader_line) as conn, \
                pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE takes SET prompt = 'x'")
    assert rows(team_server.admin(team_db), "SELECT count(*), max(rating_count) FROM takes") \
        == [(1, 0)]


def test_fetch_checks_every_file_against_its_sha256(team_server, team_db, local, tmp_path):
    library, files = local
    take = add_take(library, files, "bell", 4, "tone:880")
    with team_library(team_db, "alice", tmp_path / "o") as team:
        team_id = team.publish(library, [take.id]).published[0][1]
        got = team.fetch(team_id, tmp_path / "first")
        again = team.fetch(team_id, tmp_path / "first")  # never replaces: numbered names
        entry = team.entry(team_id)
        assert {sha256_of(p) for p in got} == {f.sha256 for f in entry.files}
        assert [p.name for p in again] == [p.stem + "_2" + p.suffix for p in got]
        audio = next(f for f in entry.files if f.role == "take")
        stored = team_server.root / "store" / audio.sha256[:2] / audio.sha256
        stored.chmod(0o644)
        damaged = bytearray(stored.read_bytes())
        damaged[-1] ^= 0xFF
        stored.write_bytes(bytes(damaged))
        with pytest.raises(TeamError, match="damaged"):
            team.fetch(team_id, tmp_path / "second")
        assert list((tmp_path / "second").iterdir()) == []  # no file, no temporary


def test_search_filters_and_more_like_this(team_server, team_db, local, tmp_path):
    library, files = local
    kinds = {"low hum": "tone:110", "low drone": "tone:120", "hiss": "noise",
             "high whistle": "tone:4000", "footsteps on gravel": "noise"}
    records = {p: add_take(library, files, p, n, kind) for n, (p, kind) in
               enumerate(kinds.items())}
    library.update(records["hiss"].id, tags=["Air"])
    with team_library(team_db, "alice", tmp_path / "o") as team:
        report = team.publish(library, [r.id for r in records.values()])
        ids = {p: report.published[n][1] for n, p in enumerate(kinds)}
        team.rate(ids["low drone"], 5)
        assert [e.prompt for e in team.find(TeamQuery(text="foot"))] == ["footsteps on gravel"]
        assert [e.prompt for e in team.find(TeamQuery(text="LOW"))] == ["low drone", "low hum"]
        assert [e.prompt for e in team.find(TeamQuery(text="air"))] == ["hiss"]  # its tag
        assert [e.prompt for e in team.find(TeamQuery(tags=("air",)))] == ["hiss"]
        assert [e.prompt for e in team.find(TeamQuery(min_rating=4))] == ["low drone"]
        assert len(team.find(TeamQuery(limit=2))) == 2
        near = team.similar(ids["low hum"])
        with pytest.raises(TeamError, match="no take #999"):
            team.similar(999)
    # The order and distances are the cosine distances of the embeddings, computed here.
    vectors = {p: take_embedding(library.load_audio(records[p].id), 44100) for p in kinds}
    expected = sorted((1.0 - float(np.dot(vectors["low hum"], vectors[p])), p)
                      for p in kinds if p != "low hum")
    assert [e.prompt for e in near] == [p for _, p in expected]
    assert [e.distance for e in near] == pytest.approx([d for d, _ in expected], abs=1e-4)
    assert near[0].prompt == "low drone"


def test_unreachable_server_queues_publishes_and_says_so_once(team_db, local, tmp_path):
    library, files = local
    take = add_take(library, files, "creak", 7)
    forward = PortForward(urlsplit(team_db.publisher_line).port)
    line = parse_line(with_port(team_db.publisher_line, forward.port))
    with TeamLibrary(line, "alice", tmp_path / "o") as team:
        report = team.publish(library, [take.id])  # nothing listens at that port yet
        assert report.published == [] and report.waiting == 1
        assert "cannot be reached" in report.unreachable and "outbox" in report.unreachable
        assert team.notice == report.unreachable
        with pytest.raises(TeamUnreachable):
            team.find()
        assert team.notice == report.unreachable  # the same sentence, once
        forward.open()  # the server is back at the same address
        try:
            sent = team.send_queued()
            assert [(r[0], r[2]) for r in sent.published] == [(take.id, True)]
            assert sent.waiting == 0 and team.outbox.count() == 0 and team.notice is None
            assert [e.prompt for e in team.find()] == ["creak"]
        finally:
            forward.close()
    assert not any((tmp_path / "o" / "outbox").iterdir())  # its files went with it


def test_a_store_out_of_reach_queues_and_a_local_copy_is_fetched_once(team_server, team_db,
                                                                      local, tmp_path):
    library, files = local
    take = add_take(library, files, "alarm", 8, "tone:1000")
    gone = tmp_path / "unmounted" / "store"
    line = parse_line(f"{team_db.publisher_line}?store={gone}")
    assert line.store == gone and parse_line(line.line()) == line
    with TeamLibrary(line, "alice", tmp_path / "o") as team:
        report = team.publish(library, [take.id])
        assert report.waiting == 1 and str(gone) in report.unreachable
    with team_library(team_db, "alice", tmp_path / "o") as team:  # the store the server knows
        team_id = team.send_queued().published[0][1]
        copy = team.local_copy(team_id)
        assert copy.parent.name == "team" and copy.stat().st_size > 0
        audio = next(f for f in team.entry(team_id).files if f.role == "take")
        assert copy.name == audio.sha256 + ".wav" and sha256_of(copy) == audio.sha256
        stamp = copy.stat().st_mtime_ns
        assert team.local_copy(team_id) == copy and copy.stat().st_mtime_ns == stamp


def test_a_tag_filter_finds_that_tag_not_the_same_words_elsewhere(team_db, local, tmp_path):
    library, files = local
    plain = add_take(library, files, "hero door slam", 1)
    tagged = add_take(library, files, "metal slam", 2)
    backwards = add_take(library, files, "latch", 3)
    library.update(tagged.id, tags=["Hero Door"])
    library.update(backwards.id, tags=["door", "hero"])
    accented = add_take(library, files, "espresso cup", 4)
    library.update(accented.id, tags=["Café Ambience"])
    with team_library(team_db, "alice", tmp_path / "o") as team:
        team.publish(library, [plain.id, tagged.id, backwards.id, accented.id])
        assert [e.prompt for e in team.find(TeamQuery(tags=("CAFÉ AMBIENCE",)))] == \
            ["espresso cup"]  # lower case beyond ASCII
        assert team.find(TeamQuery(text="café"))[0].tags == ["Café Ambience"]  # as given
        assert [e.prompt for e in team.find(TeamQuery(tags=("hero door",)))] == ["metal slam"]
        assert [e.prompt for e in team.find(TeamQuery(tags=("door", "hero")))] == ["latch"]
        assert [e.prompt for e in team.find(TeamQuery(text="hero"))] == \
            ["latch", "metal slam", "hero door slam"]  # words find prompts and tags alike
