"""The labels a delivered file carries (engines.delivery.delivery_take.Labels), from what the
user gave
(a UCS CatID, FX name, creator and source IDs) and what the studio keeps in settings (the
designer's and the library's names). When the user imported a UCS list, the CatID must be in it
(an unknown one is refused with the closest matches) and the list gives CATEGORY and
SUBCATEGORY; without a list the CatID is taken as given, and `unchecked_catid` is the warning a
front end says once.

A take keeps the UCS labels it was given (engines.store, schema 4). Every later way out starts
from them (`take_labels`): labels given again replace only the fields given, never the others,
and the studio's names from settings fill what the take has not got.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from engines.delivery.delivery_take import Labels
from engines.delivery.ucs import load_user_list
from engines.errors import Advice, Remedy, RequestError, join
from engines.paths import data_dir
from engines.settings import read_settings
from engines.text_display import blank_label_sentence, looks_blank

DESIGNER_SETTING = "designer_name"
LIBRARY_SETTING = "library_name"
CREATOR_SETTING = "ucs_creator_id"
SOURCE_SETTING = "ucs_source_id"
MAX_LABEL_CHARS = 256  # what a bext Description holds; longer text is a mistake, not a label
UCS_FIELDS = ("catid", "fx_name", "creator", "source")  # what a user gives a take
_LOOKED_UP = ("category", "subcategory")  # what the user's UCS list gives for a CatID
IMPORT_UCS_LIST = "ucs import"  # Remedy.command key: import the user's UCS list


def studio_names() -> dict[str, str]:
    """The designer, library, creator and source names kept in settings ("" when unset)."""
    settings = read_settings(data_dir())
    return {key: value.strip() if isinstance(value := settings.get(key), str) else ""
            for key in (DESIGNER_SETTING, LIBRARY_SETTING, CREATOR_SETTING, SOURCE_SETTING)}


def make_labels(catid: str = "", fx_name: str = "", creator: str = "", source: str = "",
                notes: str = "") -> Labels:
    """Labels for files delivered now. RequestError (one sentence) for a CatID the user's
    UCS list does not have, or a label too long to be one."""
    for what, value in (("category ID", catid), ("FX name", fx_name), ("creator ID", creator),
                        ("source ID", source)):
        if len(value) > MAX_LABEL_CHARS:
            raise RequestError(f"The {what} is {len(value)} characters long; give at most "
                               f"{MAX_LABEL_CHARS}.")
        if looks_blank(value.strip()):
            raise RequestError(blank_label_sentence(f"The {what}", value))
    names = studio_names()
    category = subcategory = ""
    catid = catid.strip()
    if catid:
        ucs = load_user_list()
        if ucs is not None:
            entry = ucs.check(catid)
            catid, category, subcategory = entry.catid, entry.category, entry.subcategory
    return Labels(catid=catid, category=category, subcategory=subcategory,
                  fx_name=fx_name.strip(), creator=creator.strip() or names[CREATOR_SETTING],
                  source=source.strip() or names[SOURCE_SETTING],
                  designer=names[DESIGNER_SETTING], library=names[LIBRARY_SETTING],
                  notes=notes)


def unchecked_catid(catids: Iterable[str]) -> Advice | None:
    """The warning to say once when CatIDs were given but no UCS list is imported to check
    them (they are written as given); None when there is nothing to say. A damaged list is
    not this warning: checking against it is refused with its own sentence."""
    given = sorted({c.strip() for c in catids if c and c.strip()})
    if not given or load_user_list() is not None:
        return None
    shown = ", ".join(f"'{_short(c)}'" for c in given[:3]) + (" ..." if len(given) > 3 else "")
    one = len(given) == 1
    return join(f"The UCS category ID{'' if one else 's'} {shown} {'was' if one else 'were'} "
                "not checked, because no UCS list is imported, and "
                f"{'is' if one else 'are'} written as given; import your UCS list with ",
                Remedy.command(IMPORT_UCS_LIST), " to have category IDs checked.")


def _short(text: str, limit: int = 40) -> str:
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= limit else text[:limit] + "..."


def label_changes(catid: str | None = None, fx_name: str | None = None,
                  creator: str | None = None, source: str | None = None) -> dict[str, str]:
    """The labels to change on a kept take: only the fields given (None: left as they are;
    '' clears one). A CatID is checked against the user's UCS list as make_labels does (an
    unknown one refused with the closest matches) and brings its category and subcategory;
    without a list they are cleared (the caller warns with unchecked_catid)."""
    changes: dict[str, str] = {}
    for key, value in (("catid", catid), ("fx_name", fx_name), ("creator", creator),
                       ("source", source)):
        if value is None:
            continue
        value = " ".join(value.split())
        if len(value) > MAX_LABEL_CHARS:
            raise RequestError(f"The {_WHAT[key]} is {len(value)} characters long; give at "
                               f"most {MAX_LABEL_CHARS}.")
        changes[key] = value
    if "catid" in changes:
        changes["category"] = changes["subcategory"] = ""
        ucs = load_user_list() if changes["catid"] else None
        if ucs is not None:
            entry = ucs.check(changes["catid"])
            changes.update(catid=entry.catid, category=entry.category,
                           subcategory=entry.subcategory)
    return changes


def take_labels(base: Labels, stored: Mapping[str, str] | None,
                given: Mapping[str, str] | None = None) -> Labels:
    """The labels a kept take's file carries: `base` (the studio's names from settings, or
    labels made for this delivery), then the labels the take keeps (`stored`, a
    TakeRecord's), then the fields `given` again for this delivery (label_changes, or the
    non-empty fields of flags) - each replacing only the fields it has."""
    labels = base
    for layer in (stored or {}, given or {}):
        fields = {key: layer[key] for key in UCS_FIELDS if layer.get(key)}
        if fields.get("catid"):  # a CatID brings its own category and subcategory
            fields.update({key: layer.get(key) or "" for key in _LOOKED_UP})
        labels = replace(labels, **fields)
    return labels


_WHAT = {"catid": "category ID", "fx_name": "FX name", "creator": "creator ID",
         "source": "source ID"}
