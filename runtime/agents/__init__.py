"""Subagents: definitions and the local executor (design Phase B)."""
