"""ctypes binding of libnormrt (include/norm-c/Runtime.h), raising
``RuntimeLaunchError`` on failure. No torch here: tensors are described by
pointer, dtype, sizes and strides (norm_mlir.torch builds them)."""

import ctypes

F32, F16, BF16 = 0, 1, 2
DTYPE_CODES = {"f32": F32, "f16": F16, "bf16": BF16}
MAX_RANK = 8
ERROR_NAMES = {0: "OK", 1: "INVALID_ARGUMENT", 2: "MANIFEST", 3: "DRIVER",
               4: "WORKSPACE"}


class Tensor(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("sizes", ctypes.c_int64 * MAX_RANK),
        ("strides", ctypes.c_int64 * MAX_RANK),
    ]


class RuntimeLaunchError(RuntimeError):
    """A libnormrt call failed; ``code`` is its NormrtStatus."""

    def __init__(self, call, code, message):
        self.call, self.code, self.message = call, code, message
        super().__init__("%s: %s (%s)" % (call, message,
                                          ERROR_NAMES.get(code, code)))


def make_tensor(name, data_ptr, dtype_code, sizes, strides):
    if not 1 <= len(sizes) <= MAX_RANK:
        raise ValueError("%s: rank %d is outside [1, %d]" % (name, len(sizes),
                                                             MAX_RANK))
    t = Tensor()
    t._keep = name.encode()  # ctypes stores the pointer only
    t.name = t._keep
    t.data = data_ptr or None
    t.dtype = dtype_code
    t.rank = len(sizes)
    for i, (s, st) in enumerate(zip(sizes, strides)):
        t.sizes[i] = int(s)
        t.strides[i] = int(st)
    return t


# Tensor's layout in 64-bit words (see Arguments.words).
WORDS = ctypes.sizeof(Tensor) // 8
DATA = Tensor.data.offset // 8
SIZES = Tensor.sizes.offset // 8
STRIDES = Tensor.strides.offset // 8
assert ctypes.sizeof(Tensor) % 8 == 0 and Tensor.sizes.offset % 8 == 0


class Arguments:
    """A reusable array of Tensor descriptors for one argument list whose
    names, dtypes and ranks are fixed (one op's launches): each call
    rewrites only the pointers, sizes and strides, instead of building the
    structures again (a few microseconds a tensor through ctypes). Not
    shared between threads: the caller keeps one per thread."""

    def __init__(self, names, dtype_codes, ranks):
        self.count = len(names)
        self.array = (Tensor * max(1, self.count))()
        self._names = [n.encode() for n in names]  # ctypes keeps pointers
        for i, (code, rank) in enumerate(zip(dtype_codes, ranks)):
            if not 1 <= rank <= MAX_RANK:
                raise ValueError("%s: rank %d is outside [1, %d]"
                                 % (names[i], rank, MAX_RANK))
            t = self.array[i]
            t.name, t.dtype, t.rank = self._names[i], code, rank
        # The array as 64-bit words: a store through a memoryview costs a
        # sixth of a ctypes field's. Tensor i's data pointer is word
        # i * WORDS + DATA, its sizes and strides start at SIZES / STRIDES.
        self.words = memoryview(self.array).cast("B").cast("q")

    def set(self, i, data_ptr, sizes, strides):
        q, b = self.words, i * WORDS
        q[b + DATA] = data_ptr or 0
        for d in range(len(sizes)):
            q[b + SIZES + d] = sizes[d]
            q[b + STRIDES + d] = strides[d]


class Runtime:
    def __init__(self, path):
        lib = ctypes.CDLL(path)
        vp, sz = ctypes.c_void_p, ctypes.c_size_t
        sig = {
            "normrt_module_load": ([vp, sz, ctypes.c_char_p,
                                    ctypes.POINTER(vp)], ctypes.c_int),
            "normrt_module_load_manifest_only": ([ctypes.c_char_p,
                                                  ctypes.POINTER(vp)],
                                                 ctypes.c_int),
            "normrt_module_destroy": ([vp], None),
            "normrt_workspace_bytes": ([vp, ctypes.c_int64,
                                        ctypes.POINTER(sz)], ctypes.c_int),
            "normrt_launch": ([vp, ctypes.POINTER(Tensor), ctypes.c_int32, vp,
                               sz, vp], ctypes.c_int),
            "normrt_validate": ([vp, ctypes.POINTER(Tensor), ctypes.c_int32,
                                 vp, sz], ctypes.c_int),
            "normrt_last_error": ([], ctypes.c_char_p),
        }
        for name, (args, res) in sig.items():
            f = getattr(lib, name)
            f.argtypes, f.restype = args, res
        self.lib = lib
        self.path = path

    def last_error(self):
        s = self.lib.normrt_last_error()
        return s.decode("utf-8", "replace") if s else ""

    def _check(self, call, rc):
        if rc:
            raise RuntimeLaunchError(call, rc, self.last_error())

    def load(self, image, manifest_text):
        """A Module from kernel image bytes and the manifest's JSON text
        (needs the CUDA driver)."""
        h = ctypes.c_void_p()
        buf = ctypes.create_string_buffer(image, len(image))
        self._check("normrt_module_load", self.lib.normrt_module_load(
            buf, len(image), manifest_text.encode(), ctypes.byref(h)))
        return Module(self, h)

    def load_manifest_only(self, manifest_text):
        """A Module for planning and validation: no driver, no kernels."""
        h = ctypes.c_void_p()
        self._check("normrt_module_load_manifest_only",
                    self.lib.normrt_module_load_manifest_only(
                        manifest_text.encode(), ctypes.byref(h)))
        return Module(self, h)


class Module:
    def __init__(self, rt, handle):
        self.rt, self.handle = rt, handle

    def close(self):
        if self.handle:
            self.rt.lib.normrt_module_destroy(self.handle)
            self.handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass

    def workspace_bytes(self, rows):
        n = ctypes.c_size_t()
        self.rt._check("normrt_workspace_bytes",
                       self.rt.lib.normrt_workspace_bytes(
                           self.handle, int(rows), ctypes.byref(n)))
        return n.value

    def _array(self, tensors):
        return (Tensor * max(1, len(tensors)))(*tensors)

    def validate(self, tensors, workspace_ptr=0, workspace_size=0):
        """tensors: a list of Tensor, or an Arguments."""
        if isinstance(tensors, Arguments):
            arr, count = tensors.array, tensors.count
        else:
            arr, count = self._array(tensors), len(tensors)
        self.rt._check("normrt_validate", self.rt.lib.normrt_validate(
            self.handle, arr, count, workspace_ptr or None, workspace_size))

    def launch(self, tensors, workspace_ptr=0, workspace_size=0, stream=0):
        """tensors: a list of Tensor, or an Arguments."""
        if isinstance(tensors, Arguments):
            arr, count = tensors.array, tensors.count
        else:
            arr, count = self._array(tensors), len(tensors)
        self.rt._check("normrt_launch", self.rt.lib.normrt_launch(
            self.handle, arr, count, workspace_ptr or None, workspace_size,
            stream or None))
