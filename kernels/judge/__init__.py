"""Isolated evaluation of candidates: runner (caller side) → referee (trusted) → contestant."""
