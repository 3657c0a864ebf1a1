"""The labels a delivered file carries (engines.delivery.take.Labels), from what the user gave
(a UCS CatID, FX name, creator and source IDs) and what the studio keeps in settings (the
designer's and the library's names). When the user imported a UCS list, the CatID must be in it
(an unknown one is refused with the closest matches) and the list gives CATEGORY and
SUBCATEGORY; without a list the CatID is taken as given."""

from __future__ import annotations

from engines.delivery.take import Labels
from engines.delivery.ucs import load_user_list
from engines.errors import RequestError
from engines.paths import data_dir
from engines.settings import read_settings

DESIGNER_SETTING = "designer_name"
LIBRARY_SETTING = "library_name"
CREATOR_SETTING = "ucs_creator_id"
SOURCE_SETTING = "ucs_source_id"
MAX_LABEL_CHARS = 256  # what a bext Description holds; longer text is a mistake, not a label


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
