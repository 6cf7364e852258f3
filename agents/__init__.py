"""Agents: propose edits for a candidate at one level (see README.md)."""
