"""The package as pip builds it, and its version against the project's."""
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

import sortd

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)


def test_versions_agree():
    want = os.environ.get("SORTD_VERSION")
    if not want:
        pytest.skip("SORTD_VERSION is not set: run under meson test")
    assert sortd.__version__ == want
    with open(os.path.join(PACKAGE, "pyproject.toml")) as f:
        assert f'version = "{want}"' in f.read()


def test_sources_listed_for_meson():
    """meson install lists the package's files one by one: none may be missing."""
    with open(os.path.join(PACKAGE, "meson.build")) as f:
        listed = f.read()
    for name in os.listdir(os.path.join(PACKAGE, "sortd")):
        if name.endswith(".py") and name != "_config.py":
            assert f"sortd/{name}" in listed, name


def test_pip_builds_and_installs(tmp_path, daemon):
    if subprocess.run([sys.executable, "-m", "pip", "--version"],
                      capture_output=True).returncode != 0:
        pytest.skip("pip is not installed for this python")
    # A copy, since setuptools writes its egg-info next to the sources; no network here, so
    # the build uses the setuptools already installed.
    src = tmp_path / "src"
    shutil.copytree(PACKAGE, src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--no-cache-dir", "-q", "-w", str(tmp_path), str(src)],
                   check=True, env=dict(os.environ, PIP_NO_INDEX="1"), cwd=tmp_path)
    wheel = next(p for p in os.listdir(tmp_path) if p.endswith(".whl"))
    names = zipfile.ZipFile(tmp_path / wheel).namelist()
    assert "sortd/_client.py" in names and "sortd/_config.py" in names
    assert not any("tests" in n or n.endswith(".in") for n in names), names
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q",
                    "--target", str(target), str(tmp_path / wheel)], check=True)
    code = ("import numpy as np, sortd, sys; a = np.arange(5000, dtype=np.int32)[::-1].copy(); "
            "sortd.sort(a); assert (a == np.arange(5000)).all(); print(sortd.__file__)")
    env = dict(os.environ, PYTHONPATH=str(target), SORTD_SOCKET=daemon.sock)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(str(target))
