"""Dense LETOR lines parsed by a compiled loop (numba): MSLR / Istella files in one pass.

A dense LETOR line lists every feature in order, ``grade qid:Q 1:v 2:v ... P:v`` with an
optional ``# comment``. :func:`parse_block` reads a block of such lines straight into the
feature matrix: a few seconds for an MSLR-WEB30K fold where a tokenizer that builds a
table of ``2P + 2`` columns first (pandas) took minutes.

Numbers are read exactly: the decimal digits form an integer ``m`` and the value is
``m * 10^e`` or ``m / 10^-e``, both exact doubles when ``m <= 2^53`` and ``|e| <= 22``, so
the one rounding of the product or quotient gives the correctly rounded double (Clinger,
"How to read floating point numbers accurately", PLDI 1990), as ``strtod`` does; the
float32 feature is that double rounded once more, as numpy's cast does. Anything else - a
longer mantissa, a larger exponent, ``nan``, a missing or out-of-order index, a qid that
is not a whole number - stops the parse with the line's number, and the caller reads the
file by the general path, which names a malformed line.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

_POW10 = np.array([10.0 ** k for k in range(23)])
_MAX_MANTISSA = 1 << 53


@njit(cache=True, nogil=True)
def _number(buf, i, end, pow10):
    """``(value, next index, ok)`` of the decimal number at ``buf[i]``."""
    neg = False
    if i < end and (buf[i] == 45 or buf[i] == 43):  # - +
        neg = buf[i] == 45
        i += 1
    m = 0
    digits = 0
    frac = 0
    seen = False
    while i < end and 48 <= buf[i] <= 57:
        if m > 0 or buf[i] != 48:
            digits += 1
        if digits > 17:
            return 0.0, i, False
        m = m * 10 + (buf[i] - 48)
        seen = True
        i += 1
    if i < end and buf[i] == 46:  # .
        i += 1
        while i < end and 48 <= buf[i] <= 57:
            if m > 0 or buf[i] != 48:
                digits += 1
            if digits > 17:
                return 0.0, i, False
            m = m * 10 + (buf[i] - 48)
            frac += 1
            seen = True
            i += 1
    if not seen:
        return 0.0, i, False
    e = 0
    if i < end and (buf[i] == 101 or buf[i] == 69):  # e E
        i += 1
        eneg = False
        if i < end and (buf[i] == 45 or buf[i] == 43):
            eneg = buf[i] == 45
            i += 1
        if i >= end or not (48 <= buf[i] <= 57):
            return 0.0, i, False
        while i < end and 48 <= buf[i] <= 57:
            e = e * 10 + (buf[i] - 48)
            if e > 400:
                return 0.0, i, False
            i += 1
        if eneg:
            e = -e
    e -= frac
    if m > _MAX_MANTISSA:
        return 0.0, i, False
    if m == 0:
        v = 0.0
    elif e >= 0:
        if e > 22:
            return 0.0, i, False
        v = float(m) * pow10[e]
    else:
        if e < -22:
            return 0.0, i, False
        v = float(m) / pow10[-e]
    return (-v if neg else v), i, True


@njit(cache=True, nogil=True)
def data_lines(buf, lo, hi):
    """The data lines of ``buf[lo:hi]`` (not blank, not only a comment)."""
    count = 0
    i = lo
    while i < hi:
        while i < hi and (buf[i] == 32 or buf[i] == 9):
            i += 1
        if i < hi and not (buf[i] == 10 or buf[i] == 13 or buf[i] == 35):
            count += 1
        while i < hi and buf[i] != 10:
            i += 1
        i += 1
    return count


@njit(parallel=True, cache=True)
def parse_all(buf, bounds, p, pow10):
    """Parse ``buf`` (the file's bytes) cut into blocks at ``bounds`` (each just after a
    newline), the blocks in parallel: ``(X, y, q, ok)``; ``ok`` False when a line is not a
    dense LETOR line of ``p`` features (the caller then takes the general path)."""
    T = bounds.size - 1
    counts = np.zeros(T, dtype=np.int64)
    for t in prange(T):
        counts[t] = data_lines(buf, bounds[t], bounds[t + 1])
    starts = np.zeros(T + 1, dtype=np.int64)
    for t in range(T):
        starts[t + 1] = starts[t] + counts[t]
    n = starts[T]
    X = np.empty((n, p), dtype=np.float32)
    y = np.empty(n, dtype=np.float32)
    q = np.empty(n, dtype=np.int64)
    bad = np.zeros(T, dtype=np.int64)
    for t in prange(T):
        rows, b = parse_block(buf[bounds[t]:bounds[t + 1]], p, X, y, q, starts[t], pow10)
        bad[t] = 1 if (b >= 0 or rows != counts[t]) else 0
    return X, y, q, bad.sum() == 0


@njit(cache=True, nogil=True)
def parse_block(buf, p, X, y, q, at, pow10):
    """Parse the whole lines of ``buf`` (uint8) into rows ``at, at + 1, ...`` of ``X``
    (float32, ``p`` columns), ``y`` (grade) and ``q`` (qid, int64).

    Returns ``(rows, bad)``: the rows written, and -1, or the 0-based number (within the
    block) of the first line that is not a dense LETOR line (nothing after it is written).
    Blank lines and lines holding only a comment are skipped; the last line may lack its
    newline.
    """
    n = buf.size
    i = 0
    line = 0
    row = at
    while i < n:
        start_line = line
        # leading blanks
        while i < n and (buf[i] == 32 or buf[i] == 9):
            i += 1
        if i >= n:
            break
        c = buf[i]
        if c == 10 or c == 13 or c == 35:  # blank line or comment only: skip to its end
            while i < n and buf[i] != 10:
                i += 1
            i += 1
            line += 1
            continue
        if row >= X.shape[0]:
            return row - at, start_line
        g, i, ok = _number(buf, i, n, pow10)
        if not ok or g < 0 or i >= n or not (buf[i] == 32 or buf[i] == 9):
            return row - at, start_line
        while i < n and (buf[i] == 32 or buf[i] == 9):
            i += 1
        if i + 4 > n or buf[i] != 113 or buf[i + 1] != 105 or buf[i + 2] != 100 \
                or buf[i + 3] != 58:  # qid:
            return row - at, start_line
        i += 4
        neg = False
        if i < n and buf[i] == 45:
            neg = True
            i += 1
        qv = 0
        nd = 0
        while i < n and 48 <= buf[i] <= 57:
            qv = qv * 10 + (buf[i] - 48)
            nd += 1
            if nd > 18:
                return row - at, start_line
            i += 1
        if nd == 0:
            return row - at, start_line
        for j in range(1, p + 1):
            if i >= n or not (buf[i] == 32 or buf[i] == 9):
                return row - at, start_line
            while i < n and (buf[i] == 32 or buf[i] == 9):
                i += 1
            idx = 0
            nd = 0
            while i < n and 48 <= buf[i] <= 57:
                idx = idx * 10 + (buf[i] - 48)
                nd += 1
                if nd > 9:
                    return row - at, start_line
                i += 1
            if nd == 0 or idx != j or i >= n or buf[i] != 58:
                return row - at, start_line
            i += 1
            v, i, ok = _number(buf, i, n, pow10)
            if not ok:
                return row - at, start_line
            X[row, j - 1] = np.float32(v)
        # trailing blanks, an optional comment, the end of the line
        while i < n and (buf[i] == 32 or buf[i] == 9):
            i += 1
        if i < n and buf[i] == 35:
            while i < n and buf[i] != 10:
                i += 1
        if i < n and buf[i] == 13:
            i += 1
        if i < n and buf[i] != 10:
            return row - at, start_line
        i += 1
        y[row] = np.float32(g)
        q[row] = -qv if neg else qv
        row += 1
        line += 1
    return row - at, -1


# --------------------------------------------------------------------------- row order
#
# A LETOR file names no document, so the documents of a query are put in the order of a
# hash of their own values (:func:`ulr.study.labels._grouped`): the order does not depend
# on the file's, nor on the grade (an order by grade would break the production ranker's
# ties by relevance), and rows with one hash are identical, hence interchangeable (two
# different rows share a 64-bit hash with odds of about 1e-10 in a file of 100,000 rows).


@njit(cache=True, nogil=True, inline="always")
def _mix(h):
    """The 64-bit finalizer of splitmix64: every input bit moves every output bit."""
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


@njit(parallel=True, cache=True)
def row_hashes(Xi, yi):
    """A 64-bit hash of every row's grade and features (float32 viewed as int32: their
    bits), rows in parallel."""
    n, p = Xi.shape
    out = np.empty(n, dtype=np.uint64)
    for i in prange(n):
        h = _mix(np.uint64(yi[i] & 0xFFFFFFFF) ^ np.uint64(0x9E3779B97F4A7C15))
        for j in range(p):
            h = _mix(h ^ np.uint64(Xi[i, j] & 0xFFFFFFFF))
        out[i] = h
    return out


@njit(cache=True, nogil=True)
def permute_rows(X, order):
    """``X[i] = X[order[i]]`` for every row at once, in place (one row of scratch): the
    permutation's cycles are followed, so no second copy of ``X`` is made."""
    n = order.size
    done = np.zeros(n, dtype=np.bool_)
    row = np.empty(X.shape[1], dtype=X.dtype)
    for i in range(n):
        if done[i] or order[i] == i:
            done[i] = True
            continue
        row[:] = X[i]
        j = i
        while True:
            done[j] = True
            k = order[j]
            if k == i:
                X[j] = row
                break
            X[j] = X[k]
            j = k
    return X
