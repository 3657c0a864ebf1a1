"""A take's length and rating as the rows and tables show them (plain text, no Qt): the session
list, the Library table and the team table all read a take the same way."""

from __future__ import annotations


def format_seconds(seconds: float) -> str:
    """`2.0 s`, `0.35 s`: short takes keep their hundredths."""
    return f"{seconds:.1f} s" if seconds >= 1.0 else f"{seconds:.2f} s"


def rating_stars(rating: int, out_of: int = 5) -> str:
    """`★★★☆☆` for 3 of 5; empty for an unrated take (0)."""
    rating = max(0, min(int(rating or 0), out_of))
    return "★" * rating + "☆" * (out_of - rating) if rating else ""
