//===- embed.cpp - a small compiler that embeds mlir-norm ----------------===//
//
// Part of mlir-norm (examples/embed). Builds, with C++ builders, one module
// holding a function of its own (ordinary scf.for loops) and three norm
// backward ops (rank 2 and rank 3), runs mlir-norm's pipeline on it, and writes each norm
// function's PTX and launch manifest (the files libnormrt loads):
//
//   norm-embed OUTDIR [--chip=sm_90]
//
// Prints one line per file it wrote; exit status 1 on any error, with the
// compiler's diagnostics on stderr.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/Utils/NormFunction.h"
#include "norm/InitNorm.h"
#include "norm/Pipelines/Manifest.h"
#include "norm/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace mlir;

/// `func.func @scale_by_two(%a: memref<?xf32>)`: a[i] = 2 * a[i], an
/// ordinary loop that is none of mlir-norm's business.
static void buildOwnFunction(OpBuilder &b, Location loc) {
  MLIRContext *ctx = b.getContext();
  auto type = MemRefType::get({ShapedType::kDynamic}, Float32Type::get(ctx));
  auto fn = func::FuncOp::create(b, loc, "scale_by_two",
                                 b.getFunctionType({type}, {}));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(fn.addEntryBlock());
  Value a = fn.getArgument(0);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value n = memref::DimOp::create(b, loc, a, zero);
  Value two = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(2.0f));
  scf::ForOp::create(b, loc, zero, n, one, ValueRange{},
                     [&](OpBuilder &lb, Location l, Value i, ValueRange) {
                       Value v = memref::LoadOp::create(lb, l, a, i);
                       Value w = arith::MulFOp::create(lb, l, v, two);
                       memref::StoreOp::create(lb, l, w, a, i);
                       scf::YieldOp::create(lb, l);
                     });
  func::ReturnOp::create(b, loc);
}

struct NormFunction {
  std::string name;
  norm::NormOpSpec spec;
};

int main(int argc, char **argv) {
  if (argc < 2) {
    llvm::errs() << "usage: norm-embed OUTDIR [--chip=sm_90]\n";
    return 2;
  }
  std::string outDir = argv[1];
  std::string chip = "sm_90";
  for (int i = 2; i < argc; ++i)
    if (llvm::StringRef(argv[i]).starts_with("--chip="))
      chip = llvm::StringRef(argv[i]).drop_front(7).str();

  DialectRegistry registry;
  norm::registerNormDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  Location loc = UnknownLoc::get(&ctx);

  // The module: a function of our own, then the norm functions.
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  OpBuilder b = OpBuilder::atBlockEnd(module->getBody());
  buildOwnFunction(b, loc);

  SmallVector<NormFunction> norms;
  {
    NormFunction ln{"layer_norm_grad_bf16_n4096", {}};
    ln.spec.op = norm::NormOpKind::LayerNormGrad;
    ln.spec.n = 4096;
    ln.spec.xType = BFloat16Type::get(&ctx);
    ln.spec.paramType = Float32Type::get(&ctx);
    ln.spec.stridedRows = ln.spec.stridedVectors = true;
    norms.push_back(ln);
    NormFunction rms{"rms_norm_grad_bf16_n1024", {}};
    rms.spec.op = norm::NormOpKind::RMSNormGrad;
    rms.spec.n = 1024;
    rms.spec.xType = BFloat16Type::get(&ctx);
    rms.spec.stridedRows = rms.spec.stridedVectors = true;
    norms.push_back(rms);
    // Rank 3, (batch, sequence, hidden): rows are the two leading dims,
    // which the lowering views as one, so they are contiguous (identity
    // layout); weight and dweight keep their strided layout.
    NormFunction rms3{"rms_norm_grad_bf16_bsn1024", rms.spec};
    rms3.spec.rowDims = 2;
    rms3.spec.stridedRows = false;
    norms.push_back(rms3);
  }
  for (NormFunction &f : norms)
    if (failed(norm::buildNormFunction(b, loc, f.name, f.spec)))
      return 1;
  if (failed(verify(*module)))
    return 1;

  // mlir-norm's whole pipeline, from the options struct.
  norm::NormToGPUBinaryOptions options;
  options.chip = chip;
  options.format = "isa"; // PTX text
  PassManager pm(&ctx);
  norm::buildNormToGPUBinaryPipeline(pm, options);
  if (failed(pm.run(*module)))
    return 1;

  if (std::error_code ec = llvm::sys::fs::create_directories(outDir)) {
    llvm::errs() << "norm-embed: " << outDir << ": " << ec.message() << "\n";
    return 1;
  }
  auto write = [&](const std::string &path, llvm::StringRef text) {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec) {
      llvm::errs() << "norm-embed: " << path << ": " << ec.message() << "\n";
      return false;
    }
    os << text;
    llvm::outs() << "wrote " << path << "\n";
    return true;
  };

  // Each norm function's kernels are one gpu.binary; our own function is
  // left as it was (still an scf.for).
  for (NormFunction &f : norms) {
    auto fn = module->lookupSymbol<func::FuncOp>(f.name);
    gpu::BinaryOp binary = fn ? norm::kernelBinaryOf(*module, fn) : nullptr;
    if (!binary) {
      llvm::errs() << "norm-embed: no kernels for " << f.name << "\n";
      return 1;
    }
    auto object = cast<gpu::ObjectAttr>(binary.getObjects().getValue().front());
    SmallVector<norm::ManifestArgument> args;
    for (norm::NormArgRole role : norm::normFunctionArguments(f.spec))
      args.push_back(norm::manifestArgumentOf(role));
    std::string manifest = llvm::formatv(
        "{0:2}", llvm::json::Value(norm::buildManifest(fn, options, args)));
    if (!write(outDir + "/" + f.name + ".ptx", object.getObject().getValue()) ||
        !write(outDir + "/" + f.name + ".json", manifest + "\n"))
      return 1;
  }
  auto own = module->lookupSymbol<func::FuncOp>("scale_by_two");
  bool ownIntact = own && !own.getBody().getOps<scf::ForOp>().empty();
  llvm::outs() << "scale_by_two: "
               << (ownIntact ? "left alone (scf.for)" : "CHANGED") << "\n";
  return ownIntact ? 0 : 1;
}
