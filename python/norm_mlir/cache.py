"""The kernel cache: a compiled op per (spec, pipeline options, chip,
format, compiler version), in memory and on disk.

Disk: ``$NORM_MLIR_CACHE`` (default ``~/.cache/norm_mlir``), two files per
entry, ``<key>.image`` and ``<key>.json``; each is written to a temporary
file in the same directory and renamed over the old one, the image first,
so a reader sees either a whole entry or none. The JSON records the
fields the key was made from, the image's size and SHA-256 and the
manifest: an entry whose fields differ (another compiler version), whose
image does not match its hash, or whose JSON does not parse is rebuilt.

Shared caches: files get the modes the umask gives (0644 under 022,
0664 under 002: other users and ranks can read them); a miss takes an
exclusive lock on ``<key>.lock`` (fcntl.flock) and looks again before
compiling, so processes that want one kernel at once compile it once. A
directory that cannot be written (read-only) is read, and what is
compiled stays in memory.

    from norm_mlir import cache
    k = cache.get(op="rms_norm_grad", n=4096, dtype="bf16", chip="sm_90",
                  format="cubin")
    k.compile_s      # seconds the compile took (0.0 when it was cached)
"""

import contextlib
import hashlib
import json
import os
import tempfile
import threading
import time

try:
    import fcntl
except ImportError:  # not POSIX: no cross-process lock
    fcntl = None

from . import Compiled, __version__, _libs, compile_spec

_memory = {}
_lock = threading.Lock()
_umask_lock = threading.Lock()
stats = {"memory": 0, "disk": 0, "compiled": 0, "rebuilt": 0}


def directory():
    d = os.environ.get("NORM_MLIR_CACHE")
    if not d:
        d = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(
            os.path.expanduser("~"), ".cache"), "norm_mlir")
    return d


def compiler_version():
    """The package version and the compiler library's identity (size and
    modification time): a rebuilt or reinstalled compiler misses."""
    path = _libs.find("libnormcompile.so")
    st = os.stat(path)
    return "%s:%d:%d" % (__version__, st.st_size, int(st.st_mtime))


def _fields(kwargs):
    f = dict(kwargs)
    f.setdefault("chip", "sm_90")
    f.setdefault("format", "cubin")
    f["options"] = dict(sorted((f.get("options") or {}).items()))
    f["compiler"] = compiler_version()
    return f


def key_of(fields):
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _umask():
    """The process's umask, read without changing it where Linux says it."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _umask_lock:  # elsewhere: set and restore
        m = os.umask(0o022)
        os.umask(m)
    return m


def _atomic_write(path, data):
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    try:
        # mkstemp makes 0600; a cache entry gets what the umask allows, as
        # open() would give it, so a shared cache's readers can read it.
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _read(key, fields, count=True):
    """The entry on disk, or None when absent, stale or corrupt (then
    stats['rebuilt'] counts it if it existed, when `count`)."""
    d = directory()
    meta_path = os.path.join(d, key + ".json")
    image_path = os.path.join(d, key + ".image")
    if not os.path.exists(meta_path):
        return None
    try:
        with open(meta_path, "rb") as f:
            meta = json.loads(f.read().decode("utf-8"))
        with open(image_path, "rb") as f:
            image = f.read()
        if meta.get("fields") != json.loads(json.dumps(fields)):
            raise ValueError("stale entry")
        if (len(image) != meta["image_size"] or
                hashlib.sha256(image).hexdigest() != meta["image_sha256"]):
            raise ValueError("image does not match its hash")
        k = Compiled(image, meta["manifest"], meta["format"], meta["chip"],
                     meta.get("function_name", ""))
    except (OSError, ValueError, KeyError, TypeError):
        if count:
            stats["rebuilt"] += 1
        return None
    return k


def _write(key, fields, k):
    d = directory()
    os.makedirs(d, exist_ok=True)
    meta = {"fields": fields, "image_size": len(k.image),
            "image_sha256": hashlib.sha256(k.image).hexdigest(),
            "manifest": k.manifest_text, "format": k.format, "chip": k.chip,
            "function_name": k.function_name, "compile_s": k.compile_s,
            "written_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                         time.gmtime())}
    _atomic_write(os.path.join(d, key + ".image"), k.image)
    _atomic_write(os.path.join(d, key + ".json"),
                  json.dumps(meta, indent=1).encode())


@contextlib.contextmanager
def _entry_lock(key):
    """An exclusive lock on the entry's lock file across processes, held
    while a miss looks again and compiles; none where the file cannot be
    made (a read-only cache: nothing will be written there anyway)."""
    fd = None
    if fcntl is not None:
        d = directory()
        try:
            os.makedirs(d, exist_ok=True)
            fd = os.open(os.path.join(d, key + ".lock"),
                         os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except OSError:
            fd = None
    try:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if fd is not None:
            os.close(fd)  # releases the lock


def get(**kwargs):
    """compile_spec(**kwargs), through the cache. Returns Compiled with
    ``compile_s`` and ``key`` set."""
    fields = _fields(kwargs)
    key = key_of(fields)
    with _lock:
        k = _memory.get(key)
        if k is not None:
            stats["memory"] += 1
            return k
        k = _read(key, fields)
        if k is None:
            with _entry_lock(key):
                # Another process may have compiled it while we waited.
                k = _read(key, fields, count=False)
                if k is None:
                    t0 = time.perf_counter()
                    k = compile_spec(**kwargs)
                    k.compile_s = time.perf_counter() - t0
                    stats["compiled"] += 1
                    try:
                        _write(key, fields, k)
                    except OSError:
                        pass  # a read-only cache directory: memory only
                else:
                    stats["disk"] += 1
                    k.compile_s = 0.0
        else:
            stats["disk"] += 1
            k.compile_s = 0.0
        k.key = key
        _memory[key] = k
        return k


def clear_memory():
    with _lock:
        _memory.clear()
