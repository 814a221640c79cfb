/*===- norm-c/Runtime.h - launching compiled norm kernels ---------*- C -*-===*\
|*                                                                            *|
|* Part of mlir-norm. A C API over lib/Runtime, for Python (ctypes) and any   *|
|* host language. Nothing here links libcuda: the CUDA driver is loaded at    *|
|* run time (dlopen), so programs build and validate arguments without a GPU. *|
|*                                                                            *|
|* Every call returns 0 on success, or a non-zero code with a message that    *|
|* names the offending argument, shape, stride, dtype or size; the message    *|
|* of the last failure on this thread is normrt_last_error().                 *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef NORM_C_RUNTIME_H
#define NORM_C_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

/* The functions libnormrt.so exports (it hides everything else). */
#if defined(__GNUC__) || defined(__clang__)
#define NORMRT_API __attribute__((visibility("default")))
#else
#define NORMRT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct NormrtModule NormrtModule;

/// Element types, as in the manifest.
typedef enum {
  NORMRT_F32 = 0,
  NORMRT_F16 = 1,
  NORMRT_BF16 = 2,
} NormrtDtype;

/// The largest rank of an argument: [B, S, N] is 3; the manifest reader
/// refuses more.
#define NORMRT_MAX_RANK 8

/// A strided view of device memory: rank 1 to NORMRT_MAX_RANK, sizes and
/// strides in elements (row-major; the innermost stride must be 1). Only
/// the first `rank` sizes and strides are read.
typedef struct {
  const char *name; /* the manifest's argument name: "dy", "x", "dx", ... */
  void *data;       /* device pointer */
  int32_t dtype;    /* NormrtDtype */
  int32_t rank;
  int64_t sizes[NORMRT_MAX_RANK];
  int64_t strides[NORMRT_MAX_RANK];
} NormrtTensor;

/// Error codes.
enum {
  NORMRT_OK = 0,
  NORMRT_ERROR_INVALID_ARGUMENT = 1, /* shapes, strides, dtypes, pointers */
  NORMRT_ERROR_MANIFEST = 2,         /* unreadable or inconsistent manifest */
  NORMRT_ERROR_DRIVER = 3,           /* libcuda missing or a CUDA error */
  NORMRT_ERROR_WORKSPACE = 4,        /* workspace too small or misaligned */
};

/// Loads compiled kernels (PTX text, cubin or fatbin bytes) and their
/// manifest (JSON text). Initialises the CUDA driver and uses the current
/// context of the calling thread, or the primary context of device 0.
///
/// The driver is libcuda.so.1, or the file $NORMRT_LIBCUDA names; if it
/// cannot be opened the call fails with NORMRT_ERROR_DRIVER and
/// "CUDA driver not found (dlopen libcuda.so.1: <reason>)". The calling
/// thread's current context is left as it was. The manifest is checked
/// first, then the kernels' chip against the device (compute capability
/// 9.0 if a kernel is launched in thread-block clusters: "cluster" > 1 in
/// the manifest), every kernel's presence in the image, its block size
/// against its register-limited maximum, its shared memory (static plus
/// the manifest's "dynamic_shared_bytes") against the device's opt-in
/// limit per block (the kernel is then opted in to its dynamic bytes, with
/// which every launch of it runs) and, where the driver can tell (CUDA
/// 12.4+), its parameter count against the manifest.
///
/// The manifest's consistency, checked once here (NORMRT_ERROR_MANIFEST,
/// "manifest: <entry>: ..."): its format_version is the one this library
/// reads and it has no key the schema does not list
/// (normrt_manifest_schema); every argument has a known "kind" (at most one
/// of each but "other") with a role it allows; the arguments of kind
/// 'weight', 'bias', 'dweight' and 'dbias' have shape [N]; the kernel list
/// is not empty; no kernel takes one argument twice; a "dx" kernel takes
/// every row argument (rank 2 or more, a leading "?", kind 'mean' or
/// 'rstd'), a "forward" kernel every argument; every argument is a
/// parameter of some kernel; and a "cluster" (1 to 8 blocks per cluster;
/// G * cluster blocks are launched) above 1 only goes with grid "programs".
/// Arguments have rank 1 to NORMRT_MAX_RANK; "?" (a dynamic extent) stands
/// only for row extents: every extent but N, the last, and all of those of
/// the statistics (kind 'mean', 'rstd'), which have exactly the row extents
/// ([?, ?] for an 'x' of [?, ?, N]). Every row argument has as many row
/// extents. The rules follow from the arguments' kinds, never their names.
NORMRT_API int normrt_module_load(const void *image, size_t image_size,
                                  const char *manifest_json,
                                  NormrtModule **module);

/// Convenience: both from files.
NORMRT_API int normrt_module_load_files(const char *image_path,
                                        const char *manifest_path,
                                        NormrtModule **module);

/// Reads and checks a manifest without loading kernels or the driver: the
/// module answers every query and normrt_validate / normrt_dry_run, but
/// normrt_launch fails on it unless the launch has nothing to do (M = 0 and
/// no dweight / dbias to clear: it has no driver to clear them with). For
/// tests and for planning on machines without a GPU.
NORMRT_API int normrt_module_load_manifest_only(const char *manifest_json,
                                                NormrtModule **module);

/// Unloads the kernels and releases the primary context if the load
/// retained it. NULL is ignored.
NORMRT_API void normrt_module_destroy(NormrtModule *module);

/// Workspace bytes a launch with `rows` (M) rows needs (0 if none); M is the
/// product of the row extents (B * S for an 'x' of [B, S, N]). Plan it
/// once and pass it to every launch: nothing is allocated inside a launch,
/// so the launch sequence can be captured in a CUDA graph.
///
/// The workspaces lie in the buffer one after another, each at a multiple
/// of 256 bytes from its start. The size never decreases with M, so a
/// buffer for the largest M serves every smaller one; it is 0 for M = 0.
NORMRT_API int normrt_workspace_bytes(const NormrtModule *module, int64_t rows,
                                      size_t *bytes);

/// Validates every tensor against the manifest (names, dtypes, ranks,
/// shapes, unit inner strides, non-null and element-aligned pointers,
/// 64-bit sizes), then launches all kernels on `stream` (a CUstream; NULL is
/// the default stream). `workspace` may be NULL only when the module needs
/// none; it must be 16-byte aligned and at least normrt_workspace_bytes.
///
/// Tensors bind to arguments by name, in any order; a tensor whose name is
/// NULL binds to the argument at its own index. Every extent the manifest
/// gives must match the tensor's. The rows are the leading extents, all
/// but N (the last), of the argument of kind 'x' (else of the first row
/// argument): M is their product, B * S for [B, S, N]. The row extents of
/// every row argument (rank 2 or more, a leading "?" in the manifest, kind
/// 'mean' or 'rstd': those have only row extents) must equal them one by
/// one, not only in their
/// product, even where the manifest writes a number. A rank-2 view's row
/// stride must be at least N when it has more than one row; a view with
/// more than one row extent (rank 3 or more, or statistics of rank 2) must
/// have contiguous rows, as the kernels view its row extents as one and do
/// not read its strides (the stride of an extent of 1 is not checked).
/// Views with no elements may have a NULL pointer.
///
/// Aliasing: a view spans the bytes from its first element to one past its
/// last (a strided view includes the gaps between its rows). No output may
/// overlap an input or another output, except that `dx` (kind 'dx') may be
/// `dy` (kind 'dy') itself: the same pointer, dtype, shape and strides (the
/// stride of an extent of 1 is not compared); an output that only partly
/// overlaps is refused too.
/// The workspace bytes the launch uses (normrt_workspace_bytes from
/// `workspace`) may overlap no argument (NORMRT_ERROR_WORKSPACE). Inputs
/// may overlap each other. The message names both, e.g. "'dx' overlaps 'x'
/// (bytes [0x..., 0x...) and [0x..., 0x...)): an output may overlap no
/// other argument (only dx may be dy itself)".
///
/// The kernels clear the workspaces they accumulate into themselves; a
/// workspace the manifest gives no "zero" kernel for is cleared with
/// cuMemsetD8Async on `stream` first. With M = 0 (tensors still checked,
/// overlaps included) no kernel is launched and no workspace is used (it
/// may be NULL); the outputs that do not follow M (dweight, dbias: sums
/// over zero rows) are set to zero with cuMemsetD8Async, the row outputs
/// have no elements. normrt_dry_run shows that plan: "m 0 ..." and one
/// "clear" line per such output, no "launch" line.
///
/// A kernel the manifest marks "waits" is launched with programmatic stream
/// serialization (cuLaunchKernelEx) on a device of compute capability 9.0
/// or later, unless the environment sets NORMRT_DEPENDENT_LAUNCH=0 at the
/// load: it may start before the work before it on `stream` ends, and
/// waits for that work before it touches memory (the same results).
///
/// A reduce kernel the manifest marks "skip_at_one_group" is not launched
/// where G = 1: the dx kernel before it has written dweight / dbias, with
/// the same bits (normrt_dry_run prints "skip" for it). The environment's
/// NORMRT_ONE_GROUP_REDUCE=1 at the load launches it all the same.
///
/// The launch runs in the module's context: if it is not current on the
/// calling thread, it is made current for the call and the previous one
/// restored. A module does not change after its load, so threads may launch
/// from one module concurrently. Each thread plans its launches into
/// storage of its own that it keeps, so a launch (or validate) allocates
/// nothing once the thread has launched as large a one.
NORMRT_API int normrt_launch(const NormrtModule *module,
                             const NormrtTensor *tensors, int32_t num_tensors,
                             void *workspace, size_t workspace_size,
                             void *stream);

/// Runs every check of normrt_launch (tensors and workspace) and launches
/// nothing; it needs no driver. Returns what normrt_launch would have
/// returned before its first launch.
NORMRT_API int normrt_validate(const NormrtModule *module,
                               const NormrtTensor *tensors, int32_t num_tensors,
                               void *workspace, size_t workspace_size);

/// normrt_validate, and on success writes the launches normrt_launch would
/// make, as text, into `buffer` (NUL-terminated, truncated to `capacity`
/// bytes; `buffer` may be NULL when `capacity` is 0). `*length` (if not
/// NULL) receives the full text length without the NUL, however small the
/// buffer: the text was truncated if `*length >= capacity`; call again with
/// `*length + 1` bytes. One line per step:
///   m <M> groups <G> workspace <bytes>
///   slice <k> offset <bytes> bytes <bytes>
///   clear <address> <bytes>
///   launch <kernel> grid <blocks> block <threads> params <count>: <memrefs>
/// where each memref is "[allocated aligned offset sizes... strides...]".
NORMRT_API int normrt_dry_run(const NormrtModule *module,
                              const NormrtTensor *tensors, int32_t num_tensors,
                              void *workspace, size_t workspace_size,
                              char *buffer, size_t capacity, size_t *length);

/// The number of partial rows G the dweight/dbias reduction uses for M rows
/// of N columns, when the manifest fixes none:
/// max(1, min(cap(N), max(ceil(M / r(N)), min(M, 128)))), r(N) =
/// ceil(4096 / N), cap(N) the largest of 512, 256 and 128 with
/// cap * N <= 3 * 2^20 (at least 128). Never fails.
NORMRT_API int64_t normrt_default_groups(int64_t rows, int64_t n);

/// G for `rows` rows of this module: the manifest's fixed groups
/// (spec.groups > 0), else normrt_default_groups(rows, N).
NORMRT_API int normrt_module_groups(const NormrtModule *module, int64_t rows,
                                    int64_t *groups);

/// One argument of the compiled function, as the manifest describes it.
typedef struct {
  const char *name;               /* valid while the module lives */
  int32_t dtype;                  /* NormrtDtype */
  int32_t rank;                   /* 1 to NORMRT_MAX_RANK */
  int64_t shape[NORMRT_MAX_RANK]; /* -1 for a dynamic row extent */
  int32_t is_output;              /* written by the kernels */
} NormrtArgumentInfo;

/// The number of arguments and one of them by index (manifest order).
NORMRT_API int normrt_module_num_arguments(const NormrtModule *module,
                                           int32_t *count);
NORMRT_API int normrt_module_argument(const NormrtModule *module, int32_t index,
                                      NormrtArgumentInfo *info);

/// The message of the last failed call on this thread ("" if none).
NORMRT_API const char *normrt_last_error(void);

/// The launch manifest's schema and this header's constants, as one JSON
/// object (valid for the life of the process; never fails):
///   "format_version"  the manifest version this library reads
///   "objects"         per JSON object of a manifest ("manifest", "spec",
///                     "argument", "workspace", "kernel", "param"), its
///                     fields: {"type", "required", "min", "max" (integers),
///                     "attribute" (its key in #norm.kernel)}
///   "argument_kinds"  per argument "kind": {"shape", "roles"}
///   "enums"           the names of dtypes, kernel kinds, grid rules, ...
///   "c_api"           NORMRT_MAX_RANK, the NormrtDtype and status codes,
///                     and NormrtTensor's size and field offsets
/// A binding in another language checks its own view against it.
NORMRT_API const char *normrt_manifest_schema(void);

#ifdef __cplusplus
}
#endif

#endif /* NORM_C_RUNTIME_H */
