"""ctypes binding of libnormrt (include/norm-c/Runtime.h): the one binding
of the runtime, used by norm_mlir.torch, bench/ and the GPU checks. A
failed call raises ``RuntimeLaunchError`` (its ``code`` and ``message``).
No torch here: tensors are described by pointer, dtype, sizes and strides
(norm_mlir.torch builds them), so planning and validation run on machines
without a GPU (the library opens the CUDA driver only to load kernels).

The constants below are this binding's view of the C header and of the
launch manifest's schema. ``Runtime`` checks them against the schema the
library it loads exports (``normrt_manifest_schema``) and refuses a library
that disagrees (``check_schema`` says where).
"""

import ctypes
import json

# The manifest format_version the library reads.
FORMAT_VERSION = 2
# NormrtDtype.
F32, F16, BF16 = 0, 1, 2
DTYPE_CODES = {"f32": F32, "f16": F16, "bf16": BF16}
# NORMRT_MAX_RANK: the sizes / strides a tensor holds.
MAX_RANK = 8
# The status codes.
ERROR_NAMES = {0: "OK", 1: "INVALID_ARGUMENT", 2: "MANIFEST", 3: "DRIVER",
               4: "WORKSPACE"}
ERROR_INVALID_ARGUMENT, ERROR_MANIFEST, ERROR_DRIVER, ERROR_WORKSPACE = \
    1, 2, 3, 4
# The manifest's argument kinds and kernel kinds.
ARGUMENT_KINDS = ("dy", "x", "mean", "rstd", "weight", "bias", "dresidual",
                  "dx", "dweight", "dbias", "y", "xhat", "residual", "h",
                  "other")
KERNEL_KINDS = ("zero", "dx", "reduce", "forward")


class Tensor(ctypes.Structure):
    """NormrtTensor: { const char *name; void *data; int32_t dtype;
    int32_t rank; int64_t sizes[MAX_RANK]; int64_t strides[MAX_RANK]; }"""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("sizes", ctypes.c_int64 * MAX_RANK),
        ("strides", ctypes.c_int64 * MAX_RANK),
    ]


class RuntimeLaunchError(RuntimeError):
    """A libnormrt call failed; ``code`` is its status (ERROR_NAMES)."""

    def __init__(self, call, code, message):
        self.call, self.code, self.message = call, code, message
        super().__init__("%s: %s (%s)" % (call, message,
                                          ERROR_NAMES.get(code, code)))


class DryRunTruncated(RuntimeError):
    """normrt_dry_run's text did not fit the buffer even after growing it."""


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


def check_schema(schema):
    """Where this binding's constants disagree with `schema` (the parsed
    normrt_manifest_schema of a library): a list of sentences, empty when
    they agree."""
    problems = []

    def differ(what, ours, theirs):
        if ours != theirs:
            problems.append("%s: the binding has %r, the library %r"
                            % (what, ours, theirs))
    capi = schema.get("c_api", {})
    differ("format_version", FORMAT_VERSION, schema.get("format_version"))
    differ("max_rank", MAX_RANK, capi.get("max_rank"))
    differ("dtype codes", DTYPE_CODES, capi.get("dtype"))
    differ("status codes", {v: k for k, v in ERROR_NAMES.items()},
           capi.get("status"))
    layout = {"size": ctypes.sizeof(Tensor)}
    layout.update((name, getattr(Tensor, name).offset)
                  for name, _ in Tensor._fields_)
    differ("NormrtTensor layout", layout, capi.get("tensor"))
    differ("argument kinds", list(ARGUMENT_KINDS),
           list(schema.get("argument_kinds", {})))
    differ("kernel kinds", list(KERNEL_KINDS),
           schema.get("enums", {}).get("kernel_kind"))
    return problems


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


class Runtime:
    """libnormrt.so at `path`, bound; refused (RuntimeError) when its
    schema disagrees with this binding."""

    def __init__(self, path):
        lib = ctypes.CDLL(path)
        vp, sz, cp = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p
        tp, i64 = ctypes.POINTER(Tensor), ctypes.c_int64
        sig = {
            "normrt_module_load": ([vp, sz, cp, ctypes.POINTER(vp)],
                                   ctypes.c_int),
            "normrt_module_load_files": ([cp, cp, ctypes.POINTER(vp)],
                                         ctypes.c_int),
            "normrt_module_load_manifest_only": ([cp, ctypes.POINTER(vp)],
                                                 ctypes.c_int),
            "normrt_module_destroy": ([vp], None),
            "normrt_workspace_bytes": ([vp, i64, ctypes.POINTER(sz)],
                                       ctypes.c_int),
            "normrt_module_groups": ([vp, i64, ctypes.POINTER(i64)],
                                     ctypes.c_int),
            "normrt_launch": ([vp, tp, ctypes.c_int32, vp, sz, vp],
                              ctypes.c_int),
            "normrt_validate": ([vp, tp, ctypes.c_int32, vp, sz],
                                ctypes.c_int),
            "normrt_dry_run": ([vp, tp, ctypes.c_int32, vp, sz, cp, sz,
                                ctypes.POINTER(sz)], ctypes.c_int),
            "normrt_default_groups": ([i64, i64], i64),
            "normrt_last_error": ([], cp),
            "normrt_manifest_schema": ([], cp),
        }
        for name, (args, res) in sig.items():
            try:
                f = getattr(lib, name)
            except AttributeError:
                raise OSError("%s has no %s: a libnormrt.so older than this "
                              "binding; rebuild it" % (path, name)) from None
            f.argtypes, f.restype = args, res
        self.lib = lib
        self.path = path
        problems = check_schema(self.manifest_schema())
        if problems:
            raise RuntimeError("%s disagrees with norm_mlir._runtime: %s"
                               % (path, "; ".join(problems)))

    def manifest_schema(self):
        """normrt_manifest_schema, parsed: the manifest's fields, kinds and
        enums, and the C header's constants."""
        return json.loads(self.lib.normrt_manifest_schema().decode())

    def last_error(self):
        s = self.lib.normrt_last_error()
        return s.decode("utf-8", "replace") if s else ""

    def _check(self, call, rc):
        if rc:
            raise RuntimeLaunchError(call, rc, self.last_error())

    def default_groups(self, rows, n):
        return self.lib.normrt_default_groups(int(rows), int(n))

    def load(self, image, manifest_text):
        """A Module from kernel image bytes and the manifest's JSON text
        (needs the CUDA driver)."""
        h = ctypes.c_void_p()
        buf = ctypes.create_string_buffer(image, len(image))
        self._check("normrt_module_load", self.lib.normrt_module_load(
            buf, len(image), manifest_text.encode(), ctypes.byref(h)))
        return Module(self, h)

    def load_files(self, image_path, manifest_path):
        """A Module from an image file and a manifest file."""
        h = ctypes.c_void_p()
        self._check("normrt_module_load_files",
                    self.lib.normrt_module_load_files(
                        image_path.encode(), manifest_path.encode(),
                        ctypes.byref(h)))
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

    def groups(self, rows):
        """G, the partial rows of the dweight/dbias reduction, for M rows."""
        g = ctypes.c_int64()
        self.rt._check("normrt_module_groups",
                       self.rt.lib.normrt_module_groups(
                           self.handle, int(rows), ctypes.byref(g)))
        return g.value

    @staticmethod
    def _array(tensors):
        """tensors: a list of Tensor, or an Arguments."""
        if isinstance(tensors, Arguments):
            return tensors.array, tensors.count
        return (Tensor * max(1, len(tensors)))(*tensors), len(tensors)

    def validate(self, tensors, workspace_ptr=0, workspace_size=0):
        """Every check of launch; launches nothing."""
        arr, count = self._array(tensors)
        self.rt._check("normrt_validate", self.rt.lib.normrt_validate(
            self.handle, arr, count, workspace_ptr or None, workspace_size))

    def launch(self, tensors, workspace_ptr=0, workspace_size=0, stream=0):
        arr, count = self._array(tensors)
        self.rt._check("normrt_launch", self.rt.lib.normrt_launch(
            self.handle, arr, count, workspace_ptr or None, workspace_size,
            stream or None))

    def dry_run(self, tensors, workspace_ptr=0, workspace_size=0):
        """The launch plan normrt_dry_run writes, whole however long (it
        raises DryRunTruncated rather than return part of it)."""
        arr, count = self._array(tensors)

        def call(buf, capacity, length):
            return self.rt.lib.normrt_dry_run(self.handle, arr, count,
                                              workspace_ptr or None,
                                              workspace_size, buf, capacity,
                                              length)
        rc, text = read_plan_text(call)
        self.rt._check("normrt_dry_run", rc)
        return text
