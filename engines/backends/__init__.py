"""Backends turn a validated request into audio; see `base` for the protocol."""
