"""The `iXML` chunk's document: the `<USER>` fields sample-library tools read (REAPER's Media
Explorer shows them as IXML:USER:CATID, ...) and Sony's `<ASWG>` game-audio fields (ASWG:*).

Everything goes through xml.etree, so text is escaped by the serializer, never by hand; the
characters XML 1.0 forbids (control characters, lone surrogates, U+FFFE/U+FFFF) are dropped
first, because no escape makes them legal. Keys are checked strictly: an unknown ASWG field or
a value of the wrong type is a programming error (ValueError), since the ASWG group asks that
nothing outside its list be put in its object.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence

IXML_VERSION = "3.01"  # iXML revision 3.01 (October 2021) is the one that includes <ASWG>
ASWG_SCHEMA_VERSION = "1.1"

# The ASWG fields, their element names exactly as spelled and IN THE ORDER of the schema's
# xs:sequence (metadataType, then aswgType's schemaVersion), with the schema's type of each.
# Source: github.com/Sony-ASWG/iXML-Extension, schemas/aswg_ixml_1_1.xsd (schema version 1.1;
# the spec document is "ASWG-G006 - iXML Extension Specification v1.1.pdf" in the same
# repository, which also shows <ASWG> as a direct child of <BWFXML>, without a namespace).
# Types are the schema's own names: xs:string, xs:boolean, xs:float; ucsStringType (a string
# without '_' or '-', since those separate UCS file name blocks); positiveFloat and positiveInt
# (minInclusive 0); shortDateType (yyyy-mm-dd); spectralDensityType (24 floats, an xs:list);
# and the enumerations and patterns below.
ASWG_FIELDS: dict[str, str] = {
    "contentType": "xs:string", "project": "xs:string", "originator": "xs:string",
    "originatorStudio": "xs:string", "notes": "xs:string", "session": "xs:string",
    "state": "xs:string", "editor": "xs:string", "mixer": "xs:string", "fxChainName": "xs:string",
    "isGenerated": "xs:boolean", "masteringEngineer": "xs:string",
    "originationDate": "shortDateType", "channelConfig": "channelConfigType",
    "ambisonicFormat": "ambisonicFormatType", "ambisonicChnOrder": "ambisonicChnOrderType",
    "ambisonicNorm": "ambisonicNormType", "micType": "xs:string", "micConfig": "micConfigType",
    "micDistance": "xs:string", "recordingLoc": "xs:string", "isDesigned": "xs:boolean",
    "recEngineer": "xs:string", "recStudio": "xs:string", "impulseLocation": "xs:string",
    "category": "ucsStringType", "subCategory": "ucsStringType", "catId": "ucsStringType",
    "userCategory": "ucsStringType", "userData": "ucsStringType",
    "vendorCategory": "ucsStringType", "fxName": "ucsStringType", "library": "xs:string",
    "creatorId": "ucsStringType", "sourceId": "xs:string", "rmsPower": "xs:float",
    "loudness": "xs:float", "loudnessRange": "positiveFloat", "maxPeak": "xs:float",
    "specDensity": "spectralDensityType", "zeroCrossRate": "positiveFloat", "papr": "xs:float",
    "text": "xs:string", "efforts": "xs:string", "effortType": "xs:string",
    "projection": "positiveInt", "language": "iso6391Type", "timingRestriction": "xs:string",
    "characterName": "xs:string", "characterGender": "genderType", "characterAge": "positiveInt",
    "characterRole": "xs:string", "actorName": "xs:string", "actorGender": "genderType",
    "director": "xs:string", "direction": "xs:string", "fxUsed": "xs:string",
    "usageRights": "xs:string", "isUnion": "xs:boolean", "accent": "xs:string",
    "emotion": "xs:string", "addresseeGender": "addresseeGenderType", "isFormal": "xs:boolean",
    "devLanguage": "xs:string", "billingCode": "xs:string", "composer": "xs:string",
    "artist": "xs:string", "songTitle": "xs:string", "genre": "xs:string", "subGenre": "xs:string",
    "producer": "xs:string", "musicSup": "xs:string", "instrument": "xs:string",
    "musicPublisher": "xs:string", "rightsOwner": "xs:string", "isSource": "xs:boolean",
    "isLoop": "xs:boolean", "intensity": "xs:string", "isFinal": "xs:boolean",
    "orderRef": "xs:string", "isOst": "xs:boolean", "isCinematic": "xs:boolean",
    "isLicensed": "xs:boolean", "isDiegetic": "xs:boolean", "musicVersion": "xs:string",
    "isrcId": "isrcType", "tempo": "tempoType", "timeSig": "ratioType", "inKey": "xs:string",
    "schemaVersion": "versionType",  # aswgType: required, written as ASWG_SCHEMA_VERSION
}

# The schema's xs:enumeration values, in its spelling (a value matching one whatever its case
# is written this way).
ASWG_ENUMS: dict[str, tuple[str, ...]] = {
    "channelConfigType": ("Unknown", "Mono", "Stereo", "LCR", "Quad", "5.0", "5.1", "7.0",
                          "7.1", "7.1.2", "7.1.4", "12.2", "Ambisonic"),
    "ambisonicChnOrderType": ("Unknown", "Fuma", "ACN"),
    "ambisonicNormType": ("Unknown", "SN3D", "MAXN", "N3D"),
    "micConfigType": ("Unknown", "Mono", "AB", "XY", "ORTF", "MS", "other"),
    "genderType": ("Unknown", "Female", "Male", "Other"),
    "addresseeGenderType": ("Unknown", "Female", "Male", "FemaleGroup", "MaleGroup",
                            "MixedGroup"),
}

# The schema's xs:pattern restrictions (XSD patterns match the whole value).
ASWG_PATTERNS: dict[str, re.Pattern[str]] = {
    "isrcType": re.compile(r"[a-zA-Z]{2}[a-zA-Z]{3}[0-9]{2}[0-9]{5}"
                           r"|[a-zA-Z]{2} [a-zA-Z]{3} [0-9]{2} [0-9]{5}"),
    "iso6391Type": re.compile(r"[a-zA-Z]{2}"),
    "ambisonicFormatType": re.compile(r"[0-9]p|[0-9]h[0-9]p|[0-9]h[0-9]v"),
    "ratioType": re.compile(r"(,\s*|[0-9]*:[0-9]*)*"),
    "tempoType": re.compile(r"(,\s*|[0-9]*)*"),
    "versionType": re.compile(r"[0-9]*.[0-9]*"),
    "shortDateType": re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}"),
}

SPEC_DENSITY_BANDS = 24  # spectralDensityType: xs:length 24
INT_MAX = 2**31 - 1  # xs:int
USER_KEY = re.compile(r"[A-Z][A-Z0-9_]*")

# XML 1.0 Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]; the
# rest of Unicode, spelled out: a negated class of those ranges takes 9 ms to compile, and the
# window and every command that can write a file import this module.
_NOT_XML_CHAR = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(value: str) -> str:
    """`value` without the characters XML 1.0 cannot carry at all (escaping does the rest)."""
    return _NOT_XML_CHAR.sub("", value)


def ixml_document(user: Mapping[str, object], aswg: Mapping[str, object]) -> bytes:
    """A UTF-8 iXML document with a `<USER>` element for `user` (upper-case keys such as
    DESCRIPTION, CATEGORY, SUBCATEGORY, CATID, FXNAME, DESIGNER, LIBRARY, NOTES) and an
    `<ASWG>` element for `aswg` (keys from ASWG_FIELDS). Empty and None values are left out,
    and so is an element with nothing in it. ValueError for a bad key or value type."""
    root = ET.Element("BWFXML")
    ET.SubElement(root, "IXML_VERSION").text = IXML_VERSION
    user_items = _user_items(user)
    if user_items:
        user_element = ET.SubElement(root, "USER")
        for key, text in user_items:
            ET.SubElement(user_element, key).text = text
    aswg_items = aswg_texts(aswg)
    if aswg_items:
        aswg_element = ET.SubElement(root, "ASWG")
        for key, text in aswg_items:
            ET.SubElement(aswg_element, key).text = text
    ET.indent(root)  # one element a line: people read this chunk in BWF MetaEdit
    body = ET.tostring(root, encoding="unicode")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n").encode("utf-8")


def _user_items(user: Mapping[str, object]) -> list[tuple[str, str]]:
    items = []
    for key, value in user.items():
        if not isinstance(key, str) or not USER_KEY.fullmatch(key):
            raise ValueError(f"iXML USER keys are upper-case names like CATID, not {key!r}")
        if value is None:
            continue
        text = xml_text(str(value)).strip()
        if text:
            items.append((key, text))
    return items


def aswg_texts(aswg: Mapping[str, object]) -> list[tuple[str, str]]:
    """(element name, text) of each given ASWG field, in schema order, with schemaVersion
    last; [] when no field has a value. ValueError for an unknown field or a wrong value."""
    unknown = [key for key in aswg if key not in ASWG_FIELDS]
    if unknown:
        raise ValueError(f"unknown ASWG field(s) {unknown}; the schema names "
                         f"{', '.join(ASWG_FIELDS)}")
    items = []
    for key, kind in ASWG_FIELDS.items():
        value = aswg.get(key)
        if value is None or value == "" or key == "schemaVersion":
            continue
        text = _render(key, kind, value)
        if text:
            items.append((key, text))
    if items:
        version = aswg.get("schemaVersion") or ASWG_SCHEMA_VERSION
        items.append(("schemaVersion", _render("schemaVersion", "versionType", version)))
    return items


def _render(key: str, kind: str, value: object) -> str:
    if kind == "xs:boolean":
        if not isinstance(value, bool):
            raise ValueError(f"ASWG {key} is a boolean, not {value!r}")
        return "true" if value else "false"  # xs:boolean's canonical spelling
    if kind in ("xs:float", "positiveFloat"):
        return _float(key, value, positive=kind == "positiveFloat")
    if kind == "positiveInt":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT_MAX:
            raise ValueError(f"ASWG {key} is a whole number from 0, not {value!r}")
        return str(value)
    if kind == "spectralDensityType":
        return _float_list(key, value)
    if kind == "shortDateType" and isinstance(value, _dt.date):
        return value.strftime("%Y-%m-%d")
    if not isinstance(value, str):
        raise ValueError(f"ASWG {key} is text, not {value!r}")
    text = xml_text(value).strip()
    if kind == "ucsStringType":
        # ucsStringType forbids '_' and '-' (they would split a UCS file name's blocks)
        return " ".join(re.sub(r"[_-]", " ", text).split())
    if kind in ASWG_ENUMS:
        for choice in ASWG_ENUMS[kind]:
            if choice.lower() == text.lower():
                return choice
        raise ValueError(f"ASWG {key} is one of {ASWG_ENUMS[kind]}, not {value!r}")
    if kind in ASWG_PATTERNS:
        if not ASWG_PATTERNS[kind].fullmatch(text):
            raise ValueError(f"ASWG {key} {value!r} does not match the schema's {kind}")
        return text
    return text


def _float(key: str, value: object, positive: bool) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"ASWG {key} is a number, not {value!r}")
    number = float(value)
    if math.isnan(number):
        return ""  # not measured: left out, like None
    if positive and number < 0:
        raise ValueError(f"ASWG {key} cannot be negative ({number})")
    if math.isinf(number):
        return "INF" if number > 0 else "-INF"  # xs:float's words (silence has a -INF peak)
    # Hundredths: what loudness meters and the bext loudness fields resolve.
    return f"{number:.2f}"


def _float_list(key: str, value: object) -> str:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValueError(f"ASWG {key} is a list of {SPEC_DENSITY_BANDS} numbers")
    numbers = list(value)
    if len(numbers) != SPEC_DENSITY_BANDS or not all(
            isinstance(n, int | float) and not isinstance(n, bool) and math.isfinite(n)
            for n in numbers):
        raise ValueError(f"ASWG {key} is a list of {SPEC_DENSITY_BANDS} finite numbers")
    # xs:list items are separated by white space (the PDF's prose says commas; the schema,
    # which validators use, decides).
    return " ".join(f"{float(n):.6g}" for n in numbers)
