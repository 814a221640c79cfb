/*===- norm-capi-test.c - the C API, used from C ---------------------------===*/
// RUN: norm-capi-test 2>&1 | FileCheck %s
// The whole pipeline through MLIR's C API: capi-pipeline.test (Clang
// builds only).

#include "norm-c/Dialects.h"

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"

#include <stdio.h>
#include <string.h>

static void printToStdout(MlirStringRef s, void *userData) {
  (void)userData;
  fwrite(s.data, 1, s.length, stdout);
}

int main(int argc, char **argv) {
  int runPipeline = argc > 1 && !strcmp(argv[1], "--run-pipeline");
  MlirContext ctx = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirNormRegisterDialects(registry);
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);
  MlirDialect norm = mlirContextGetOrLoadDialect(
      ctx, mlirStringRefCreateFromCString("norm"));
  // CHECK: norm dialect loaded: 1
  printf("norm dialect loaded: %d\n", !mlirDialectIsNull(norm));

  const char *ir =
      "func.func @f(%dy: tensor<?x8xbf16>, %x: tensor<?x8xbf16>,"
      "             %r: tensor<?xf32>, %w: tensor<8xf32>)"
      "    -> (tensor<?x8xbf16>, tensor<8xf32>) {\n"
      "  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x8xbf16>)"
      "      x(%x : tensor<?x8xbf16>) rstd(%r : tensor<?xf32>)"
      "      weight(%w : tensor<8xf32>)"
      "      -> dx(tensor<?x8xbf16>) dweight(tensor<8xf32>)\n"
      "  return %dx, %dw : tensor<?x8xbf16>, tensor<8xf32>\n"
      "}\n";
  MlirModule module =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(ir));
  // CHECK: parsed: 1
  printf("parsed: %d\n", !mlirModuleIsNull(module));
  // CHECK: norm.rms_norm_grad dy(%{{[^ ]+}} : tensor<?x8xbf16>)
  mlirOperationPrint(mlirModuleGetOperation(module), printToStdout, NULL);
  printf("\n");

  /* The pipelines are reachable from a textual pipeline through the C API. */
  mlirNormRegisterPasses();
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  MlirOpPassManager opm = mlirPassManagerGetAsOpPassManager(pm);
  MlirLogicalResult parsed = mlirParsePassPipeline(
      opm,
      mlirStringRefCreateFromCString(
          "builtin.module(norm-gpu-to-binary{chip=sm_80})"),
      printToStdout, NULL);
  // CHECK: pipeline parsed: 1
  printf("pipeline parsed: %d\n", mlirLogicalResultIsSuccess(parsed));

  /* ... and run there (--run-pipeline): the tensor-form op through the
   * whole compiler. capi-pipeline.test checks this part. */
  if (runPipeline) {
    MlirPassManager full = mlirPassManagerCreate(ctx);
    MlirLogicalResult fullParsed = mlirParsePassPipeline(
        mlirPassManagerGetAsOpPassManager(full),
        mlirStringRefCreateFromCString(
            "builtin.module(norm-to-gpu-binary{chip=sm_80})"),
        printToStdout, NULL);
    MlirLogicalResult ran = mlirPassManagerRunOnOp(
        full, mlirModuleGetOperation(module));
    // PIPELINE: pipeline ran: 1 1
    printf("pipeline ran: %d %d\n", mlirLogicalResultIsSuccess(fullParsed),
           mlirLogicalResultIsSuccess(ran));
    // PIPELINE: gpu.binary @f_kernels
    // PIPELINE-SAME: .target sm_80
    mlirOperationPrint(mlirModuleGetOperation(module), printToStdout, NULL);
    printf("\n");
    mlirPassManagerDestroy(full);
  }

  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  return 0;
}
