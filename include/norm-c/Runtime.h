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

/// A strided view of device memory: rank 1 or 2, sizes and strides in
/// elements (row-major; the innermost stride must be 1).
typedef struct {
  const char *name; /* the manifest's argument name: "dy", "x", "dx", ... */
  void *data;       /* device pointer */
  int32_t dtype;    /* NormrtDtype */
  int32_t rank;
  int64_t sizes[2];
  int64_t strides[2];
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
int normrt_module_load(const void *image, size_t image_size,
                       const char *manifest_json, NormrtModule **module);

/// Convenience: both from files.
int normrt_module_load_files(const char *image_path,
                             const char *manifest_path, NormrtModule **module);

void normrt_module_destroy(NormrtModule *module);

/// Workspace bytes a launch with `rows` (M) rows needs (0 if none). Plan it
/// once and pass it to every launch: nothing is allocated inside a launch,
/// so the launch sequence can be captured in a CUDA graph.
int normrt_workspace_bytes(const NormrtModule *module, int64_t rows,
                           size_t *bytes);

/// Validates every tensor against the manifest (names, dtypes, ranks,
/// shapes, unit inner strides, non-null and element-aligned pointers,
/// 64-bit sizes), then launches all kernels on `stream` (a CUstream; NULL is
/// the default stream). `workspace` may be NULL only when the module needs
/// none; it must be 16-byte aligned and at least normrt_workspace_bytes.
int normrt_launch(const NormrtModule *module, const NormrtTensor *tensors,
                  int32_t num_tensors, void *workspace, size_t workspace_size,
                  void *stream);

/// The message of the last failed call on this thread ("" if none).
const char *normrt_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* NORM_C_RUNTIME_H */
