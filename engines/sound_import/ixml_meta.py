"""The fields of an iXML document that say what a sound is: its <USER> fields (CATID, FXNAME,
DESCRIPTION, KEYWORDS... as Soundminer, BaseHead and REAPER write them), Sony's <ASWG> fields
(catId, fxName, creatorId, sourceId, notes...) and the top-level <NOTE>.

Parsed with the standard library's expat (which refuses entity expansion attacks since Python
3.7.1); a document that does not parse gives nothing, never an error: metadata is a bonus."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

_LINE_FIELD = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)\s*[:=]\s*(.+?)\s*$")


def ixml_fields(payload: bytes) -> dict[str, dict[str, str]]:
    """{"user": {...}, "aswg": {...}, "note": {"NOTE": ...}}: the text of each child element,
    keys as the document spells them; empty groups are left out."""
    text = payload.rstrip(b"\0 \r\n\t")
    try:
        root = ET.fromstring(text)
    except (ET.ParseError, ValueError):
        return {}
    groups: dict[str, dict[str, str]] = {}
    for name, element in (("user", root.find("USER")), ("aswg", root.find("ASWG"))):
        if element is None:
            continue
        fields = {child.tag: " ".join((child.text or "").split()) for child in element
                  if isinstance(child.tag, str)}
        if not fields and element.text:
            # Some tools write USER as lines of KEY: value (or KEY=value) text.
            for line in element.text.splitlines():
                match = _LINE_FIELD.match(line)
                if match:
                    fields.setdefault(match.group(1).upper(), match.group(2))
        fields = {key: value for key, value in fields.items() if value}
        if fields:
            groups[name] = fields
    note = " ".join((root.findtext("NOTE") or "").split())
    if note:
        groups["note"] = {"NOTE": note}
    return groups
