"""The CUDA checks against a GPU daemon: sortd's sorts of CuPy arrays and PyTorch tensors,
compared with cupy.sort and torch.sort(stable=True), 1-D and along the rows of 2-D arrays, and
their top-k. test_cuda.py runs them under pytest;
scripts/gpu-check runs this file as a script where the GPU machine's Python has numpy but no
pytest (`python3 cuda_checks.py SOCKET`): one line a check, then "N passed, M failed, K
skipped", exit 1 if any failed. Only numpy is needed beside CuPy or PyTorch."""
import sys

import numpy as np

CUPY_DTYPES = ["uint8", "int16", "uint32", "int32", "float32", "int64", "float64"]
TORCH_DTYPES = ["uint8", "int16", "int32", "float32", "int64", "float64"]


class Skip(Exception):
    """The check cannot run here; its message says why."""


def _import(name):
    try:
        return __import__(name)
    except ImportError as e:
        raise Skip(f"{name} is not installed ({e})") from e


def check_cupy(sock, dtype):
    import sortd
    cupy = _import("cupy")
    rng = cupy.random.default_rng(1)
    a = (rng.integers(0, 1 << 30, 1 << 20) - (1 << 29)).astype(dtype)
    with sortd.Client(sock) as c:
        want = cupy.sort(a)  # no NaNs: cupy's order is totalOrder's
        b = a.copy()
        c.sort(b)
        assert bool((b == want).all()), "sort differs from cupy.sort"
        idx = c.argsort(a)
        assert bool((a[idx.astype(cupy.int64)] == want).all()), "argsort does not sort a"
        d = a.copy()
        c.sort(d, descending=True)
        assert bool((d == want[::-1]).all()), "descending sort differs"


def check_torch(sock, dtype):
    import sortd
    torch = _import("torch")
    if not torch.cuda.is_available():
        raise Skip("PyTorch sees no GPU")
    t = getattr(torch, dtype)
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randint(-100, 100, (1 << 20,), device="cuda", generator=g).to(t)
    with sortd.Client(sock) as c:
        want, want_idx = torch.sort(a, stable=True)
        b = a.clone()
        c.sort(b)
        assert torch.equal(b, want), "sort differs from torch.sort"
        idx = c.argsort(a, index_dtype=np.int64)
        assert torch.equal(idx, want_idx), "argsort differs from torch.sort's indices"
        vals = torch.arange(a.numel(), device="cuda", dtype=torch.int64)
        k = a.clone()
        c.sort(k, values=vals)
        assert torch.equal(vals, want_idx), "values do not follow their keys"


def check_cupy_rows(sock, dtype):
    """A 2-D CuPy array: each row sorted as cupy.sort(axis=-1), argsorted within it, and its
    top 10 the largest of the row, largest first, at the indices they came from."""
    import sortd
    cupy = _import("cupy")
    rng = cupy.random.default_rng(2)
    a = (rng.integers(0, 1 << 30, (256, 4096)) - (1 << 29)).astype(dtype)
    with sortd.Client(sock) as c:
        want = cupy.sort(a, axis=-1)
        b = a.copy()
        c.sort(b)
        assert bool((b == want).all()), "rows differ from cupy.sort(axis=-1)"
        idx = c.argsort(a).astype(cupy.int64)
        assert bool((cupy.take_along_axis(a, idx, -1) == want).all()), "argsort of the rows"
        vals, where = c.topk(a, 10)
        assert vals.shape == where.shape == (256, 10), "top-k's shape"
        assert bool((vals == want[:, ::-1][:, :10]).all()), "top-k's values"
        assert bool((cupy.take_along_axis(a, where, -1) == vals).all()), "top-k's indices"


def check_torch_rows(sock, dtype):
    """A 2-D tensor: rows as torch.sort(dim=-1, stable=True), and top-k's indices those of
    the stable descending sort (ties by index), its values those keys."""
    import sortd
    torch = _import("torch")
    if not torch.cuda.is_available():
        raise Skip("PyTorch sees no GPU")
    t = getattr(torch, dtype)
    g = torch.Generator(device="cuda").manual_seed(2)
    a = torch.randint(-100, 100, (512, 1000), device="cuda", generator=g).to(t)
    with sortd.Client(sock) as c:
        want, want_idx = torch.sort(a, dim=-1, stable=True)
        b = a.clone()
        c.sort(b)
        assert torch.equal(b, want), "rows differ from torch.sort(dim=-1)"
        idx = c.argsort(a, index_dtype=np.int64)
        assert torch.equal(idx, want_idx), "argsort differs from torch.sort's indices"
        vals, where = c.topk(a, 16)
        _, desc_idx = torch.sort(a, dim=-1, descending=True, stable=True)
        assert where.dtype == torch.int64 and torch.equal(where, desc_idx[:, :16]), \
            "top-k's indices differ from the stable descending sort's"
        assert torch.equal(vals, torch.gather(a, -1, where)), "top-k's values"


CHECKS = [(f"cupy[{d}]", check_cupy, d) for d in CUPY_DTYPES] + \
         [(f"torch[{d}]", check_torch, d) for d in TORCH_DTYPES] + \
         [(f"cupy_rows[{d}]", check_cupy_rows, d) for d in CUPY_DTYPES] + \
         [(f"torch_rows[{d}]", check_torch_rows, d) for d in TORCH_DTYPES]


def main(argv):
    import os
    import traceback
    if len(argv) != 2:
        print("usage: cuda_checks.py SOCKET (a sortd on a GPU engine)", file=sys.stderr)
        return 2
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for name, check, dtype in CHECKS:
        try:
            check(argv[1], dtype)
        except Skip as e:
            counts["skipped"] += 1
            print(f"SKIP {name}: {e}")
            continue
        except Exception:
            counts["failed"] += 1
            print(f"FAIL {name}:\n{traceback.format_exc()}")
            continue
        counts["passed"] += 1
        print(f"PASS {name}")
    print(", ".join(f"{v} {k}" for k, v in counts.items()))
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
