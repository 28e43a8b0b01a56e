"""Result caches shared by every session: page computations and plotly figures."""

from __future__ import annotations

import functools
import inspect
import threading

import streamlit as st

from ulr.data import catalog

CACHE_TTL = "6h"      # a cached result unused this long is dropped (and max_entries bounds each)
_BY_DATASET: dict = {}  # content hash -> {call: (cached function, args, kwargs)}, for forget()
_BY_DATASET_CAP = 2048
_PEEK = threading.local()  # set while cached_only asks: a miss raises instead of computing


class _NotCached(Exception):
    """A cached page function was asked, through :func:`cached_only`, for a value it
    does not hold."""


def cache_data(**options):
    """``st.cache_data`` for the pages' computations, shared across sessions.

    Bounded: pass ``max_entries``; entries expire after :data:`CACHE_TTL` unless ``ttl``
    is given. A function with a ``content_hash`` parameter (anywhere) has its entries
    recorded per dataset, so :func:`forget` clears them when the dataset is deleted or
    replaced.

    The cached body runs without the store's wait notice (:func:`wait_notice`, a toast):
    a toast recorded inside a cached function cannot be replayed by the next session that
    hits the cache (Streamlit raises ``CacheReplayClosureError``), which a cold server
    with several visitors waiting on the store's lock did.
    """
    options.setdefault("ttl", CACHE_TTL)

    def decorate(func):
        @functools.wraps(func)
        def without_notice(*args, **kwargs):
            if getattr(_PEEK, "asking", False):
                raise _NotCached   # Streamlit stores nothing for a call that raises
            with catalog.waiting(None):
                return func(*args, **kwargs)
        cached = st.cache_data(**options)(without_notice)
        signature = inspect.signature(func)
        if "content_hash" not in signature.parameters:
            return cached

        @functools.wraps(func)
        def recorded(*args, **kwargs):
            content_hash = signature.bind(*args, **kwargs).arguments["content_hash"]
            if len(_BY_DATASET) > _BY_DATASET_CAP:   # expired entries are gone anyway
                _BY_DATASET.clear()
            calls = _BY_DATASET.setdefault(content_hash, {})
            hashed = sorted((k, v) for k, v in kwargs.items() if not k.startswith("_"))
            calls[(id(cached), repr((args, hashed)))] = (cached, args, kwargs)
            return cached(*args, **kwargs)
        recorded.clear = cached.clear
        return recorded
    return decorate


def cached_only(call):
    """``(True, call())`` when every cached page function ``call`` uses already holds its
    value, else ``(False, None)``, and nothing is computed.

    So a page can show its progress box (``st.status``, which pauses the run 50 ms when
    it opens) only when there is work to follow, and draw the results at once when
    another visitor computed them before.
    """
    _PEEK.asking = True
    try:
        return True, call()
    except _NotCached:
        return False, None
    finally:
        _PEEK.asking = False


def forget(content_hash: str | None) -> None:
    """Drop every cached page result of the dataset with this content hash."""
    for cached, args, kwargs in _BY_DATASET.pop(content_hash, {}).values():
        cached.clear(*args, **kwargs)


@st.cache_resource(max_entries=128, ttl=CACHE_TTL, show_spinner=False)
def _shared_figure(module: str, name: str, args: tuple, kwargs: tuple):
    import importlib
    return getattr(importlib.import_module(module), name)(*args, **dict(kwargs))


def figure(builder, *args, **kwargs):
    """``builder(*args, **kwargs)``, a plotly figure built once for every session.

    Building a figure (plotly validates every property) cost the heaviest pages 0.2-0.7 s
    per view. The figure object is shared: pages only draw it and hand it to
    :func:`add_to_report`, never change it.
    """
    return _shared_figure(builder.__module__, builder.__qualname__, args,
                          tuple(sorted(kwargs.items())))
