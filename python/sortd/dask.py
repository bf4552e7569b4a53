"""Dask arrays and DataFrames sorted across a cluster, each node's part by its own sortd.

    import sortd.dask
    s = sortd.dask.sort(x)                  # a 1-D dask.array, chunks in global order
    i = sortd.dask.argsort(x)               # global int64 positions
    values, positions = sortd.dask.topk(x, 10)
    df2 = sortd.dask.sort_values(df, ["a", "b"], ascending=[True, False])

Dask schedules, moves and retries the work; sortd sorts what lands on each node. A sort takes
a sample of every chunk (computed when the call is made, as Dask's own sort_values computes
its divisions), picks splitters at the sample's quantiles, then builds a graph: each chunk
sorted on its worker by the node's sortd and cut at the splitters; the pieces shuffled by
Dask, each output chunk taking one piece of every input chunk; each output chunk sorted by
its node's sortd. The order is sortd's (floats in IEEE totalOrder) and stable: equal keys keep
their order in the whole, and a run of equal keys is spread by position over as many output
chunks as it needs.

Each worker's tasks use the daemon at SORTD_SOCKET as the worker sees it, else the default
socket. A worker that reaches no daemon fails its task with sortd's error, naming the worker
and the socket; nothing falls back to numpy. docs/distributed.md says how to deploy it.

This module imports dask; `import sortd` does not import this module.
"""
import functools

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np

from . import _dask_node as node
from ._errors import InvalidRequest

__all__ = ["sort", "argsort", "topk", "sort_values"]

SAMPLES_PER_PART = 64  # per output chunk, from every input chunk: splitters within ~1/8 of a chunk


def _parts(npartitions, default):
    parts = default if npartitions is None else npartitions
    if not isinstance(parts, int) or parts < 1:
        raise InvalidRequest(f"sortd.dask: npartitions must be a positive int, not {parts!r}")
    return parts


# Tasks are impure (a key of their own each call): a sort that failed, a daemon having gone
# away, is simply asked again, and does not meet its failed tasks under the same keys.


def _plan(chunks, columns_of, descending, parts):
    """Every chunk's offset in the whole and the splitters, from a sample of each chunk
    (computed now)."""
    sample = dask.delayed(node.sample, pure=False)
    count = SAMPLES_PER_PART * parts
    samples = dask.compute(*[sample(columns_of(c), descending, count, i)
                             for i, c in enumerate(chunks)])
    offsets = np.concatenate([[0], np.cumsum([s[0] for s in samples])])
    return offsets, node.splitters(samples, offsets[:-1], parts, descending)


def _shuffle(chunks, offsets, partition, local, parts):
    """Delayed output chunks: each input chunk partitioned (partition(chunk, offset) ->
    parts pieces), then each output chunk made from its piece of every input (local)."""
    cut = [dask.delayed(partition, pure=False)(c, int(off)) for c, off in zip(chunks, offsets)]
    return [dask.delayed(local, pure=False)([c[j] for c in cut]) for j in range(parts)]


def _array_1d(x):
    if not isinstance(x, da.Array) or x.ndim != 1:
        raise InvalidRequest("sortd.dask sorts a 1-D dask.array; for several dimensions, "
                             "sort each block with sortd.sort through map_blocks")
    node.key_dtype(x.dtype)
    return list(x.to_delayed().ravel())


def _sort_array(x, descending, npartitions, index):
    chunks = _array_1d(x)
    parts = _parts(npartitions, len(chunks))
    offsets, spl = _plan(chunks, lambda c: [c], [descending], parts)
    out = _shuffle(chunks, offsets,
                   functools.partial(node.partition_array, splitters=spl, descending=descending,
                                     index=index),
                   functools.partial(node.local_sort_array, descending=descending, index=index),
                   parts)
    dtype = np.dtype(np.int64) if index else x.dtype
    return da.concatenate([da.from_delayed(o, (np.nan,), dtype, name=f"sortd-local_sort-{o.key}")
                           for o in out])


def sort(x, descending=False, npartitions=None):
    """x (a 1-D dask.array of integers or floats) sorted, stably, as a dask.array whose chunks
    (npartitions of them, default x's count; sizes known once computed) are in global order."""
    return _sort_array(x, descending, npartitions, index=False)


def argsort(x, descending=False, npartitions=None):
    """The global int64 positions that sort x, stably (equal keys by position), as a dask.array
    in chunks as sort()'s."""
    return _sort_array(x, descending, npartitions, index=True)


def topk(x, k, largest=True):
    """(values, positions): the k largest keys of x (largest=False: the smallest) in order,
    equal keys by position, and their global int64 positions, as dask.arrays of one chunk.
    Each chunk's top-k is taken on its worker, then the top-k of those."""
    chunks = _array_1d(x)
    if not isinstance(k, int) or k < 0:
        raise InvalidRequest(f"sortd.dask.topk: k must be a non-negative int, not {k!r}")
    starts = np.concatenate([[0], np.cumsum(x.chunks[0])])
    if np.isnan(starts).any():
        raise InvalidRequest("sortd.dask.topk needs known chunk sizes: "
                             "call x.compute_chunk_sizes() first")
    take = dask.delayed(node.topk_chunk, pure=False)
    candidates = [take(c, int(off), k, largest) for c, off in zip(chunks, starts)]
    both = dask.delayed(node.topk_merge, pure=False, nout=2)(candidates, k, largest)
    m = min(k, int(starts[-1]))
    return (da.from_delayed(both[0], (m,), x.dtype), da.from_delayed(both[1], (m,), np.int64))


def _by(df, by, ascending):
    if not isinstance(df, dd.DataFrame):
        raise InvalidRequest("sortd.dask.sort_values sorts a dask.dataframe.DataFrame")
    by = [by] if isinstance(by, str) else list(by)
    if not 1 <= len(by) <= 8:
        raise InvalidRequest(f"sortd.dask.sort_values: 1 to 8 key columns, not {len(by)}")
    for c in by:
        if c not in df.columns:
            raise InvalidRequest(f"sortd.dask.sort_values: no column {c!r}")
        node.key_dtype(df.dtypes[c])
    asc = [ascending] * len(by) if isinstance(ascending, bool) else list(ascending)
    if len(asc) != len(by) or not all(isinstance(a, bool) for a in asc):
        raise InvalidRequest("sortd.dask.sort_values: ascending is a bool or one bool a column")
    return by, [not a for a in asc]


def sort_values(df, by, ascending=True, npartitions=None):
    """df's rows ordered by the columns by (one name or up to 8, the first most significant;
    ascending: one bool or one a column), stably, keys in sortd's order (floats in totalOrder:
    NaN last ascending, first descending). Each partition's rows are reordered by the
    permutation its node's sortd returns; the index moves with its rows. As Dask's own
    sort_values, the result's divisions are unknown: its index is not sorted."""
    by, descending = _by(df, by, ascending)
    chunks = list(df.to_delayed())
    parts = _parts(npartitions, len(chunks))
    offsets, spl = _plan(chunks, functools.partial(_frame_columns, by=by), descending, parts)
    out = _shuffle(chunks, offsets,
                   functools.partial(node.partition_frame, by=by, descending=descending,
                                     splitters=spl),
                   functools.partial(node.local_sort_frame, by=by, descending=descending),
                   parts)
    return dd.from_delayed(out, meta=df._meta, verify_meta=False, prefix="sortd-local_sort")


def _frame_columns(pdf, by):
    return dask.delayed(node.frame_columns, pure=False)(pdf, by)

