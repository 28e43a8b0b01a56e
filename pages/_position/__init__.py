"""Sections of the Position bias page (pages/position_bias.py), one module each."""
