"""Bandit lab: cascading bandits, batched over runs (see ``ulr.bandits.policies``)."""
