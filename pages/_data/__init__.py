"""Sections of the Data page (pages/data.py): :mod:`.upload` (upload and map a file)
and :mod:`.register` (register a large log where it lives)."""
