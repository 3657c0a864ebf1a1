"""Thin, checked wrappers over cuda.bindings (driver and NVRTC only; no torch, no runtime API).

Every object here must be created, used and freed on the one GPU worker thread.
"""
