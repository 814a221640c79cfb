"""ctypes binding of the runtime C API (include/norm-c/Runtime.h).

Exactly the declared functions and struct; nothing here imports torch, so
the dry-run modes can load the library on a machine without a GPU (the
runtime dlopens libcuda only when a module is loaded). ``torch_tensor``
builds a NormrtTensor from a torch tensor and is the only torch-aware
helper (torch is imported by the caller).
"""

import ctypes
import os

NORMRT_F32, NORMRT_F16, NORMRT_BF16 = 0, 1, 2
DTYPE_CODES = {"f32": NORMRT_F32, "f16": NORMRT_F16, "bf16": NORMRT_BF16}

NORMRT_ERROR_MANIFEST_NO_IMAGE = 2  # what load_config returns with no image

NORMRT_MAX_RANK = 8  # the header's: the sizes / strides a tensor holds

ERROR_NAMES = {
    0: "OK",
    1: "INVALID_ARGUMENT",
    2: "MANIFEST",
    3: "DRIVER",
    4: "WORKSPACE",
}


class NormrtTensor(ctypes.Structure):
    """typedef struct { const char *name; void *data; int32_t dtype;
    int32_t rank; int64_t sizes[NORMRT_MAX_RANK];
    int64_t strides[NORMRT_MAX_RANK]; } NormrtTensor;"""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("sizes", ctypes.c_int64 * NORMRT_MAX_RANK),
        ("strides", ctypes.c_int64 * NORMRT_MAX_RANK),
    ]


class NormrtError(RuntimeError):
    def __init__(self, call, code, message):
        self.call, self.code, self.message = call, code, message
        super().__init__("%s returned %d (%s): %s" % (
            call, code, ERROR_NAMES.get(code, "?"), message))


def start_on_gpu(gpu_dir, who, out, seed=None):
    """libnormrt, torch with the primary CUDA context current, and the run's
    seed (a fresh one unless given): (torch, Runtime, seed), or None after
    saying through `out` what is missing."""
    lib = find_library(gpu_dir)
    if not lib:
        out("%s: libnormrt.so not found (NORMRT_LIB, %s, build/lib)"
            % (who, gpu_dir))
        return None
    try:
        import torch
    except ImportError as ex:
        out("%s: cannot import torch (%s); --dry-run needs none" % (who, ex))
        return None
    if not torch.cuda.is_available():
        out("%s: torch sees no CUDA device" % who)
        return None
    torch.empty(1, device="cuda")  # the primary context, current here
    if seed is None:
        seed = int.from_bytes(os.urandom(4), "little")
    return torch, Runtime(lib), seed


def find_library(gpu_dir=None):
    """NORMRT_LIB, else <gpu_dir>/libnormrt.so, else build/lib/libnormrt.so."""
    here = os.path.dirname(os.path.abspath(__file__))
    cands = [os.environ.get("NORMRT_LIB", "")]
    if gpu_dir:
        cands.append(os.path.join(gpu_dir, "libnormrt.so"))
    cands.append(os.path.join(here, "..", "build", "lib", "libnormrt.so"))
    for c in cands:
        if c and os.path.isfile(c):
            return os.path.abspath(c)
    return None


class Runtime:
    def __init__(self, path):
        self.path = path
        lib = ctypes.CDLL(path)
        vp, sz = ctypes.c_void_p, ctypes.c_size_t
        lib.normrt_module_load.argtypes = [vp, sz, ctypes.c_char_p,
                                           ctypes.POINTER(vp)]
        lib.normrt_module_load.restype = ctypes.c_int
        lib.normrt_module_load_files.argtypes = [ctypes.c_char_p,
                                                 ctypes.c_char_p,
                                                 ctypes.POINTER(vp)]
        lib.normrt_module_load_files.restype = ctypes.c_int
        lib.normrt_module_destroy.argtypes = [vp]
        lib.normrt_module_destroy.restype = None
        lib.normrt_workspace_bytes.argtypes = [vp, ctypes.c_int64,
                                               ctypes.POINTER(sz)]
        lib.normrt_workspace_bytes.restype = ctypes.c_int
        lib.normrt_launch.argtypes = [vp, ctypes.POINTER(NormrtTensor),
                                      ctypes.c_int32, vp, sz, vp]
        lib.normrt_launch.restype = ctypes.c_int
        lib.normrt_last_error.argtypes = []
        lib.normrt_last_error.restype = ctypes.c_char_p
        # Driver-free checks (newer headers); bound only where present.
        self.has_offline = all(hasattr(lib, f) for f in (
            "normrt_module_load_manifest_only", "normrt_validate",
            "normrt_dry_run"))
        if self.has_offline:
            lib.normrt_module_load_manifest_only.argtypes = [
                ctypes.c_char_p, ctypes.POINTER(vp)]
            lib.normrt_module_load_manifest_only.restype = ctypes.c_int
            lib.normrt_validate.argtypes = [vp, ctypes.POINTER(NormrtTensor),
                                            ctypes.c_int32, vp, sz]
            lib.normrt_validate.restype = ctypes.c_int
            lib.normrt_dry_run.argtypes = [vp, ctypes.POINTER(NormrtTensor),
                                           ctypes.c_int32, vp, sz,
                                           ctypes.c_char_p, sz,
                                           ctypes.POINTER(sz)]
            lib.normrt_dry_run.restype = ctypes.c_int
        self.lib = lib

    def last_error(self):
        s = self.lib.normrt_last_error()
        return s.decode("utf-8", "replace") if s else ""

    def load_files(self, image_path, manifest_path):
        """Returns (rc, Module or None, message)."""
        h = ctypes.c_void_p()
        rc = self.lib.normrt_module_load_files(
            image_path.encode(), manifest_path.encode(), ctypes.byref(h))
        if rc != 0:
            return rc, None, self.last_error()
        return 0, Module(self, h), ""

    def load_manifest_only(self, manifest_text):
        """No driver, no kernels: for validate / dry_run."""
        h = ctypes.c_void_p()
        rc = self.lib.normrt_module_load_manifest_only(
            manifest_text.encode(), ctypes.byref(h))
        if rc != 0:
            return rc, None, self.last_error()
        return 0, Module(self, h), ""

    def load(self, image_bytes, manifest_text):
        h = ctypes.c_void_p()
        buf = ctypes.create_string_buffer(image_bytes, len(image_bytes))
        rc = self.lib.normrt_module_load(buf, len(image_bytes),
                                         manifest_text.encode(),
                                         ctypes.byref(h))
        if rc != 0:
            return rc, None, self.last_error()
        return 0, Module(self, h), ""


class Module:
    def __init__(self, rt, handle):
        self.rt, self.handle = rt, handle

    def close(self):
        if self.handle:
            self.rt.lib.normrt_module_destroy(self.handle)
            self.handle = None

    def workspace_bytes(self, rows):
        """Returns (rc, bytes, message)."""
        n = ctypes.c_size_t()
        rc = self.rt.lib.normrt_workspace_bytes(self.handle, rows,
                                                ctypes.byref(n))
        return rc, n.value, (self.rt.last_error() if rc else "")

    def launch(self, tensors, workspace_ptr=0, workspace_size=0, stream=0):
        """tensors: a list of NormrtTensor. Returns (rc, message)."""
        arr = (NormrtTensor * max(1, len(tensors)))(*tensors)
        rc = self.rt.lib.normrt_launch(self.handle, arr, len(tensors),
                                       workspace_ptr or None, workspace_size,
                                       stream or None)
        return rc, (self.rt.last_error() if rc else "")


    def validate(self, tensors, workspace_ptr=0, workspace_size=0):
        """normrt_validate: (rc, message); launches nothing."""
        arr = (NormrtTensor * max(1, len(tensors)))(*tensors)
        rc = self.rt.lib.normrt_validate(self.handle, arr, len(tensors),
                                         workspace_ptr or None,
                                         workspace_size)
        return rc, (self.rt.last_error() if rc else "")

    def dry_run(self, tensors, workspace_ptr=0, workspace_size=0):
        """normrt_dry_run: (rc, plan text or error message). The whole plan,
        however long: raises DryRunTruncated rather than return part of
        it."""
        arr = (NormrtTensor * max(1, len(tensors)))(*tensors)

        def call(buf, capacity, length):
            return self.rt.lib.normrt_dry_run(self.handle, arr, len(tensors),
                                              workspace_ptr or None,
                                              workspace_size, buf, capacity,
                                              length)
        rc, text = read_plan_text(call)
        if rc:
            return rc, self.rt.last_error()
        return 0, text


class DryRunTruncated(RuntimeError):
    """normrt_dry_run's text did not fit the buffer even after growing it."""


def read_plan_text(call, capacity=1 << 16):
    """Runs call(buffer, capacity, byref(length)) -- normrt_dry_run with its
    other arguments bound -- and returns (rc, text). The C API reports the
    full length however small the buffer, so a buffer too small for it is
    grown to fit and the call repeated; a text still cut short (or a length
    the call did not report) raises DryRunTruncated instead of returning
    part of the plan."""
    for _ in range(2):
        n = ctypes.c_size_t(0)
        buf = ctypes.create_string_buffer(capacity)
        rc = call(buf, capacity, ctypes.byref(n))
        if rc:
            return rc, None
        if n.value < capacity:
            text = buf.raw[:n.value]
            if len(buf.value) != n.value:
                raise DryRunTruncated(
                    "normrt_dry_run: %d bytes in a %d-byte buffer, but it "
                    "reports a %d-byte plan" % (len(buf.value), capacity,
                                                n.value))
            return 0, text.decode("utf-8", "replace")
        capacity = n.value + 1
    raise DryRunTruncated("normrt_dry_run: the plan (%d bytes) does not fit "
                          "a %d-byte buffer" % (n.value, capacity))


def load_config(rt, gpu_dir, entry, image="auto"):
    """Loads one configs.json entry: its cubin first (image "auto" or
    "cubin", when there is one), else or on failure its PTX (unless image is
    "cubin"). Returns (rc, Module or None, message, image path, failures
    of earlier tries)."""
    manifest = os.path.join(gpu_dir, entry["manifest"])
    paths = []
    if image in ("auto", "cubin") and entry.get("cubin"):
        paths.append(os.path.join(gpu_dir, entry["cubin"]))
    if image in ("auto", "ptx"):
        paths.append(os.path.join(gpu_dir, entry["ptx"]))
    rc, msg, tried = NORMRT_ERROR_MANIFEST_NO_IMAGE, "no image", []
    for path in paths:
        rc, mod, msg = rt.load_files(path, manifest)
        if rc == 0:
            return 0, mod, "", path, tried
        tried.append("%s: %d (%s) %s" % (os.path.basename(path), rc,
                                         ERROR_NAMES.get(rc, "?"), msg))
    return rc, None, "; ".join(tried) or msg, None, tried


def make_tensor(name, data_ptr, dtype_code, sizes, strides):
    if len(sizes) > NORMRT_MAX_RANK:
        raise ValueError("%s: rank %d > NORMRT_MAX_RANK (%d)"
                         % (name, len(sizes), NORMRT_MAX_RANK))
    t = NormrtTensor()
    # Keep the bytes alive with the struct: ctypes stores a pointer only.
    t._name_keep = name.encode()
    t.name = t._name_keep
    t.data = data_ptr or None
    t.dtype = dtype_code
    t.rank = len(sizes)
    for i in range(NORMRT_MAX_RANK):
        t.sizes[i] = sizes[i] if i < len(sizes) else 0
        t.strides[i] = strides[i] if i < len(strides) else 0
    return t


def torch_dtype_code(t):
    import torch
    return {torch.float32: NORMRT_F32, torch.float16: NORMRT_F16,
            torch.bfloat16: NORMRT_BF16}[t.dtype]


def torch_tensor(name, t, dtype_code=None):
    """A NormrtTensor viewing torch tensor t (rank 1 to NORMRT_MAX_RANK,
    strides in elements as torch reports them)."""
    return make_tensor(name, t.data_ptr(),
                       torch_dtype_code(t) if dtype_code is None
                       else dtype_code,
                       list(t.shape), list(t.stride()))
