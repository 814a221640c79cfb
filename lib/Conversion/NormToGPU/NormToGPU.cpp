//===- NormToGPU.cpp - fused row loop nests -> gpu.launch kernels ---------===//
//
// Part of mlir-norm.
//
// The pass norm-map-to-gpu: walks the tagged nests of norm-lower-to-loops
// (docs/Lowering.md), hands each to the builder of its kernel kind (ZeroKernel,
// ReduceKernel, RowKernel with the strategies it picks from the geometry),
// records the launches in `norm.kernels`, and checks its post-condition: the
// host function only allocates and launches. The layout of the directory is
// described in docs/GPU.md.
//
//===----------------------------------------------------------------------===//

#include "GeometryAttr.h"
#include "Kernels.h"
#include "Launch.h"
#include "Tuning.h"

#include "norm/Conversion/NormToGPU/Geometry.h"
#include "norm/Conversion/NormToGPU/TargetCodegen.h"
#include "norm/Conversion/NormToGPU/TargetInfo.h"
#include "norm/Conversion/Passes.h"
#include "norm/Dialect/Norm/IR/NormOps.h"
#include "norm/Dialect/Norm/IR/StageContract.h"
#include "norm/Support/Groups.h"
#include "norm/Support/ManifestSchema.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMMAPTOGPU
#include "norm/Conversion/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;
using norm::Geometry;

namespace {

/// Removes the host-side row caches once every kernel has its own.
void eraseHostCaches(func::FuncOp func) {
  SmallVector<memref::AllocOp> caches;
  func.walk([&](memref::AllocOp alloc) {
    if (norm::isRowCache(alloc))
      caches.push_back(alloc);
  });
  for (memref::AllocOp alloc : caches) {
    if (!llvm::all_of(alloc->getUsers(),
                      [](Operation *u) { return isa<memref::DeallocOp>(u); }))
      continue;
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      user->erase();
    alloc.erase();
  }
}

/// Whether any op of `func` (itself included) carries a `norm.*`
/// discardable attribute: a stage tag, an id, a row cache, a kernel record.
bool hasNormMarkers(func::FuncOp func) {
  return func
      ->walk([](Operation *op) {
        for (NamedAttribute attr : op->getDiscardableAttrs())
          if (attr.getName().strref().starts_with("norm."))
            return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

/// Whether `op` or an op nested in it belongs to the lowering: it carries a
/// `norm.*` attribute or uses a buffer the lowering allocated (a row cache,
/// a recomputable buffer, a workspace). That is what a nest keeps when a
/// canonicalisation folds its tagged loop away.
bool isLoweringCode(Operation *op) {
  return op
      ->walk([](Operation *nested) {
        for (NamedAttribute attr : nested->getDiscardableAttrs())
          if (attr.getName().strref().starts_with("norm."))
            return WalkResult::interrupt();
        if (llvm::any_of(nested->getOperands(), norm::isLoweringBuffer))
          return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

/// The post-condition: outside the launches, the lowering left nothing on
/// the host but allocations (and frees), their sizes and the launches.
/// Code of the function's author (no `norm.*` attribute, none of the
/// lowering's buffers) is left alone. Emits an error naming the first op of
/// the lowering that would run on the host.
LogicalResult checkHostOnlyLaunches(func::FuncOp func) {
  WalkResult leftover = func.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<gpu::LaunchOp>(op))
      return WalkResult::skip();
    if (op == func.getOperation() ||
        isa<memref::AllocOp, memref::DeallocOp, func::ReturnOp>(op) ||
        (op->getNumRegions() == 0 && isMemoryEffectFree(op)))
      return WalkResult::advance();
    if (!isLoweringCode(op))
      return WalkResult::skip();
    if (isa<scf::ForOp>(op)) {
      // A loop of the lowering left outside the launches lost its tag.
      op->emitError()
          << "norm-map-to-gpu: this 'scf.for' belongs to a lowered norm op "
             "but has no norm.stage tag, so it would run on the host; was it "
             "canonicalised after norm-lower-to-loops (single-iteration loops "
             "are folded with their tag)? Run canonicalize after the mapping";
      return WalkResult::interrupt();
    }
    op->emitError() << "norm-map-to-gpu: '" << op->getName()
                    << "' belongs to a lowered norm op and would run on the "
                       "host, which only allocates and launches kernels";
    return WalkResult::interrupt();
  });
  return failure(leftover.wasInterrupted());
}

struct MapToGPUPass : public norm::impl::NormMapToGPUBase<MapToGPUPass> {
  using Base::Base;

  /// The chip's facts, set at the start of runOnOperation.
  std::optional<norm::TargetInfo> target;

  SmallVector<Attribute> kernels;

  /// Whether the kernels wait for the grids before them in their entry
  /// (`dependent-launch` on a chip with grid dependency control): each is
  /// then recorded `waits`, for the runtime to launch it early.
  bool waits = false;

  /// Records a launched kernel, in the manifest's terms
  /// (norm/Support/ManifestSchema.h); `columns` is the `columns` rule's
  /// columns per block. A row kernel's cluster is recorded only above 1
  /// (absent: no cluster). `dynamicShared`: the launch's dynamic shared
  /// memory, where it took more than the geometry's (the ring's).
  void record(OpBuilder &b, StringRef name, norm::manifest::KernelKind kind,
              int64_t threads, norm::manifest::GridRule grid,
              int64_t columns = 0, const Geometry *g = nullptr,
              int64_t resident = 0, int64_t dynamicShared = 0,
              int64_t wave = 0, bool skipAtOneGroup = false) {
    kernels.push_back(norm::KernelAttr::get(
        b.getContext(), name, kind, threads, grid, columns, g ? g->lanes : 0,
        g ? g->rows : 0, g ? g->vec : 0,
        g ? std::optional<bool>(g->registers) : std::nullopt,
        g && g->cluster > 1 ? g->cluster : 0,
        g ? std::max(g->dynamicSharedBytes, dynamicShared) : 0, resident,
        wave, waits ? std::optional<bool>(true) : std::nullopt));
    if (skipAtOneGroup) {
      auto attr = cast<norm::KernelAttr>(kernels.back());
      norm::manifest::KernelRecord r = attr.getRecord();
      r.skipAtOneGroup = true;
      kernels.back() = norm::KernelAttr::get(b.getContext(), r);
    }
  }

  /// Where G may be 1 (M = 1 is in the `rows` hint's bucket, and G is not
  /// a constant other than 1), the dx kernel that writes the partial rows
  /// `sum` reads finishes dweight / dbias itself at G = 1
  /// (norm::finishOneGroup); returns whether it does, for the reduce
  /// kernel's record (`skip_at_one_group`). `deterministic` only: there
  /// program p alone writes partial row p, so at G = 1 the one program has
  /// written every row the reduce reads (`atomic` adds every program's
  /// terms into one row, `locked` and `grouped_atomic` share rows between
  /// programs under a lock or atomics).
  bool finishInDx(scf::ForOp nest, scf::ForOp sum) {
    if (rows > norm::kTuningRowEdges[0] ||
        norm::getNestStrategy(nest) != norm::ReductionStrategy::Deterministic)
      return false;
    Value ws = norm::partialRowsOf(sum);
    if (!ws)
      return false;
    for (Attribute a : kernels) {
      const norm::manifest::KernelRecord &r =
          cast<norm::KernelAttr>(a).getRecord();
      if (r.kind != norm::manifest::KernelKind::Dx)
        continue;
      gpu::LaunchOp dx;
      nest->getParentOfType<func::FuncOp>().walk([&](gpu::LaunchOp launch) {
        std::optional<StringRef> f = launch.getFunction();
        if (f && *f == r.name)
          dx = launch;
      });
      if (!dx)
        continue;
      bool writes = dx->walk([&](Operation *op) {
                         return llvm::is_contained(op->getOperands(), ws)
                                    ? WalkResult::interrupt()
                                    : WalkResult::advance();
                       }).wasInterrupted();
      if (writes)
        return norm::finishOneGroup(
            dx, nest, sum, r.cluster, norm::TargetCodegen::forTarget(*target),
            forwardFinish == 2 || (forwardFinish == 1 && r.cluster > 1));
    }
    return false;
  }

  /// The most partial-row groups G of a loop over them (the dx kernel's
  /// programs, the reduce kernel's sum) over rows of `n` columns: the
  /// loop's constant bound (the op's fixed G) or G at the largest M of the
  /// `rows` hint's bucket (dxLargestPrograms); 0 when neither is known.
  int64_t largestGroups(Value bound, std::optional<int64_t> n) {
    if (std::optional<int64_t> g = getConstantIntValue(bound))
      return *g;
    return n ? norm::dxLargestPrograms(*n, rows) : 0;
  }

  /// The largest launch of the dx kernel of `rn` (largestGroups).
  int64_t largestPrograms(norm::RowNest &rn, const norm::RowShape &shape) {
    return largestGroups(rn.nest.getUpperBound(), shape.n);
  }

  /// Whether the dx kernel of `rn` takes the ring of `async-rows`
  /// (Geometry.h ringFit: where its registers keep the wave); clears
  /// rn.asyncRows where not. Returns the blocks an SM to record.
  int64_t fitRing(norm::RowNest &rn) {
    if (rn.forward || rn.asyncRows <= 0) {
      rn.asyncRows = 0;
      return 0;
    }
    norm::RowShape shape = norm::rowShapeOf(rn, {});
    norm::RingFit ring = norm::ringFit(rn.geometry, shape.partialRows,
                                       largestPrograms(rn, shape), *target);
    if (!ring.ring) {
      rn.asyncRows = 0;
      return ring.residentBlocks;
    }
    rn.ringDynamicBudget = ringDynamic ? ring.dynamicBudget : 0;
    // The ring in a body of its own for aligned launches (the rows'
    // 16-byte copies run only there); unaligned ones take the interleaved
    // body, as with a pipeline (Geometry::pipeline's checkGeometry rule).
    if (rn.geometry.layouts == norm::RowLayouts::Vector)
      rn.geometry.layouts = norm::RowLayouts::Both;
    return ring.residentBlocks;
  }

  /// What the dx kernel of `rn` does with its early rows (dxEarlyRows):
  /// reads them late again where the rule says so, and returns the blocks
  /// an SM to record (0: none). A kernel with the ring has no pipeline
  /// into registers (the ring takes its place).
  int64_t fitEarlyRows(norm::RowNest &rn) {
    if (rn.forward || !fitEarly)
      return 0;
    llvm::SmallPtrSet<Operation *, 4> early = norm::earlyRowCaches(rn);
    if (early.empty())
      return 0;
    norm::RowShape shape = norm::rowShapeOf(rn, {});
    Geometry g = rn.geometry;
    if (rn.asyncRows > 0)
      g.pipeline = 0;
    norm::DxEarlyRows fit =
        norm::dxEarlyRows(g, shape.partialRows, int64_t(early.size()),
                          largestPrograms(rn, shape), *target);
    if (!fit.early)
      norm::rereadRowCaches(rn.rows, [&](memref::AllocOp alloc) {
        return early.contains(alloc.getOperation());
      });
    return fit.residentBlocks;
  }

  /// The blocks an SM a dx kernel with neither the ring nor early rows
  /// needs for one wave (Geometry.h dxWaveBlocks), recorded as its `wave`:
  /// its registers are left to the JIT, and the runtime asks for these
  /// blocks where the JIT's fall short. 0: none.
  int64_t fitWave(norm::RowNest &rn) {
    if (rn.forward || rn.asyncRows > 0 || !waveResident)
      return 0;
    norm::RowShape shape = norm::rowShapeOf(rn, {});
    return norm::dxWaveBlocks(rn.geometry, shape.partialRows,
                              largestPrograms(rn, shape), *target);
  }

  /// The zero kernel's block (it only writes rows).
  static constexpr int64_t kZeroThreads = 256;

  /// The geometry `rn`'s nest states (norm-choose-geometry), checked against
  /// the chip; an error on the nest if it has none or the chip refuses it.
  FailureOr<Geometry> geometryOf(norm::RowNest &rn, StringRef stage) {
    norm::RowGeometryAttr attr = norm::getGeometry(rn.nest);
    if (!attr)
      return rn.nest.emitError()
             << "norm-map-to-gpu: this '" << stage
             << "' nest has no norm.geometry (#norm.row_geometry); run "
                "norm-choose-geometry first (norm-to-gpu-binary does)";
    norm::RowShape shape = norm::rowShapeOf(rn, {});
    // max-register-elements is the cost model's knob, checked by
    // norm-choose-geometry; here only what the chip allows.
    shape.maxRegisterElements = 0;
    Geometry g = norm::fromAttr(attr, shape, *target);
    std::string why = norm::checkGeometry(g, shape, *target);
    if (!why.empty())
      return rn.nest.emitError()
             << "norm-map-to-gpu: " << attr << " cannot be built for " << chip
             << ": " << why;
    return g;
  }

  /// Launches the kernel of one tagged nest and records it.

  LogicalResult mapNest(scf::ForOp nest, norm::Stage stage, StringRef name) {
    using norm::manifest::GridRule;
    using norm::manifest::KernelKind;
    OpBuilder b(nest);
    switch (stage) {
    case norm::Stage::Zero:
      if (failed(norm::checkZeroNestShape(nest)))
        return failure();
      // The `deterministic` dx kernel writes its program's partial rows
      // whole wherever they live (RowStrategies.h, Partials): nothing
      // needs clearing, in this launch or the runtime's (`norm.written`,
      // the manifest's `written`).
      if (norm::getNestStrategy(nest) ==
          norm::ReductionStrategy::Deterministic) {
        nest.walk([&](memref::StoreOp store) {
          if (auto alloc = store.getMemRef().getDefiningOp<memref::AllocOp>())
            norm::setWrittenWhole(alloc);
        });
        break;
      }
      norm::buildZeroKernel(nest, name, kZeroThreads);
      record(b, name, KernelKind::Zero, kZeroThreads, GridRule::WorkspaceRows);
      break;
    case norm::Stage::Reduce: {
      FailureOr<scf::ForOp> sum = norm::checkReduceNestShape(nest);
      if (failed(sum))
        return failure();
      std::optional<int64_t> n = getConstantIntValue(nest.getUpperBound());
      int64_t columns = reduceColumns ? static_cast<int64_t>(reduceColumns)
                                      : norm::reduceColumns(n, *target);
      bool skipAtOneGroup = finishInDx(nest, *sum);
      norm::buildReduceKernel(
          nest, *sum, name, columns,
          norm::reduceBatches(largestGroups(sum->getUpperBound(), n),
                              static_cast<int64_t>(reduceUnroll)));
      record(b, name, KernelKind::Reduce, columns * norm::kReduceSlices,
             GridRule::Columns, columns, /*g=*/nullptr, /*resident=*/0,
             /*dynamicShared=*/0, /*wave=*/0, skipAtOneGroup);
      break;
    }
    case norm::Stage::Dx:
    case norm::Stage::Forward: {
      bool forward = stage == norm::Stage::Forward;
      FailureOr<norm::RowNest> rn = norm::analyzeRowNest(nest, forward);
      if (failed(rn))
        return failure();
      FailureOr<Geometry> g = geometryOf(*rn, norm::stringifyStage(stage));
      if (failed(g))
        return failure();
      rn->geometry = *g;
      rn->codegen = &norm::TargetCodegen::forTarget(*target);
      rn->rowBarriers = rowBarriers;
      rn->rereadFallback = rereadFallback;
      rn->asyncRows = asyncRows;
      // Early rows have their own rule (dxEarlyRows), the ring its own.
      bool early = !forward && !norm::earlyRowCaches(*rn).empty();
      int64_t ringResident = fitRing(*rn);
      int64_t resident = fitEarlyRows(*rn);
      if (!resident)
        resident = ringResident;
      int64_t wave = resident || early ? 0 : fitWave(*rn);
      gpu::LaunchOp launch = norm::buildRowKernel(*rn, name);
      record(b, name, forward ? KernelKind::Forward : KernelKind::Dx,
             rn->geometry.threads,
             forward ? GridRule::RowBlocks : GridRule::Programs,
             /*columns=*/0, &rn->geometry, resident,
             norm::dynamicSharedSize(launch), wave);
      break;
    }
    default:
      return nest.emitError()
             << "norm-map-to-gpu: stage '" << norm::stringifyStage(stage)
             << "' cannot be mapped; run norm-lower-to-loops fully first";
    }
    nest.erase();
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // One instance may run on several functions in turn (without threads,
    // or as the pass manager schedules them): each records its own.
    kernels.clear();
    target = norm::TargetInfo::get(chip);
    if (!target) {
      emitError(func.getLoc())
          << "norm-map-to-gpu: unknown chip '" << chip
          << "' (known: " << norm::TargetInfo::knownChipList() << ")";
      return signalPassFailure();
    }
    // Each integer option and what it takes: an error names the option and
    // the value given.
    auto refuse = [&](StringRef option, StringRef takes, int64_t value) {
      emitError(func.getLoc()) << "norm-map-to-gpu: " << option
                               << " must be " << takes << ", got " << value;
      signalPassFailure();
    };
    if (rowBarriers < 0 || rowBarriers > 2)
      return refuse("row-barriers", "0, 1 or 2", rowBarriers);
    if (forwardFinish < 0 || forwardFinish > 2)
      return refuse("forward-finish", "0, 1 or 2", forwardFinish);
    if (asyncRows < 0 || asyncRows > 4)
      return refuse("async-rows", "0 to 4", asyncRows);
    if (!llvm::is_contained({0, 8, 16, 32}, reduceColumns))
      return refuse("reduce-columns", "0, 8, 16 or 32", reduceColumns);
    if (reduceUnroll < 0 || reduceUnroll > 32)
      return refuse("reduce-unroll", "0 to 32", reduceUnroll);
    // A dim of a constant index out of range is undefined behaviour that
    // upstream folders do not expect (canonicalize crashes on it once it is
    // inside a launch): refuse it here, before any of it moves.
    WalkResult badDim = func.walk([&](memref::DimOp dim) {
      std::optional<int64_t> index = dim.getConstantIndex();
      auto type = dyn_cast<MemRefType>(dim.getSource().getType());
      if (!index || !type || (*index >= 0 && *index < type.getRank()))
        return WalkResult::advance();
      dim.emitError() << "norm-map-to-gpu: dim " << *index
                      << " is out of range for " << type;
      return WalkResult::interrupt();
    });
    if (badDim.wasInterrupted())
      return signalPassFailure();
    // The wrong stage: norm ops are lowered by norm-lower-to-loops first
    // (this pass would leave them where they are).
    if (Operation *normOp = norm::findUnlowered(func, /*taggedNests=*/false)) {
      emitError(normOp->getLoc())
          << "norm-map-to-gpu: '" << normOp->getName()
          << "' is not lowered to loops yet; run norm-lower-to-loops first "
             "(or the whole pipeline, norm-to-gpu-binary)";
      return signalPassFailure();
    }
    SmallVector<scf::ForOp> nests;
    func.walk<WalkOrder::PreOrder>([&](scf::ForOp loop) {
      if (!norm::getStage(loop))
        return WalkResult::advance();
      nests.push_back(loop);
      return WalkResult::skip();
    });
    // A function with nothing of ours (no `norm.*` attribute on any op:
    // an embedder's own code) is left alone; one that has some is held to
    // the post-condition below, so a nest that lost its tag is an error,
    // not a loop quietly left on the host.
    if (nests.empty() && !hasNormMarkers(func))
      return;
    // Kernels are named after the function, and PTX symbols take letters,
    // digits, '_' and '$' only (LLVM would abort on anything else).
    StringRef fname = func.getName();
    if (!nests.empty() && (fname.empty() || llvm::isDigit(fname.front()) ||
                           !llvm::all_of(fname, [](char c) {
                             return llvm::isAlnum(c) || c == '_' || c == '$';
                           }))) {
      func.emitError() << "norm-map-to-gpu: function name '" << fname
                       << "' cannot name a kernel: PTX symbols are letters, "
                          "digits, '_' and '$', not starting with a digit";
      return signalPassFailure();
    }
    waits = dependentLaunch && target->gridDependencies;
    OpBuilder b(func);
    int counter = 0;
    for (scf::ForOp nest : nests) {
      norm::Stage stage = *norm::getStage(nest);
      std::string name = (func.getName() + "_" + norm::stringifyStage(stage) +
                          "_" + Twine(counter++))
                             .str();
      if (failed(mapNest(nest, stage, name)))
        return signalPassFailure();
    }
    // Every kernel of the mapping waits for the grids before it first of
    // all (TargetCodegen::waitForPriorGrids): nothing of the kernel reads or
    // writes global memory before.
    if (waits) {
      llvm::StringSet<> names;
      for (Attribute a : kernels)
        names.insert(cast<norm::KernelAttr>(a).getRecord().name);
      const norm::TargetCodegen &codegen =
          norm::TargetCodegen::forTarget(*target);
      func.walk([&](gpu::LaunchOp launch) {
        std::optional<StringRef> kernel = launch.getFunction();
        if (!kernel || !names.contains(*kernel))
          return;
        OpBuilder kb = OpBuilder::atBlockBegin(&launch.getBody().front());
        codegen.waitForPriorGrids(kb, launch.getLoc());
      });
    }
    // The write-backs' marks served finishOneGroup; none leaves the pass.
    func.walk([](Operation *op) { op->removeAttr(norm::kFinalPartialAttr); });
    eraseHostCaches(func);
    if (failed(checkHostOnlyLaunches(func)))
      return signalPassFailure();
    func.walk([](gpu::LaunchOp launch) { norm::sinkIntoLaunch(launch); });
    func->setAttr("norm.kernels", b.getArrayAttr(kernels));
  }
};

} // namespace
