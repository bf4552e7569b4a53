"""sortd.dask on a distributed.LocalCluster: 3 worker processes and 2 CPU daemons, the
workers split between them as two nodes would be (two on A, one on B). Results against
numpy's and pandas' stable sorts of the whole; a worker killed mid-shuffle, a daemon stopped
mid-sort, a worker whose socket points nowhere.

SORTD_DASK_TEST_KEYS sets the keys of the array cases (default 10^7)."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import Daemon

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")
import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402

import sortd  # noqa: E402
import sortd.dask as sdd  # noqa: E402

N = int(os.environ.get("SORTD_DASK_TEST_KEYS", 10**7))


def uneven_chunks(n, parts=7):
    """parts chunk sizes adding up to n, the largest about 4x the smallest."""
    w = np.arange(1, parts + 1, dtype=float)[np.random.default_rng(parts).permutation(parts)]
    sizes = np.floor(w / w.sum() * n).astype(int)
    sizes[-1] += n - sizes.sum()
    return tuple(int(s) for s in sizes)


def total_order(a):
    """Integers in a's order as sortd sorts it (floats in IEEE totalOrder), computed here by
    the signed-integer trick, not by sortd.dask's images."""
    if a.dtype.kind != "f":
        return a
    bits = a.view(f"i{a.itemsize}").astype(np.int64)
    return np.where(bits < 0, bits ^ ((1 << (8 * a.itemsize - 1)) - 1), bits)


def keys(dtype, dist, n, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        a = rng.standard_normal(n) * 1e6
    else:
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    a = a.astype(dtype)
    if dist == "one-value":  # 90% one value, at random places
        a[rng.random(n) < 0.9] = a[0]
    elif dist == "sorted":
        a.sort(kind="stable")
    elif dist == "reversed":
        a[::-1].sort(kind="stable")
    elif dist == "nan-zeros":
        pick = rng.integers(0, 6, n)
        a[pick == 0] = np.nan
        a[pick == 1] = -np.nan
        a[pick == 2] = 0.0
        a[pick == 3] = -0.0
    return a


@pytest.fixture(scope="module")
def nodes(tmp_root):
    """Two daemons (A and B), as on two nodes."""
    daemons = {"A": Daemon(tmp_root), "B": Daemon(tmp_root)}
    yield daemons
    for d in daemons.values():
        d.stop()


def add_worker(cluster, name, sock):
    env = {"SORTD_SOCKET": sock, "PYTHONPATH": os.pathsep.join(sys.path)}
    cluster.worker_spec[name] = {"cls": distributed.Nanny,
                                 "options": {"nthreads": 1, "env": env}}
    cluster.sync(cluster._correct_state)


@pytest.fixture(scope="module")
def cluster(nodes):
    c = distributed.LocalCluster(n_workers=0, processes=True, dashboard_address=None,
                                 silence_logs=50)
    for name, node in (("w0", "A"), ("w1", "A"), ("w2", "B")):
        add_worker(c, name, nodes[node].sock)
    client = distributed.Client(c)
    client.wait_for_workers(3, timeout=120)
    yield client
    client.close()
    c.close()


def socket_of(client):
    return client.run(lambda: os.environ["SORTD_SOCKET"])


def test_workers_split_between_daemons(cluster, nodes):
    assert sorted(socket_of(cluster).values()) == sorted(
        [nodes["A"].sock, nodes["A"].sock, nodes["B"].sock])


def test_import_sortd_imports_no_dask():
    code = "import sys, sortd; assert 'dask' not in sys.modules, sorted(sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True,
                   env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))


CASES = [(t, d) for t in ("u4", "i8", "f8") for d in ("uniform", "one-value", "sorted",
                                                          "reversed")] + [("f8", "nan-zeros")]


@pytest.mark.parametrize("dtype,dist", CASES)
def test_argsort_and_sort(cluster, dtype, dist):
    a = keys(dtype, dist, N, seed=len(dist))
    x = da.from_array(a, chunks=(uneven_chunks(N),))
    want = np.argsort(total_order(a), kind="stable")
    if dist != "nan-zeros":  # numpy's own order is sortd's here
        assert (want == np.argsort(a, kind="stable")).all()
    idx = sdd.argsort(x)
    got = idx.compute()
    assert got.dtype == np.int64 and (got == want).all()
    # Skew: every output chunk holds about N / 7 keys, however many are equal.
    sizes = [len(b) for b in dask.compute(*idx.to_delayed())]
    assert len(sizes) == 7 and sum(sizes) == N and max(sizes) < 1.5 * N / 7, sizes
    if dist in ("uniform", "one-value", "nan-zeros"):
        s = sdd.sort(x).compute()
        assert s.dtype == a.dtype and (s.view(f"u{a.itemsize}") ==
                                       a[want].view(f"u{a.itemsize}")).all()


def test_descending(cluster):
    a = keys("i8", "one-value", N // 10, seed=3)
    x = da.from_array(a, chunks=(uneven_chunks(len(a), 5),))
    want = np.argsort(~a, kind="stable")  # ~a: a's order reversed, exactly
    assert (sdd.argsort(x, descending=True).compute() == want).all()
    assert (sdd.sort(x, descending=True, npartitions=3).compute() == a[want]).all()


def test_topk(cluster):
    a = keys("f8", "nan-zeros", N // 10, seed=4)
    a[::1000] = 7.5  # ties across chunks, at the top
    a[np.isnan(a)] = 0.0
    x = da.from_array(a, chunks=(uneven_chunks(len(a)),))
    for largest in (True, False):
        order = np.argsort(total_order(a), kind="stable")
        if largest:  # the largest first, equal keys by position
            order = np.argsort(~total_order(a), kind="stable")
        vals, pos = sdd.topk(x, 50, largest)
        vals, pos = dask.compute(vals, pos)
        assert (pos == order[:50]).all()
        assert (vals.view(np.uint64) == a[order[:50]].view(np.uint64)).all()


def test_sort_values(cluster):
    n = N // 5
    rng = np.random.default_rng(5)
    pdf = pd.DataFrame({"a": rng.integers(0, 20, n).astype(np.int32),
                        "b": rng.standard_normal(n), "c": np.arange(n, dtype=np.uint64)},
                       index=rng.permutation(n))
    df = dd.from_pandas(pdf, npartitions=5, sort=False)  # rows in pdf's order
    got = sdd.sort_values(df, "a").compute()
    pd.testing.assert_frame_equal(got, pdf.sort_values("a", kind="stable"))
    got = sdd.sort_values(df, ["a", "b"], ascending=[False, True], npartitions=4)
    assert got.npartitions == 4 and not got.known_divisions
    want = pdf.sort_values(["a", "b"], ascending=[False, True], kind="stable")
    pd.testing.assert_frame_equal(got.compute(), want)


def test_small_and_empty_chunks(cluster):
    """float16 keys (NaN of both signs, +-0), empty chunks, more output chunks than keys,
    and DataFrame partitions left empty by a filter."""
    a = np.array([np.nan, -0.0, 0.0, -np.nan, 1.5, -2.0, np.inf, 0.0, -0.0] * 130,
                 np.float16)[:1025]
    x = da.from_array(a, chunks=((3, 0, 5, 1000, 0, 17),))
    want = np.argsort(total_order(a), kind="stable")
    assert (sdd.argsort(x).compute() == want).all()
    got = sdd.sort(x, descending=True).compute()
    want = np.argsort(~total_order(a), kind="stable")
    assert (got.view(np.uint16) == a[want].view(np.uint16)).all()
    few = da.from_array(np.array([3, 1, 2, 1, 0], np.uint8), chunks=2)
    out = sdd.argsort(few, npartitions=8)
    assert (out.compute() == [4, 1, 3, 2, 0]).all() and out.npartitions == 8
    pdf = pd.DataFrame({"a": np.arange(1000, dtype=np.int16)[::-1].copy()})
    df = dd.from_pandas(pdf, npartitions=4, sort=False)
    kept = df[df.a < 300]  # the first partitions keep no row
    pd.testing.assert_frame_equal(sdd.sort_values(kept, "a").compute(),
                                  pdf[pdf.a < 300].sort_values("a", kind="stable"))


def test_refusals(cluster):
    x = da.from_array(np.zeros((4, 4), np.uint32), chunks=2)
    with pytest.raises(sortd.InvalidRequest, match="1-D"):
        sdd.sort(x)
    with pytest.raises(sortd.InvalidRequest, match="dtypes"):
        sdd.sort(da.from_array(np.zeros(4, bool)))
    df = dd.from_pandas(pd.DataFrame({"a": [1, 2], "s": ["x", "y"]}), npartitions=1)
    with pytest.raises(sortd.InvalidRequest, match="no column 'z'"):
        sdd.sort_values(df, "z")
    with pytest.raises(sortd.InvalidRequest, match="dtypes"):
        sdd.sort_values(df, "s")
    with pytest.raises(sortd.InvalidRequest, match="ascending"):
        sdd.sort_values(df, "a", ascending=[True, False])
    with pytest.raises(sortd.InvalidRequest, match="npartitions"):
        sdd.sort(da.from_array(np.zeros(4, np.uint8)), npartitions=0)


def running(client, word):
    """How many tasks whose key holds word the scheduler has in memory."""
    def count(dask_scheduler):
        return sum(1 for ts in dask_scheduler.tasks.values()
                   if ts.state == "memory" and word in str(ts.key))
    return client.run_on_scheduler(count)


def wait_for(cond, timeout=120):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_worker_killed_mid_shuffle(cluster):
    a = keys("u4", "uniform", N, seed=6)
    x = da.from_array(a, chunks=(uneven_chunks(N),))
    fut = cluster.compute(sdd.argsort(x))
    wait_for(lambda: running(cluster, "partition") >= 2)
    assert not fut.done()
    pids = cluster.run(os.getpid)
    victim = sorted(pids)[0]
    os.kill(pids[victim], signal.SIGKILL)
    assert (fut.result(timeout=300) == np.argsort(a, kind="stable")).all()
    cluster.wait_for_workers(3, timeout=120)
    assert pids[victim] not in cluster.run(os.getpid).values()


def test_daemon_stopped_mid_sort(cluster, nodes, tmp_root):
    a = keys("i8", "uniform", N, seed=7)
    x = da.from_array(a, chunks=(uneven_chunks(N),))
    fut = cluster.compute(sdd.argsort(x))
    wait_for(lambda: running(cluster, "partition") >= 1)
    nodes["B"].proc.kill()
    nodes["B"].proc.wait()
    nodes["B"].stop()  # its log
    with pytest.raises(sortd.ConnectionLost) as e:
        fut.result(timeout=300)
    assert "sortd.dask: dask worker tcp://" in str(e.value)
    assert nodes["B"].sock in str(e.value)
    os.unlink(nodes["B"].sock)  # the killed daemon's, left behind
    nodes["B"] = Daemon(tmp_root, sock=nodes["B"].sock)
    del fut
    assert (sdd.argsort(x).compute() == np.argsort(a, kind="stable")).all()


def test_worker_with_no_daemon(cluster, tmp_root):
    nowhere = os.path.join(tmp_root, "nobody-listens.sock")
    add_worker(cluster.cluster, "lost", nowhere)
    cluster.wait_for_workers(4, timeout=120)
    lost = [w for w, s in socket_of(cluster).items() if s == nowhere]
    assert len(lost) == 1
    x = da.from_array(np.arange(1000, dtype=np.uint32)[::-1].copy(), chunks=300)
    with pytest.raises(sortd.NotRunning) as e:
        cluster.compute(sdd.sort(x), workers=lost, allow_other_workers=False).result(60)
    assert f"sortd.dask: dask worker {lost[0]}, socket {nowhere}: " in str(e.value)
    assert "sortd is not running" in str(e.value)
    del cluster.cluster.worker_spec["lost"]
    cluster.cluster.sync(cluster.cluster._correct_state)
