"""Sections of the Compare rankers page (pages/compare_rankers.py), one module each."""
