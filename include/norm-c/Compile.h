/*===- norm-c/Compile.h - compile norm ops to kernels, from C -----*- C -*-===*\
|*                                                                            *|
|* Part of mlir-norm. One call from IR text to the kernels (PTX, cubin or     *|
|* fatbin bytes) and the launch manifest libnormrt loads, with the            *|
|* compiler's diagnostics as text. No MLIR C types: a caller needs only this  *|
|* header and NormCAPI (which links libMLIR.so).                              *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef NORM_C_COMPILE_H
#define NORM_C_COMPILE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What normCompile returns; free with normCompileResultDestroy. */
typedef struct NormCompileResult {
  char *image;        /* the kernels: PTX text (format=isa), cubin, fatbin */
  size_t imageSize;   /* bytes of image (PTX: without a terminating 0) */
  char *manifest;     /* the JSON manifest, 0-terminated */
  char *diagnostics;  /* errors and warnings, 0-terminated ("" if none) */
  char *functionName; /* the compiled function */
} NormCompileResult;

/* Compiles the one function with norm ops of `ir` (buffer form; its
 * arguments named by the norm operands they are) with the options of the
 * norm-to-gpu-binary pipeline, e.g. "chip=sm_90 format=isa". The word
 * "print-ir" among them adds to each diagnostic the IR of the operation it
 * is about (a "see current operation" note); without it the diagnostics are
 * the messages alone. Returns 0 on success; else non-zero, with the reason
 * in result->diagnostics (image and manifest NULL). `result` is always
 * filled. */
int normCompile(const char *ir, size_t irSize, const char *options,
                NormCompileResult *result);

/* Compiles one op described by `spec`, words "key=value" or "flag" with
 * the names of norm-compile's spec flags, e.g.
 *   "op=layer_norm_grad n=4096 dtype=bf16 weight-dtype=f32 no-bias"
 * (op, n, dtype, weight-dtype, eps, name; no-weight, no-bias, dresidual,
 * zero-centered, xhat, residual), with the pipeline `options` as for
 * normCompile.
 * The manifest's arguments are named by role and it carries the spec.
 * Returns 0 on success, else non-zero with the reason in
 * result->diagnostics. */
int normCompileSpec(const char *spec, const char *options,
                    NormCompileResult *result);

void normCompileResultDestroy(NormCompileResult *result);

#ifdef __cplusplus
}
#endif

#endif /* NORM_C_COMPILE_H */
