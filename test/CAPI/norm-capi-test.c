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

    /* An RMSNorm written as linalg on tensors: norm-raise, then the whole
     * compiler, from one textual pipeline. */
    const char *linalgIr =
        "func.func @g(%x: tensor<?x8xf32>, %w: tensor<8xf32>)"
        "    -> tensor<?x8xf32> {\n"
        "  %c0 = arith.constant 0 : index\n"
        "  %z = arith.constant 0.0 : f32\n"
        "  %n = arith.constant 8.0 : f32\n"
        "  %eps = arith.constant 1.0e-6 : f32\n"
        "  %m = tensor.dim %x, %c0 : tensor<?x8xf32>\n"
        "  %e1 = tensor.empty(%m) : tensor<?xf32>\n"
        "  %f = linalg.fill ins(%z : f32) outs(%e1 : tensor<?xf32>)"
        "      -> tensor<?xf32>\n"
        "  %ss = linalg.generic {indexing_maps = ["
        "      affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],"
        "      iterator_types = [\"parallel\", \"reduction\"]}"
        "      ins(%x : tensor<?x8xf32>) outs(%f : tensor<?xf32>) {\n"
        "  ^bb0(%a: f32, %acc: f32):\n"
        "    %q = arith.mulf %a, %a : f32\n"
        "    %s = arith.addf %q, %acc : f32\n"
        "    linalg.yield %s : f32\n"
        "  } -> tensor<?xf32>\n"
        "  %e2 = tensor.empty(%m) : tensor<?x8xf32>\n"
        "  %y = linalg.generic {indexing_maps = ["
        "      affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,"
        "      affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],"
        "      iterator_types = [\"parallel\", \"parallel\"]}"
        "      ins(%x, %ss, %w : tensor<?x8xf32>, tensor<?xf32>,"
        "      tensor<8xf32>) outs(%e2 : tensor<?x8xf32>) {\n"
        "  ^bb0(%a: f32, %s: f32, %wj: f32, %o: f32):\n"
        "    %v = arith.divf %s, %n : f32\n"
        "    %ve = arith.addf %v, %eps : f32\n"
        "    %r = math.rsqrt %ve : f32\n"
        "    %h = arith.mulf %a, %r : f32\n"
        "    %yv = arith.mulf %h, %wj : f32\n"
        "    linalg.yield %yv : f32\n"
        "  } -> tensor<?x8xf32>\n"
        "  return %y : tensor<?x8xf32>\n"
        "}\n";
    MlirModule linalgModule =
        mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(linalgIr));
    MlirPassManager raise = mlirPassManagerCreate(ctx);
    MlirLogicalResult raiseParsed = mlirParsePassPipeline(
        mlirPassManagerGetAsOpPassManager(raise),
        mlirStringRefCreateFromCString(
            "builtin.module(func.func(norm-raise),"
            "norm-to-gpu-binary{chip=sm_80})"),
        printToStdout, NULL);
    MlirLogicalResult raiseRan = mlirPassManagerRunOnOp(
        raise, mlirModuleGetOperation(linalgModule));
    // PIPELINE: raise pipeline ran: 1 1 1
    printf("raise pipeline ran: %d %d %d\n",
           !mlirModuleIsNull(linalgModule),
           mlirLogicalResultIsSuccess(raiseParsed),
           mlirLogicalResultIsSuccess(raiseRan));
    // PIPELINE: gpu.launch_func @g_kernels::@g_forward_0
    // PIPELINE: gpu.binary @g_kernels
    mlirOperationPrint(mlirModuleGetOperation(linalgModule), printToStdout,
                       NULL);
    printf("\n");
    mlirPassManagerDestroy(raise);
    mlirModuleDestroy(linalgModule);
  }

  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  return 0;
}
