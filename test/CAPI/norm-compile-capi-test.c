/*===- norm-compile-capi-test.c - normCompile from C ----------------------===*/
/* norm-c/Compile.h end to end: IR text (or a spec) in, PTX and the        */
/* manifest out (which the runtime loads), and the compiler's diagnostics  */
/* as text on failure.                                                      */
// REQUIRES: cuda-toolkit
// RUN: norm-compile-capi-test %t.ptx %t.json | FileCheck %s
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.json
// RUN: normrt-test %t.json < /dev/null | FileCheck %s --check-prefix=LOAD
// CHECK: rc 0 function rms image yes manifest yes diagnostics ''
// CHECK: bad chip: rc 1 image no diagnostics {{.*}}error: norm-choose-geometry: unknown chip 'sm_99' (known: sm_80, sm_86, sm_89, sm_90, sm_90a)
// CHECK: bad IR: rc 1 diagnostics {{.*}}error: expected non-function type
// CHECK: bad op: rc 1 diagnostics {{.*}}error: 'norm.rms_norm_grad' op 'weight' must have shape [1024]
// CHECK-NOT: see current operation
// CHECK: bad op, print-ir: rc 1 diagnostics {{.*}}error: 'norm.rms_norm_grad' op 'weight' must have shape [1024]
// CHECK-NEXT: {{.*}}note: see current operation: "norm.rms_norm_grad"
// CHECK: spec: rc 0 function ln image yes diagnostics ''
// CHECK-SAME: .entry ln_dx_1(
// CHECK: spec manifest: "op": "layer_norm_grad" "weight_dtype": "f32" 7 arguments, last 'dweight'
// CHECK: bad spec: rc 1 diagnostics normCompileSpec: n must be a positive hidden size (a decimal number), got '0x10'
// CHECK: unknown word: rc 1 diagnostics normCompileSpec: cannot read 'bias=2' (known: op=, n=
// PTX: .target sm_90
// PTX: .visible .entry rms_dx_1(
// MANIFEST: "name": "dy",
// MANIFEST-NEXT: "role": "input",
// LOAD: load: ok

#include "norm-c/Compile.h"

#include <stdio.h>
#include <string.h>

static const char *kIR =
    "func.func @rms(%dy: memref<?x1024xbf16>, %x: memref<?x1024xbf16>,\n"
    "               %rstd: memref<?xf32>, %w: memref<1024xbf16>,\n"
    "               %dx: memref<?x1024xbf16>, %dw: memref<1024xbf16>) {\n"
    "  norm.rms_norm_grad dy(%dy : memref<?x1024xbf16>)\n"
    "      x(%x : memref<?x1024xbf16>) rstd(%rstd : memref<?xf32>)\n"
    "      weight(%w : memref<1024xbf16>) outs dx(%dx : memref<?x1024xbf16>)\n"
    "      dweight(%dw : memref<1024xbf16>)\n"
    "  return\n"
    "}\n";

int main(int argc, char **argv) {
  const char *outPtx = argc > 1 ? argv[1] : NULL;
  const char *outJson = argc > 2 ? argv[2] : NULL;
  NormCompileResult r;
  int rc = normCompile(kIR, strlen(kIR), "chip=sm_90 format=isa", &r);
  printf("rc %d function %s image %s manifest %s diagnostics '%s'\n", rc,
         r.functionName ? r.functionName : "-",
         r.image && r.imageSize ? "yes" : "no", r.manifest ? "yes" : "no",
         r.diagnostics ? r.diagnostics : "(null)");
  if (rc == 0 && outPtx && outJson) {
    FILE *f = fopen(outPtx, "wb");
    if (f) {
      fwrite(r.image, 1, r.imageSize, f);
      fclose(f);
    }
    f = fopen(outJson, "wb");
    if (f) {
      fputs(r.manifest, f);
      fclose(f);
    }
  }
  normCompileResultDestroy(&r);

  /* A wrong option: non-zero, and the reason as text. */
  rc = normCompile(kIR, strlen(kIR), "chip=sm_99", &r);
  printf("bad chip: rc %d image %s diagnostics %s", rc,
         r.image ? "yes" : "no", r.diagnostics ? r.diagnostics : "(null)\n");
  normCompileResultDestroy(&r);

  /* IR that does not parse. */
  rc = normCompile("func.func @f(", 13, "", &r);
  printf("bad IR: rc %d diagnostics %s", rc,
         r.diagnostics ? r.diagnostics : "(null)\n");
  normCompileResultDestroy(&r);

  /* An op the verifier rejects: the message alone, then with the IR of
   * the operation (print-ir, a word of ours among the pipeline's). */
  {
    static const char *kBadIR =
        "func.func @rms(%dy: memref<?x1024xbf16>, %x: memref<?x1024xbf16>,\n"
        "               %rstd: memref<?xf32>, %w: memref<512xbf16>,\n"
        "               %dx: memref<?x1024xbf16>) {\n"
        "  norm.rms_norm_grad dy(%dy : memref<?x1024xbf16>)\n"
        "      x(%x : memref<?x1024xbf16>) rstd(%rstd : memref<?xf32>)\n"
        "      weight(%w : memref<512xbf16>) outs dx(%dx : memref<?x1024xbf16>)\n"
        "  return\n"
        "}\n";
    rc = normCompile(kBadIR, strlen(kBadIR), "chip=sm_90", &r);
    printf("bad op: rc %d diagnostics %s", rc,
           r.diagnostics ? r.diagnostics : "(null)\n");
    normCompileResultDestroy(&r);
    rc = normCompile(kBadIR, strlen(kBadIR), "print-ir chip=sm_90", &r);
    printf("bad op, print-ir: rc %d diagnostics %s", rc,
           r.diagnostics ? r.diagnostics : "(null)\n");
    normCompileResultDestroy(&r);
  }

  /* From a spec: LayerNorm backward, bf16 x, f32 weight, no bias. */
  rc = normCompileSpec("op=layer_norm_grad n=2048 dtype=bf16 weight-dtype=f32 "
                       "no-bias name=ln",
                       "chip=sm_90", &r);
  printf("spec: rc %d function %s image %s diagnostics '%s' %s\n", rc,
         r.functionName ? r.functionName : "-",
         r.image && r.imageSize ? "yes" : "no",
         r.diagnostics ? r.diagnostics : "(null)",
         r.image && strstr(r.image, ".entry ln_dx_1(") ? ".entry ln_dx_1(" : "-");
  if (rc == 0) {
    /* dy x mean rstd weight, then dx dweight: 7 arguments by role. */
    const char *last = NULL;
    int args = 0;
    for (const char *p = r.manifest; (p = strstr(p, "\"role\"")); ++p)
      ++args;
    last = strstr(r.manifest, "\"dweight\"");
    printf("spec manifest: %s %s %d arguments, last '%s'\n",
           strstr(r.manifest, "\"op\": \"layer_norm_grad\"")
               ? "\"op\": \"layer_norm_grad\""
               : "-",
           strstr(r.manifest, "\"weight_dtype\": \"f32\"")
               ? "\"weight_dtype\": \"f32\""
               : "-",
           args, last ? "dweight" : "-");
  }
  normCompileResultDestroy(&r);

  /* A bad spec, and a word the reader does not know. */
  rc = normCompileSpec("op=rms_norm_grad n=0x10", "", &r);
  printf("bad spec: rc %d diagnostics %s", rc,
         r.diagnostics ? r.diagnostics : "(null)\n");
  normCompileResultDestroy(&r);
  rc = normCompileSpec("op=rms_norm_grad n=8 bias=2", "", &r);
  printf("unknown word: rc %d diagnostics %s", rc,
         r.diagnostics ? r.diagnostics : "(null)\n");
  normCompileResultDestroy(&r);
  return 0;
}
