"""What sortd.dask's tasks run on a node: a sample of a chunk, a chunk sorted by the node's
sortd and cut at the splitters, the pieces' local sort, a chunk's top-k. Each sort goes to
the node's own daemon (SORTD_SOCKET as the worker sees it, else the default socket).

The global order is (key, position in the whole): keys in sortd's order (floats in IEEE
totalOrder), equal keys by their position, so every result is stable, and a run of equal keys
longer than an output chunk is cut by position across the chunks it spans. A splitter is one
element's (key images..., position); a chunk sorted stably holds its equal keys in position
order, so the cut before a splitter is found by bisection."""
import os

from . import _errors
from ._arrays import _np as np


def _where():
    try:
        from distributed import get_worker
        return f"dask worker {get_worker().address}"
    except (ImportError, ValueError):
        return f"process {os.getpid()}"


def on_node(call, *args, **kwargs):
    """call(*args, **kwargs), a sortd call; a daemon that cannot be reached or goes away
    fails the task with sortd's error, naming the worker and the socket: never numpy's sort
    instead."""
    try:
        return call(*args, **kwargs)
    except _errors.ConnectionLost as e:
        from ._client import default_socket
        raise type(e)(f"sortd.dask: {_where()}, socket {default_socket()}: {e}") from e


def key_dtype(dtype):
    """dtype, if sortd.dask sorts keys of it (numpy's integers and floats); else a clear
    error."""
    dtype = np().dtype(dtype)
    if dtype.kind not in "uif" or dtype.itemsize > 8:
        raise _errors.InvalidRequest(
            f"sortd.dask sorts keys of unsigned, signed and float dtypes of up to 64 bits, "
            f"not {dtype}")
    return dtype


def images(keys, descending):
    """Unsigned integers that compare as keys do in sortd's order (descending: reversed)."""
    n = np()
    keys = n.asarray(keys)
    width = key_dtype(keys.dtype).itemsize
    u = n.dtype(f"=u{width}")
    bits = keys.astype(keys.dtype.newbyteorder("="), copy=False).view(u)
    sign = u.type(1 << (8 * width - 1))
    if keys.dtype.kind == "i":
        img = bits ^ sign
    elif keys.dtype.kind == "f":
        img = n.where(bits & sign, ~bits, bits | sign)
    else:
        img = bits.copy()
    return ~img if descending else img


def sample(columns, descending, count, seed):
    """(rows, [images of the sampled keys, a column each], their positions in the chunk):
    up to count rows drawn at random, each once."""
    n = np()
    rows = len(columns[0])
    pos = n.unique(n.random.default_rng(seed).integers(0, rows, min(count, rows)))
    return rows, [images(c[pos], d) for c, d in zip(columns, descending)], pos


def splitters(samples, offsets, parts, descending):
    """parts - 1 splitters, (images..., position) tuples, at the quantiles of the chunks'
    samples in the global order, each sampled row weighing as many rows as its chunk has per
    sample, so that chunks of uneven sizes count by their size."""
    n = np()
    ncols = len(descending)
    imgs = [n.concatenate([s[1][c] for s in samples]) for c in range(ncols)]
    where = n.concatenate([off + s[2] for s, off in zip(samples, offsets)])
    weight = n.concatenate([n.full(len(s[2]), s[0] / max(len(s[2]), 1)) for s in samples])
    if len(where) == 0:
        return []
    order = n.lexsort([where] + imgs[::-1])
    below = n.cumsum(weight[order]) - weight[order]  # rows before each sample, in order
    total = sum(s[0] for s in samples)
    picks = order[n.searchsorted(below, [j * total / parts for j in range(1, parts)])
                  .clip(0, len(order) - 1)]
    return [tuple(int(c[p]) for c in imgs) + (int(where[p]),) for p in picks]


def cuts(columns, descending, where, splitters):
    """The positions in a chunk sorted stably (columns, where: the sorted keys and their
    global positions) before each splitter, then its length."""
    rows = len(where)

    def at(p):
        return tuple(int(images(c[p:p + 1], d)[0]) for c, d in zip(columns, descending)) + \
            (int(where[p]),)

    out, lo = [0], 0
    for s in splitters:
        hi = rows
        while lo < hi:
            mid = (lo + hi) // 2
            if at(mid) < s:
                lo = mid + 1
            else:
                hi = mid
        out.append(lo)
    out.append(rows)
    return out


def partition_array(chunk, offset, splitters, descending, index):
    """A chunk sorted by the node's sortd and cut at the splitters: a list of pieces, each
    (keys, global positions or None)."""
    import sortd
    n = np()
    chunk = n.ascontiguousarray(chunk)
    perm = on_node(sortd.argsort, chunk, descending=descending) if len(chunk) else \
        n.empty(0, n.uint32)
    keys = chunk[perm]
    where = perm.astype(n.int64) + offset
    c = cuts([keys], [descending], where, splitters)
    return [(keys[a:b], where[a:b] if index else None) for a, b in zip(c, c[1:])]


def local_sort_array(pieces, descending, index):
    """The pieces of one output chunk, in chunk order, sorted by the node's sortd: the keys,
    or with index their global positions."""
    import sortd
    n = np()
    keys = n.concatenate([p[0] for p in pieces])
    if not index:
        if len(keys):
            on_node(sortd.sort, keys, descending=descending)
        return keys
    where = n.concatenate([p[1] for p in pieces])
    if not len(keys):
        return where
    return where[on_node(sortd.argsort, keys, descending=descending)]


def order(columns, descending):
    """The stable permutation of rows by the key columns, from the node's sortd: one column
    as a plain argsort, which skips the columns layer's image of the keys."""
    import sortd
    if len(columns) == 1:
        return on_node(sortd.argsort, columns[0], descending=descending[0])
    return on_node(sortd.sort_by, columns, descending=descending)


def frame_columns(pdf, by):
    n = np()
    return [n.ascontiguousarray(pdf[c].to_numpy()) for c in by]


def partition_frame(pdf, offset, by, descending, splitters):
    """A partition's rows sorted by the node's sortd (by its key columns) and cut at the
    splitters: a list of DataFrames."""
    n = np()
    cols = frame_columns(pdf, by)
    perm = order(cols, descending) if len(pdf) else n.empty(0, n.int64)
    c = cuts([col[perm] for col in cols], descending, perm.astype(n.int64) + offset, splitters)
    rows = pdf.iloc[perm]
    return [rows.iloc[a:b] for a, b in zip(c, c[1:])]


def local_sort_frame(pieces, by, descending):
    """The pieces of one output partition, in partition order, sorted by the node's sortd."""
    import pandas
    rows = pandas.concat(pieces)
    if not len(rows):
        return rows
    return rows.iloc[order(frame_columns(rows, by), descending)]


def topk_chunk(chunk, offset, k, largest):
    """A chunk's k largest (or smallest) keys in order, and their global positions."""
    import sortd
    n = np()
    chunk = n.ascontiguousarray(chunk)
    if not len(chunk):
        return chunk, n.empty(0, n.int64)
    vals, idx = on_node(sortd.topk, chunk, k, largest)
    return vals, idx.astype(n.int64) + offset


def topk_merge(candidates, k, largest):
    """The top-k of the chunks' candidates, in chunk order: equal keys by position."""
    import sortd
    n = np()
    vals = n.concatenate([c[0] for c in candidates])
    where = n.concatenate([c[1] for c in candidates])
    if not len(vals):
        return vals, where
    top, idx = on_node(sortd.topk, vals, k, largest)
    return top, where[idx]
