"""The UCS file name pattern, read back: `CatID_FXName_CreatorID_SourceID[_UserData]`
(engines.delivery.ucs.ucs_name writes it). A CatID may carry a user category after a dash
(DOORWood-Front). The stem counts as UCS when its CatID is in the user's imported UCS list
(which also gives its Category and SubCategory); without a list, when it looks like one: an
upper-case prefix of two to five letters then a capitalised word (DOORWood, AMBForst), and at
least an FXName after it."""

from __future__ import annotations

import logging
import re

from engines.delivery.ucs import BLOCK_SEPARATOR, UcsList, load_user_list
from engines.errors import RequestError

log = logging.getLogger(__name__)

_CATID_SHAPE = re.compile(r"[A-Z]{2,5}[A-Z]?[a-z][A-Za-z0-9]*")
_FIELDS = ("catid", "fx_name", "creator", "source")


def user_ucs_list() -> UcsList | None:
    """The user's imported UCS list, or None (none imported, or it cannot be read)."""
    try:
        return load_user_list()
    except (RequestError, OSError) as err:
        log.info("The UCS list is not used for file names: %s", err)
        return None


def ucs_name_fields(stem: str, ucs: UcsList | None) -> dict[str, str]:
    """catid, fx_name, creator, source (and category, subcategory from the list) of a UCS
    file stem; {} when the stem does not follow the pattern."""
    blocks = [" ".join(block.split()) for block in stem.split(BLOCK_SEPARATOR)]
    if len(blocks) < 2 or not blocks[1]:
        return {}
    catid = blocks[0].split("-", 1)[0]
    entry = ucs.lookup(catid) if ucs is not None else None
    if entry is None and (ucs is not None and len(ucs) or not _CATID_SHAPE.fullmatch(catid)):
        return {}
    fields = {key: value for key, value in zip(_FIELDS, [catid, *blocks[1:4]], strict=False)
              if value}
    if entry is not None:
        fields.update(category=entry.category, subcategory=entry.subcategory)
    return fields
