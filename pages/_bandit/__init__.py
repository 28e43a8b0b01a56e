"""Sections of the Bandit lab page (pages/bandit_lab.py)."""
