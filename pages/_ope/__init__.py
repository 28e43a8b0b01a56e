"""The three views of the Off-policy evaluation page (pages/off_policy.py), one module
each: :mod:`.log`, :mod:`.simulation`, :mod:`.learn`; :mod:`.common` holds what they share."""
