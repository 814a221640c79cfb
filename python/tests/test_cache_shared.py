"""The kernel cache shared and read-only (no GPU, no torch): files other
users can read (the umask's modes, not mkstemp's 0600), one compile when
processes miss the same kernel at once (a lock per entry), and libdevice
found when the cache directory cannot be written.
"""

import multiprocessing
import os
import stat
import time

import pytest

import norm_mlir
from norm_mlir import cache


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NORM_MLIR_CACHE", str(tmp_path / "cache"))
    cache.clear_memory()
    for k in cache.stats:
        cache.stats[k] = 0
    yield
    cache.clear_memory()


def _spec(**kw):
    return dict(dict(op="rms_norm", n=256, dtype="bf16", format="ptx"), **kw)


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o002, 0o664),
                                        (0o077, 0o600)])
def test_entries_take_the_umask_modes(umask, mode):
    """Before, every entry was 0600 (mkstemp's): no other user or rank of
    a shared cache could read it."""
    old = os.umask(umask)
    try:
        k = cache.get(**_spec())
    finally:
        os.umask(old)
    d = cache.directory()
    for name in (k.key + ".image", k.key + ".json", k.key + ".lock"):
        got = stat.S_IMODE(os.stat(os.path.join(d, name)).st_mode)
        assert got == mode, (name, oct(got), oct(mode))


def _worker(cache_dir, start, out):
    """One process: a compile made slow (0.5 s), started with the others;
    reports what it counted."""
    os.environ["NORM_MLIR_CACHE"] = cache_dir
    real = cache.compile_spec

    def slow(**kw):
        time.sleep(0.5)
        return real(**kw)

    cache.compile_spec = slow
    while time.time() < start:
        time.sleep(0.005)
    k = cache.get(**_spec())
    out.put((dict(cache.stats), k.key, len(k.image)))


def test_concurrent_processes_compile_once(tmp_path):
    """Three processes miss the same kernel at the same moment: one
    compiles, the others wait on the entry's lock and read its files.
    Without the lock each compiled (and wrote) its own."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    start = time.time() + 3.0  # after the three have imported norm_mlir
    procs = [ctx.Process(target=_worker,
                         args=(str(tmp_path / "shared"), start, out))
             for _ in range(3)]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    assert time.time() > start
    compiled = sum(r[0]["compiled"] for r in results)
    disk = sum(r[0]["disk"] for r in results)
    assert (compiled, disk) == (1, 2), results
    assert len({r[1] for r in results}) == 1
    assert len({r[2] for r in results}) == 1


def test_lock_is_taken_around_the_compile(monkeypatch):
    """The compile runs inside the entry's lock (a second process's view:
    a non-blocking flock on the same file fails meanwhile)."""
    fcntl = pytest.importorskip("fcntl")
    seen = []
    real = cache.compile_spec

    def probe(**kw):
        k = real(**kw)
        path = os.path.join(cache.directory(), cache.key_of(
            cache._fields(kw)) + ".lock")
        fd = os.open(path, os.O_RDWR)  # another open file description
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            seen.append("free")
        except BlockingIOError:
            seen.append("held")
        finally:
            os.close(fd)
        return k

    monkeypatch.setattr(cache, "compile_spec", probe)
    cache.get(**_spec())
    assert seen == ["held"]


def test_entry_written_meanwhile_is_read_not_compiled(monkeypatch):
    """A miss that finds the entry written once it holds the lock (another
    process compiled it while it waited) reads it."""
    k = cache.get(**_spec())
    cache.clear_memory()
    for s in cache.stats:
        cache.stats[s] = 0
    real_read = cache._read
    calls = []

    def read(key, fields, count=True):
        calls.append(count)
        return None if len(calls) == 1 else real_read(key, fields, count)

    monkeypatch.setattr(cache, "_read", read)
    k2 = cache.get(**_spec())
    assert calls == [True, False]
    assert cache.stats["compiled"] == 0 and cache.stats["disk"] == 1
    assert k2.image == k.image and k2.compile_s == 0.0


def test_read_only_cache_is_read(tmp_path, monkeypatch):
    """A cache filled by someone else, then read where nothing can be
    written (no lock file, no entry): hits, no compile."""
    k = cache.get(**_spec())
    cache.clear_memory()
    for s in cache.stats:
        cache.stats[s] = 0

    def refuse(*a, **kw):
        raise PermissionError(13, "read-only file system")

    monkeypatch.setattr(os, "open", refuse)
    monkeypatch.setattr(cache.tempfile, "mkstemp", refuse)
    k2 = cache.get(**_spec())
    assert k2.image == k.image and cache.stats["disk"] == 1
    k3 = cache.get(**_spec(n=512))  # a miss: compiled, kept in memory
    assert k3.image and cache.stats["compiled"] == 1


# ------------------------------------------------------------- libdevice

def _libdevice():
    root = norm_mlir.find_toolkit()
    assert root, "no libdevice on this machine"
    return os.path.realpath(os.path.join(root, norm_mlir._LIBDEVICE))


@pytest.fixture
def pip_libdevice_only(monkeypatch, tmp_path):
    """No CUDA toolkit: libdevice only as Triton carries it (a flat file,
    to be linked into a toolkit-shaped directory)."""
    bc = _libdevice()
    for env in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        monkeypatch.delenv(env, raising=False)
    monkeypatch.setattr(norm_mlir, "_SYSTEM_TOOLKITS", ())
    monkeypatch.setattr(norm_mlir, "_pip_libdevices", lambda: [(bc, None)])
    monkeypatch.setattr(norm_mlir, "_private_toolkit", [])
    return bc


def test_toolkit_linked_into_the_cache(pip_libdevice_only):
    root = norm_mlir.find_toolkit()
    assert root == os.path.join(cache.directory(), "toolkit")
    assert os.path.realpath(os.path.join(root, norm_mlir._LIBDEVICE)) == \
        pip_libdevice_only
    assert norm_mlir.find_toolkit() == root  # found again as it is


def test_toolkit_when_the_cache_cannot_be_written(pip_libdevice_only,
                                                  tmp_path, monkeypatch):
    """The link goes to a directory of this process's own, and compiles
    work; before, the symlink's error failed every compile."""
    blocker = tmp_path / "file"
    blocker.write_bytes(b"x")
    monkeypatch.setenv("NORM_MLIR_CACHE", str(blocker / "cache"))
    root = norm_mlir.find_toolkit()
    assert root and not root.startswith(str(blocker))
    assert os.path.realpath(os.path.join(root, norm_mlir._LIBDEVICE)) == \
        pip_libdevice_only
    assert norm_mlir.find_toolkit() == root
    k = cache.get(**_spec())
    assert k.image and b".target sm_90" in k.image


def test_toolkit_when_the_cache_links_elsewhere(pip_libdevice_only,
                                                tmp_path, monkeypatch):
    """A shared cache whose toolkit link another user made (to their own
    Triton) and we cannot replace: our own link, not theirs."""
    theirs = tmp_path / "theirs.bc"
    theirs.write_bytes(b"not libdevice")
    link = os.path.join(cache.directory(), "toolkit", norm_mlir._LIBDEVICE)
    os.makedirs(os.path.dirname(link))
    os.symlink(str(theirs), link)
    real = os.replace

    def refuse(src, dst):
        if dst == link:
            raise PermissionError(13, "not yours")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", refuse)
    root = norm_mlir.find_toolkit()
    assert root != os.path.dirname(os.path.dirname(os.path.dirname(link)))
    assert os.path.realpath(os.path.join(root, norm_mlir._LIBDEVICE)) == \
        pip_libdevice_only
    assert not [f for f in os.listdir(os.path.dirname(link))
                if f != "libdevice.10.bc"]  # no temporary link left


def test_nvcc_wheel_layout_is_used_as_it_is(monkeypatch, tmp_path):
    """nvidia-cuda-nvcc's directory is toolkit-shaped already: no link."""
    root = tmp_path / "nvcc"
    bc = root / "nvvm" / "libdevice" / "libdevice.10.bc"
    bc.parent.mkdir(parents=True)
    bc.write_bytes(b"bc")
    for env in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        monkeypatch.delenv(env, raising=False)
    monkeypatch.setattr(norm_mlir, "_SYSTEM_TOOLKITS", ())
    monkeypatch.setattr(norm_mlir, "_pip_libdevices",
                        lambda: [(str(bc), str(root))])
    assert norm_mlir.find_toolkit() == str(root)
    assert not os.path.exists(os.path.join(cache.directory(), "toolkit"))

