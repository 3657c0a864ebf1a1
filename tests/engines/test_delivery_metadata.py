"""Embedded metadata of delivered files (bext, iXML with USER and ASWG, smpl + cue, Vorbis
comments) and the user's UCS list, checked with independent readers: wavinfo for the WAV
chunks, soundfile for the audio, Python's XML parser for the iXML document, mutagen for
FLAC and Ogg Vorbis comments."""

from __future__ import annotations

import datetime as dt
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import mutagen.flac
import mutagen.oggvorbis
import numpy as np
import pytest
import soundfile as sf
import wavinfo

from engines.delivery import riff, ucs
from engines.delivery.ixml import ASWG_FIELDS, ixml_document
from engines.delivery.riff import add_loop_points
from engines.delivery.vorbis_fields import add_vorbis_fields, vorbis_fields
from engines.errors import AudioFileError, RequestError
from engines.finish.smpl import wav_layout

NOTE = '{"app":"SA3 Studio","seed":7}'
FRAMES = 4000
RATE = 48000
WHEN = dt.datetime(2025, 3, 4, 5, 6, 7)


def _write_wav(path: Path, subtype: str = "PCM_16") -> np.ndarray:
    audio = np.random.default_rng(3).uniform(-0.5, 0.5, (FRAMES, 2)).astype(np.float32)
    with sf.SoundFile(str(path), "w", RATE, 2, subtype, format="WAV") as handle:
        handle.title = "Door creak"
        handle.comment = NOTE
        handle.write(audio)
    return sf.read(str(path), dtype="int16" if subtype == "PCM_16" else "float32")[0]


def _order(path: Path) -> list[bytes]:
    return [chunk_id for chunk_id, _, _ in wav_layout(path.read_bytes(), path).chunks]


def _chunks(path: Path) -> dict[bytes, bytes]:
    data = path.read_bytes()
    return {cid: data[off + 8:off + 8 + size] for cid, off, size in
            wav_layout(data, path).chunks}


def _bext(**overrides: object) -> bytes:
    fields: dict[str, object] = dict(
        description="Old wooden door creaking", originator="SA3 Studio",
        originator_reference="take-42", origination=WHEN, time_reference=96000,
        loudness_value=-23.04, loudness_range=4.5, max_true_peak=-1.2,
        coding_history=["A=PCM,F=48000,W=16,M=stereo,T=SA3 Studio", "finish: trim, fades"])
    fields.update(overrides)
    return riff.bext_payload(**fields)


USER = {"DESCRIPTION": "Old wooden door creaking", "CATEGORY": "DOORS", "SUBCATEGORY": "WOOD",
        "CATID": "DOORWood", "FXNAME": "Creak Slow", "DESIGNER": "A. Designer",
        "LIBRARY": "Game SFX", "NOTES": None}
ASWG = {"catId": "DOORWood", "category": "DOORS", "subCategory": "WOOD",
        "fxName": "Creak Slow", "isGenerated": True, "isLoop": False, "loudness": -23.04,
        "maxPeak": -1.2, "library": "Game SFX", "creatorId": "AD", "sourceId": "SA3",
        "originationDate": WHEN.date(), "channelConfig": "stereo"}


# --------------------------------------------------------------------------------------------
# WAV: everything at once, read back by independent readers


def test_wav_with_bext_ixml_smpl_and_cue_reads_back_in_wavinfo(tmp_path: Path) -> None:
    path = tmp_path / "door.wav"
    samples = _write_wav(path)
    info_before = _chunks(path)[b"LIST"]
    riff.set_wav_chunks(path, [(b"bext", _bext()), (b"iXML", ixml_document(USER, ASWG))])
    add_loop_points(path, [(100, 3899)])
    riff.set_wav_chunks(path, [(b"cue ", riff.cue_payload([100]))])

    assert _order(path) == [b"fmt ", b"LIST", b"bext", b"iXML", b"data", b"smpl", b"cue "]
    data = path.read_bytes()
    assert struct.unpack_from("<I", data, 4)[0] == len(data) - 8
    assert _chunks(path)[b"LIST"] == info_before  # INFO kept byte for byte

    reader = wavinfo.WavInfoReader(str(path))
    bext = reader.bext
    assert bext.description == "Old wooden door creaking"
    assert bext.originator == "SA3 Studio"
    assert bext.originator_ref == "take-42"
    assert bext.originator_date == "2025-03-04"
    assert bext.originator_time == "05-06-07"  # EBU Tech 3285's hh-mm-ss
    assert bext.time_reference == 96000
    assert bext.version == 2
    assert bext.umid == bytes(64)
    assert bext.loudness_value == pytest.approx(-23.04)
    assert bext.loudness_range == pytest.approx(4.5)
    assert bext.max_true_peak == pytest.approx(-1.2)
    assert bext.max_momentary_loudness == pytest.approx(0x7FFF / 100)  # "not known"
    assert bext.coding_history == ("A=PCM,F=48000,W=16,M=stereo,T=SA3 Studio\r\n"
                                   "finish: trim, fades\r\n")

    root = reader.ixml.raw_xml.getroot()
    assert root.tag == "BWFXML"
    assert root.findtext("USER/CATID") == "DOORWood"
    assert root.findtext("USER/FXNAME") == "Creak Slow"
    assert root.find("USER/NOTES") is None  # None values are left out
    assert root.findtext("ASWG/isGenerated") == "true"
    assert root.findtext("ASWG/loudness") == "-23.04"

    loops = reader.smpl.sample_loops
    assert [(lp.start, lp.end) for lp in loops] == [(100, 3899)]
    assert [(c.name, c.sample_offset, c.position) for c in reader.cues.cues] == [(0, 100, 100)]
    assert loops[0].ident == reader.cues.cues[0].name  # the loop's cue id is the cue point's
    assert reader.info.comment == NOTE
    assert reader.info.title == "Door creak"
    assert reader.data.frame_count == FRAMES

    again, rate = sf.read(str(path), dtype="int16")
    assert rate == RATE
    assert np.array_equal(again, samples)


def test_setting_chunks_again_replaces_them_once(tmp_path: Path) -> None:
    path = tmp_path / "twice.wav"
    _write_wav(path)
    riff.set_wav_chunks(path, [(b"iXML", ixml_document({"CATID": "A"}, {})),
                               (b"bext", _bext())])
    riff.set_wav_chunks(path, [(b"bext", _bext(description="second")),
                               (b"iXML", ixml_document({"CATID": "B"}, {}))])
    assert _order(path) == [b"fmt ", b"LIST", b"bext", b"iXML", b"data"]
    assert wavinfo.WavInfoReader(str(path)).bext.description == "second"
    assert b"<CATID>B</CATID>" in riff.read_wav_chunk(path, b"iXML")
    assert riff.read_wav_chunk(path, b"smpl") is None


def test_odd_payload_is_padded_and_other_chunks_follow_on_even_offsets(tmp_path: Path) -> None:
    path = tmp_path / "odd.wav"
    samples = _write_wav(path)
    riff.set_wav_chunks(path, [(b"iXML", b"<BWFXML/>"), (b"abcd", b"xyz")])  # 9 and 3 bytes
    data = path.read_bytes()
    for _, offset, _ in wav_layout(data, path).chunks:
        assert offset % 2 == 0
    assert len(data) % 2 == 0
    assert riff.read_wav_chunk(path, b"iXML") == b"<BWFXML/>"
    assert riff.read_wav_chunk(path, b"abcd") == b"xyz"
    assert np.array_equal(sf.read(str(path), dtype="int16")[0], samples)
    wavinfo.WavInfoReader(str(path))


def test_float_wav_keeps_fact_and_peak_before_bext(tmp_path: Path) -> None:
    path = tmp_path / "float.wav"
    samples = _write_wav(path, "FLOAT")
    add_loop_points(path, [(0, FRAMES - 1)])
    riff.set_wav_chunks(path, [(b"cue ", riff.cue_payload([0])), (b"bext", _bext())])
    assert _order(path) == [b"fmt ", b"fact", b"LIST", b"PEAK", b"bext", b"data", b"smpl",
                            b"cue "]
    assert np.array_equal(sf.read(str(path), dtype="float32")[0], samples)
    assert wavinfo.WavInfoReader(str(path)).smpl.sample_loops[0].end == FRAMES - 1


# --------------------------------------------------------------------------------------------
# Hostile values


def test_a_10_kb_non_ascii_prompt_is_cut_to_256_ascii_bytes(tmp_path: Path) -> None:
    path = tmp_path / "long.wav"
    samples = _write_wav(path)
    prompt = "Café door ⚡ 日本 " + "creak " * 2000
    notes = 'a < b & "c" > \'d\' \x00\x07\x1b]0;pwned\x07 \ud800 ok\ttab'
    riff.set_wav_chunks(path, [
        (b"bext", _bext(description=prompt, originator="Zoë " * 20)),
        (b"iXML", ixml_document({"DESCRIPTION": prompt, "NOTES": notes}, {"notes": notes}))])
    payload = riff.read_wav_chunk(path, b"bext")
    assert payload[:256].isascii()
    reader = wavinfo.WavInfoReader(str(path))
    assert len(reader.bext.description) == 256
    assert reader.bext.description.startswith("Cafe door ? ?? creak")
    assert reader.bext.originator == ("Zoe " * 8)[:32]
    root = ET.fromstring(riff.read_wav_chunk(path, b"iXML"))
    assert root.findtext("USER/DESCRIPTION") == prompt.strip()  # iXML is UTF-8: kept whole
    kept = 'a < b & "c" > \'d\' ]0;pwned  ok\ttab'
    assert root.findtext("USER/NOTES") == kept
    assert root.findtext("ASWG/notes") == kept
    assert np.array_equal(sf.read(str(path), dtype="int16")[0], samples)


def test_bext_layout_follows_tech_3285(tmp_path: Path) -> None:
    payload = riff.bext_payload()
    assert len(payload) == 602  # 256+32+32+10+8+8+2+64+10+180, no coding history
    assert struct.unpack_from("<H", payload, 346)[0] == 2  # Version
    assert struct.unpack_from("<5h", payload, 412) == (0x7FFF,) * 5  # loudness not known
    assert payload[320:338] == bytes(18)  # no date or time when none is given
    extreme = riff.bext_payload(loudness_value=float("-inf"), max_true_peak=-500.0,
                                loudness_range=float("nan"))
    assert struct.unpack_from("<3h", extreme, 412) == (0x7FFF, 0x7FFF, -0x8000)
    with pytest.raises(ValueError):
        riff.bext_payload(time_reference=-1)


def test_refuses_what_it_cannot_rewrite(tmp_path: Path) -> None:
    text = tmp_path / "notes.wav"
    text.write_text("not audio")
    with pytest.raises(AudioFileError, match="not a WAV file"):
        riff.set_wav_chunks(text, [(b"bext", _bext())])
    rf64 = tmp_path / "big.wav"
    rf64.write_bytes(b"RF64" + b"\xff" * 4 + b"WAVE" + bytes(64))
    with pytest.raises(AudioFileError, match="RF64"):
        riff.set_wav_chunks(rf64, [(b"bext", _bext())])
    cut = tmp_path / "cut.wav"
    _write_wav(cut)
    cut.write_bytes(cut.read_bytes()[:-100])
    with pytest.raises(AudioFileError, match="cut short"):
        riff.set_wav_chunks(cut, [(b"bext", _bext())])
    with pytest.raises(AudioFileError, match="does not exist"):
        riff.read_wav_chunk(tmp_path / "missing.wav", b"bext")
    good = tmp_path / "good.wav"
    _write_wav(good)
    for bad in ([(b"data", b"")], [(b"bex", b"")], [(b"bext", b""), (b"bext", b"")]):
        with pytest.raises(ValueError):
            riff.set_wav_chunks(good, bad)


def test_cue_payload_layout() -> None:
    payload = riff.cue_payload([10, 20])
    assert struct.unpack_from("<I", payload)[0] == 2
    assert struct.unpack_from("<II4sIII", payload, 28) == (1, 20, b"data", 0, 0, 20)
    assert riff.parse_cue(payload) == [(0, 10), (1, 20)]
    with pytest.raises(ValueError):
        riff.cue_payload([2**32])


# --------------------------------------------------------------------------------------------
# iXML / ASWG


def test_aswg_elements_use_the_schema_names_types_and_order() -> None:
    root = ET.fromstring(ixml_document(USER, ASWG))
    assert root.findtext("IXML_VERSION") == "3.01"
    aswg = root.find("ASWG")
    names = [child.tag for child in aswg]
    assert names == [n for n in ASWG_FIELDS if n in ASWG or n == "schemaVersion"]
    assert names[-1] == "schemaVersion" and aswg.findtext("schemaVersion") == "1.1"
    assert aswg.findtext("isLoop") == "false"
    assert aswg.findtext("maxPeak") == "-1.20"
    assert aswg.findtext("originationDate") == "2025-03-04"
    assert aswg.findtext("channelConfig") == "Stereo"  # the schema's enumeration spelling
    assert ixml_document({}, {}).startswith(b'<?xml version="1.0" encoding="UTF-8"?>')
    assert ET.fromstring(ixml_document({}, {})).find("ASWG") is None


def test_aswg_values_are_checked_against_the_schema() -> None:
    with pytest.raises(ValueError, match="unknown ASWG"):
        ixml_document({}, {"catID": "DOORWood"})  # the schema spells it catId
    for bad in ({"isLoop": "yes"}, {"loudness": "-23"}, {"loudnessRange": -1.0},
                {"projection": 2.5}, {"channelConfig": "9.1"}, {"language": "eng"},
                {"specDensity": [1.0] * 23}):
        with pytest.raises(ValueError):
            ixml_document({}, bad)
    with pytest.raises(ValueError):
        ixml_document({"catid": "x"}, {})  # USER keys are upper case
    root = ET.fromstring(ixml_document({}, {"fxName": "Creak_Slow-Long", "maxPeak":
                                            float("-inf"), "loudness": float("nan"),
                                            "specDensity": [0.5] * 24}))
    assert root.findtext("ASWG/fxName") == "Creak Slow Long"  # ucsStringType: no _ or -
    assert root.findtext("ASWG/maxPeak") == "-INF"
    assert root.find("ASWG/loudness") is None
    assert root.findtext("ASWG/specDensity") == " ".join(["0.5"] * 24)


# --------------------------------------------------------------------------------------------
# FLAC and Ogg Vorbis


FIELDS = {"description": "Old door ⚡ creaking", "category": "DOORS", "subcategory": "WOOD",
          "catid": "DOORWood", "fx_name": "Creak", "designer": "A. Designer",
          "library": "Game SFX", "notes": "line1\nline2\x00", "originator": "SA3 Studio",
          "originator_reference": "take-42", "date": WHEN, "loop_start": 100,
          "loop_length": 3800, "loudness": -23.04, "true_peak": -1.0, "is_loop": True,
          "is_generated": True}


@pytest.mark.parametrize(("fmt", "subtype", "reader"), [
    ("FLAC", "PCM_16", mutagen.flac.FLAC), ("OGG", "VORBIS", mutagen.oggvorbis.OggVorbis)])
def test_vorbis_comments_read_back_in_mutagen(tmp_path: Path, fmt: str, subtype: str,
                                              reader: type) -> None:
    path = tmp_path / f"door.{fmt.lower()}"
    audio = np.random.default_rng(5).uniform(-0.5, 0.5, (FRAMES, 2)).astype(np.float32)
    with sf.SoundFile(str(path), "w", RATE, 2, subtype, format=fmt) as handle:
        handle.comment = NOTE
        handle.write(audio)
    before = sf.read(str(path), dtype="float32")[0]
    add_vorbis_fields(path, FIELDS)
    tags = reader(str(path)).tags
    assert tags["DESCRIPTION"] == ["Old door ⚡ creaking"]
    assert tags["CATID"] == ["DOORWood"] and tags["FXNAME"] == ["Creak"]
    assert tags["DESIGNER"] == tags["ARTIST"] == ["A. Designer"]
    assert tags["LIBRARY"] == tags["ALBUM"] == ["Game SFX"]
    assert tags["NOTES"] == ["line1\nline2"]
    assert tags["DATE"] == ["2025-03-04"]
    assert tags["LOOPSTART"] == ["100"] and tags["LOOPLENGTH"] == ["3800"]
    assert tags["LOUDNESS"] == ["-23.04"] and tags["TRUEPEAK"] == ["-1.00"]
    assert tags["ISLOOP"] == ["true"] and tags["ISGENERATED"] == ["true"]
    assert tags["COMMENT"] == [NOTE]  # our JSON note is left alone
    after, rate = sf.read(str(path), dtype="float32")
    assert rate == RATE and after.shape == (FRAMES, 2)
    assert np.array_equal(after, before)


def test_vorbis_fields_refuse_unknown_keys_and_wrong_types(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        vorbis_fields({"comment": "x"})
    with pytest.raises(ValueError):
        vorbis_fields({"loop_start": -1})
    with pytest.raises(ValueError):
        vorbis_fields({"is_loop": "yes"})
    assert vorbis_fields({"description": "", "true_peak": float("-inf"), "notes": None}) == {}
    wav = tmp_path / "door.wav"
    _write_wav(wav)
    with pytest.raises(AudioFileError, match="not a FLAC or Ogg Vorbis"):
        add_vorbis_fields(wav, {"catid": "DOORWood"})


# --------------------------------------------------------------------------------------------
# UCS list and names


UCS_CSV = ("\ufeffExplanations,CatID,Sub Category,Category,Extra,CatShort,"
           "Synonyms - Comma Separated\r\n"
           '"Wooden doors, opening",DOORWood,WOOD,DOORS,x,DOOR,"door, wood, creak"\r\n'
           "Metal doors,DOORMetal,METAL,DOORS,,DOOR,\r\n"
           ",,,,,,\r\n"
           "Wind gusts,WINDGust,GUST,WIND,,WIND,\r\n")


def _ucs_file(tmp_path: Path, text: str = UCS_CSV, encoding: str = "utf-8") -> Path:
    path = tmp_path / "UCS v8.2.csv"
    path.write_bytes(text.encode(encoding))
    return path


def test_ucs_csv_with_bom_and_reordered_columns(tmp_path: Path) -> None:
    ucs_list = ucs.UcsList.from_csv(_ucs_file(tmp_path))
    assert len(ucs_list) == 3
    entry = ucs_list.lookup("DOORWood")
    assert entry == ucs.UcsEntry("DOORWood", "DOORS", "WOOD", "DOOR", "Wooden doors, opening",
                                 ("door", "wood", "creak"))
    assert ucs_list.lookup("doorwood") is None  # UCS IDs are case-sensitive
    assert ucs_list.case_fix("doorwood") == "DOORWood"
    assert ucs_list.case_fix("DOORWood") is None
    assert ucs_list.closest("DORWood")[0] == "DOORWood"
    assert ucs_list.check("WINDGust").subcategory == "GUST"
    with pytest.raises(RequestError, match="written 'DOORWood'"):
        ucs_list.check("doorWOOD")
    with pytest.raises(RequestError, match="closest are DOORWood"):
        ucs_list.check("DOORWod")
    semicolons = "Title row\nCategory;SubCategory;CatID\nDOORS;WOOD;DOORWood\n"
    assert ucs.UcsList.from_csv(_ucs_file(tmp_path, semicolons, "cp1252")).lookup("DOORWood")


def test_a_file_that_is_not_a_ucs_list_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RequestError, match="no CatID, Category and SubCategory columns"):
        ucs.UcsList.from_csv(_ucs_file(tmp_path, "name,prompt\ndoor,creak\n"))
    with pytest.raises(RequestError, match="no categories"):
        ucs.UcsList.from_csv(_ucs_file(tmp_path, "CatID,Category,SubCategory\n"))
    with pytest.raises(RequestError, match="does not exist"):
        ucs.UcsList.from_csv(tmp_path / "missing.csv")


def test_import_keeps_a_copy_and_load_reads_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SA3_STUDIO_HOME", str(tmp_path / "home"))
    assert ucs.load_user_list() is None
    with pytest.raises(RequestError):
        ucs.import_ucs_csv(_ucs_file(tmp_path, "not,a,list\n"))
    assert not ucs.ucs_list_path().exists()  # a refused file leaves nothing behind
    source = _ucs_file(tmp_path)
    imported = ucs.import_ucs_csv(source)
    assert ucs.ucs_list_path().read_bytes() == source.read_bytes()
    assert imported.source == ucs.ucs_list_path()
    assert [p.name for p in ucs.ucs_list_path().parent.iterdir()] == ["ucs.csv"]
    assert ucs.load_user_list().check("DOORMetal").category == "DOORS"
    ucs.ucs_list_path().write_bytes(b"\x00garbage")
    with pytest.raises(RequestError, match="import the UCS CSV again"):
        ucs.load_user_list()


def test_ucs_names_build_the_four_blocks() -> None:
    from engines.delivery.names import render_name

    assert render_name("ucs", catid="DOORWood", fxname="Creak Slow", creator="AD",
                       source="SA3") == "DOORWood_Creak Slow_AD_SA3"
    assert render_name("ucs", catid="DOORWood", fxname="creak_slow  long") == \
        "DOORWood_creak-slow long"
    long_name = render_name("ucs", catid="DOORWood",
                            fxname="A very long effect name that goes on", creator="AD")
    assert long_name == "DOORWood_A very long effect name_AD"  # 24 characters, space cut
    assert len(long_name.split("_")[1]) < 25
    assert render_name("ucs", catid="DOORWood", creator="AD", source="SA3",
                       name="") == "DOORWood__AD_SA3"
    with pytest.raises(RequestError):
        render_name("ucs", catid=" ", fxname="Creak")
