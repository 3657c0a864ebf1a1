"""The user's own Universal Category System list, and the UCS file name rule.

UCS names a sound `CatID_FXName_CreatorID_SourceID`, the CatID taken, in its exact case, from
the official list (e.g. DOORWood). The list is a spreadsheet its users download and own, so we
do not ship it: the user imports its CSV export once (`import_ucs_csv`), and we keep a copy in
the data folder. Exports differ - a byte-order mark, columns in another order or with other
names' spacing, extra columns (translations), a title row, ';' where Excel's locale wants it -
so columns are found by their header names, not by position.
"""

from __future__ import annotations

import csv
import difflib
import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from engines.audio_io.atomic import create_temp_beside, fsync_file, release, remove_quietly
from engines.error_sentences import os_reason, shown
from engines.errors import RequestError
from engines.paths import data_dir
from engines.text_files import (
    TextFileError,
    cell_limit_phrase,
    cell_too_large,
    decode_text,
    kind_problem,
)

LIST_FILE_NAME = "ucs.csv"
REQUIRED_COLUMNS = ("catid", "category", "subcategory")
DELIMITERS = ",;\t"  # Excel writes ';' where the decimal mark is a comma
HEADER_SEARCH_ROWS = 20  # a title or notes row or two may sit above the header
MAX_LIST_BYTES = 16 << 20  # the official list is well under 1 MB; bigger is the wrong file
FX_NAME_MAX = 24  # UCS: keep FXName under 25 characters
BLOCK_SEPARATOR = "_"


@dataclass(frozen=True)
class UcsEntry:
    catid: str
    category: str
    subcategory: str
    cat_short: str = ""
    explanations: str = ""
    synonyms: tuple[str, ...] = ()


@dataclass(frozen=True)
class UcsList:
    """The categories of one UCS CSV, looked up by CatID (which UCS says is case-sensitive)."""

    entries: tuple[UcsEntry, ...]
    source: Path | None = None
    _by_id: dict[str, UcsEntry] = field(default_factory=dict, init=False, repr=False,
                                        compare=False)
    _by_folded: dict[str, UcsEntry] = field(default_factory=dict, init=False, repr=False,
                                            compare=False)

    def __post_init__(self) -> None:
        for entry in self.entries:
            self._by_id.setdefault(entry.catid, entry)  # a repeated row: the first one counts
            self._by_folded.setdefault(entry.catid.casefold(), entry)

    def __len__(self) -> int:
        return len(self._by_id)

    @classmethod
    def from_csv(cls, path: str | os.PathLike[str]) -> UcsList:
        """The list in the UCS CSV at `path`; RequestError (one sentence) when it is not one."""
        file = Path(path)
        return cls(_parse(file, _read_text(file)), file)

    def lookup(self, catid: str) -> UcsEntry | None:
        """The entry whose CatID is exactly `catid` (same case), or None."""
        return self._by_id.get(catid.strip())

    def case_fix(self, catid: str) -> str | None:
        """The list's spelling of `catid` when only the case differs (doorwood -> DOORWood);
        None when it matches exactly or not at all."""
        entry = self._by_folded.get(catid.strip().casefold())
        return entry.catid if entry and entry.catid != catid.strip() else None

    def closest(self, catid: str, n: int = 3) -> list[str]:
        """Up to `n` CatIDs that look most like `catid`, best first (case ignored)."""
        folded = {key.casefold(): entry.catid for key, entry in self._by_id.items()}
        matches = difflib.get_close_matches(catid.strip().casefold(), list(folded), n=n,
                                            cutoff=0.5)
        return [folded[match] for match in matches]

    def check(self, catid: str) -> UcsEntry:
        """The entry of `catid`; RequestError saying what to use instead when it is unknown."""
        wanted = catid.strip()
        if not wanted:
            raise RequestError("The UCS category ID is empty; give one from your UCS list, "
                               "e.g. DOORWood.")
        entry = self.lookup(wanted)
        if entry is not None:
            return entry
        fixed = self.case_fix(wanted)
        if fixed is not None:
            raise RequestError(f"The UCS category ID '{_short(wanted)}' is written '{fixed}' in "
                               f"your UCS list, and UCS IDs are case-sensitive; use '{fixed}'.")
        near = self.closest(wanted)
        hint = (f"the closest are {', '.join(near)}" if near
                else "nothing in it is close")
        raise RequestError(f"The UCS category ID '{_short(wanted)}' is not in your UCS list "
                           f"({hint}); pick one from the list, or import a newer list.")


def _short(text: str, limit: int = 40) -> str:
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= limit else text[:limit] + "..."


# --------------------------------------------------------------------------------------------
# Reading the CSV


def _read_text(file: Path) -> str:
    try:
        what = kind_problem(file)
        if what is not None:
            raise RequestError(f"The UCS list {shown(file)} {what}; give the UCS spreadsheet "
                               f"saved as CSV.")
        if file.stat().st_size > MAX_LIST_BYTES:
            raise RequestError(f"The file {shown(file)} is larger than {MAX_LIST_BYTES >> 20} "
                               f"MB, too big for a UCS list; give the UCS spreadsheet saved "
                               f"as CSV.")
        data = file.read_bytes()
    except OSError as err:
        happened, todo = os_reason(err)
        raise RequestError(f"Could not read the UCS list {shown(file)}: {happened}; "
                           f"{todo}.") from err
    try:
        # By the byte-order mark (UTF-16 from "Unicode Text"), else UTF-8, else Excel's plain
        # "CSV" on Windows, cp1252 (the columns we need are ASCII anyway).
        return decode_text(data, fallback="cp1252")
    except TextFileError as exc:
        raise RequestError(f"The UCS list {shown(file)} {exc}; save the UCS spreadsheet as "
                           f"\"CSV UTF-8\" and give that file.") from None


def column_key(text: str) -> str:
    """A header as a key: "Sub Category", "SubCategory" and "sub_category" are one column."""
    return re.sub(r"[^0-9a-z]", "", text.strip().casefold())


def _rows(file: Path, text: str, delimiter: str) -> list[list[str]]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        return list(reader)
    except csv.Error as exc:
        if cell_too_large(exc):
            raise RequestError(f"The UCS list {shown(file)} "
                               f"{cell_limit_phrase(reader.line_num)}, so it is not the UCS "
                               f"spreadsheet; export it again as CSV.") from None
        raise RequestError(f"The UCS list {shown(file)} is not readable CSV (line "
                           f"{reader.line_num}: {exc}); export the UCS spreadsheet as CSV "
                           f"again.") from None


def _parse(file: Path, text: str) -> tuple[UcsEntry, ...]:
    for delimiter in DELIMITERS:
        rows = _rows(file, text, delimiter)
        for index, row in enumerate(rows[:HEADER_SEARCH_ROWS]):
            columns = _columns(row)
            if columns is not None:
                entries = tuple(e for r in rows[index + 1:] if (e := _entry(r, columns)))
                if not entries:
                    raise RequestError(f"The UCS list {shown(file)} has its columns but no "
                                       f"categories; export the whole UCS spreadsheet as CSV.")
                return entries
    raise RequestError(f"The file {shown(file)} has no CatID, Category and SubCategory "
                       f"columns, so it is not a UCS list; export the UCS spreadsheet as CSV "
                       f"with its header row.")


def _columns(header: list[str]) -> dict[str, int] | None:
    """Where each column we read is in `header`, or None if it is not the header row."""
    keys = [column_key(cell) for cell in header]
    found: dict[str, int] = {}
    for index, key in enumerate(keys):
        if key in ("catid", "category", "subcategory", "catshort"):
            found.setdefault(key, index)
        elif key.startswith("explanation"):
            found.setdefault("explanations", index)
        elif key.startswith("synonym"):
            found.setdefault("synonyms", index)
    return found if all(key in found for key in REQUIRED_COLUMNS) else None


def _entry(row: list[str], columns: dict[str, int]) -> UcsEntry | None:
    def cell(key: str) -> str:
        index = columns.get(key)
        return row[index].strip() if index is not None and index < len(row) else ""

    catid = cell("catid")
    if not catid or any(ch.isspace() for ch in catid):
        return None  # blank rows and section rows spreadsheets keep between categories
    synonyms = tuple(s.strip() for s in cell("synonyms").split(",") if s.strip())
    return UcsEntry(catid, cell("category"), cell("subcategory"), cell("catshort"),
                    cell("explanations"), synonyms)


# --------------------------------------------------------------------------------------------
# The file name


def ucs_name(catid: str, fx_name: str, creator: str = "", source: str = "") -> str:
    """The UCS file stem `CatID_FXName_CreatorID_SourceID`.

    `_` separates blocks, so one inside a block becomes '-' (as engines.delivery.names does);
    runs of white space become one space; FXName is cut under 25 characters; empty blocks at
    the end are dropped (an empty one in the middle stays, so each block keeps its place).
    The stem still has to pass the file-name rule (engines.delivery.names.safe_file_name).
    """
    blocks = [ucs_block(catid), ucs_block(fx_name)[:FX_NAME_MAX].rstrip(), ucs_block(creator),
              ucs_block(source)]
    if not blocks[0]:
        raise RequestError("The UCS category ID is empty; give one from your UCS list, "
                           "e.g. DOORWood.")
    while not blocks[-1]:
        blocks.pop()
    return BLOCK_SEPARATOR.join(blocks)


def ucs_block(text: str) -> str:
    """One UCS name block: `_` (the block separator) inside it becomes '-', white space runs
    one space."""
    return " ".join(re.sub(r"_+", "-", str(text or "")).split())


# --------------------------------------------------------------------------------------------
# The imported copy in the data folder


def ucs_list_path() -> Path:
    """Where the imported list is kept (the data folder is created if missing)."""
    return data_dir() / LIST_FILE_NAME


def import_ucs_csv(source: str | os.PathLike[str]) -> UcsList:
    """Check `source` is a UCS list, then keep an exact copy of it as the user's list; a
    failure leaves the list imported before untouched. RequestError (one sentence)."""
    file = Path(source)
    ucs = UcsList.from_csv(file)
    target = ucs_list_path()
    try:
        data = file.read_bytes()  # the bytes we parsed, not a re-written CSV
        temp = create_temp_beside(target, ".csv")
    except OSError as err:
        happened, todo = os_reason(err)
        raise RequestError(f"Could not import the UCS list {shown(file)}: {happened}; "
                           f"{todo}.") from err
    try:
        temp.write_bytes(data)
        fsync_file(temp)
        os.replace(temp, target)
    except OSError as err:
        remove_quietly(temp)
        happened, todo = os_reason(err)
        raise RequestError(f"Could not keep the UCS list in {shown(target)}: {happened}; "
                           f"{todo}.") from err
    except BaseException:
        remove_quietly(temp)
        raise
    release(temp)
    return UcsList(ucs.entries, target)


def load_user_list() -> UcsList | None:
    """The imported list; None when none was imported. RequestError when the kept copy is
    damaged or unreadable (telling the user to import it again)."""
    target = ucs_list_path()
    if not target.exists():
        return None
    try:
        return UcsList.from_csv(target)
    except RequestError as err:
        reason = str(err).split(";", 1)[0].rstrip(".")
        raise RequestError(f"Your imported UCS list cannot be used ({reason[:1].lower()}"
                           f"{reason[1:]}); import the UCS CSV again.") from err
