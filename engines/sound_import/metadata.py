"""What a sound file says about itself, gathered from every place it can say it and merged in
one order of trust: a field the file's own iXML (ASWG, then USER) gives wins over its Vorbis
comments, which win over the UCS pattern of its name; a description comes from bext first
(the field every BWF tool shows), then iXML, Vorbis, RIFF INFO, and libsndfile's strings."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# label (engines.store.records.LABEL_COLUMNS keys) -> the keys each source spells it with
_ASWG_LABELS = {"catid": "catId", "category": "category", "subcategory": "subCategory",
                "fx_name": "fxName", "creator": "creatorId", "source": "sourceId"}
_UPPER_LABELS = {"catid": "CATID", "category": "CATEGORY", "subcategory": "SUBCATEGORY",
                 "fx_name": "FXNAME", "creator": "CREATORID", "source": "SOURCEID"}
_KEYWORD_SPLIT = re.compile(r"[,;]")


@dataclass
class SoundMetadata:
    """The merged fields, and every group as read (kept as the sound's metadata JSON)."""

    description: str = ""
    labels: dict[str, str] = field(default_factory=dict)  # only the labels found
    keywords: list[str] = field(default_factory=list)
    groups: dict[str, dict[str, str]] = field(default_factory=dict)


def merged(groups: dict[str, dict[str, str]]) -> SoundMetadata:
    """Merge the groups read from one file: "bext", "user", "aswg", "note" (iXML), "vorbis",
    "info" (RIFF LIST/INFO), "strings" (libsndfile's title/comment/...), "ucs_name"."""
    get = lambda group, key: groups.get(group, {}).get(key, "")  # noqa: E731
    labels: dict[str, str] = {}
    for label in _ASWG_LABELS:
        for value in (get("aswg", _ASWG_LABELS[label]), get("user", _UPPER_LABELS[label]),
                      get("vorbis", _UPPER_LABELS[label]), get("ucs_name", label)):
            if value:
                labels[label] = value
                break
    comment = get("vorbis", "COMMENT")
    if comment.lstrip().startswith("{"):
        comment = ""  # SA3 Studio's own JSON note, not words for a person
    description = next((text for text in (
        get("bext", "description"), get("user", "DESCRIPTION"), get("aswg", "notes"),
        get("note", "NOTE"), get("vorbis", "DESCRIPTION"), comment, get("vorbis", "TITLE"),
        get("info", "ICMT"), get("info", "INAM"), get("strings", "comment"),
        get("strings", "title")) if text), "")
    keywords: list[str] = []
    for text in (get("user", "KEYWORDS"), get("vorbis", "KEYWORDS"), get("info", "IKEY")):
        for word in _KEYWORD_SPLIT.split(text):
            word = " ".join(word.split())
            if word and word not in keywords:
                keywords.append(word)
    return SoundMetadata(" ".join(description.split()), labels, keywords,
                         {name: dict(fields) for name, fields in groups.items() if fields})
