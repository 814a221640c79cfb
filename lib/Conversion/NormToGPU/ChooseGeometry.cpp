//===- ChooseGeometry.cpp - #norm.row_geometry on every row kernel --------===//
//
// Part of mlir-norm.
//
// The pass norm-choose-geometry: every norm op and every `dx` / `forward`
// nest gets the geometry of its row kernel as an attribute, chosen by the
// cost model (Geometry.cpp) or, where one is already there, checked and
// completed. norm-map-to-gpu builds what the attribute says. This is the one
// place a geometry is chosen, so a test, a user or a tuner sees and pins
// the choice in the IR (IREE's lowering configs are the model).
//
//===----------------------------------------------------------------------===//

#include "GeometryAttr.h"
#include "Tuning.h"

#include "norm/Conversion/NormToGPU/TargetInfo.h"
#include "norm/Conversion/Passes.h"
#include "norm/Dialect/Norm/IR/NormOps.h"
#include "norm/Dialect/Norm/IR/StageContract.h"

#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <tuple>

namespace mlir::norm {
#define GEN_PASS_DEF_NORMCHOOSEGEOMETRY
#include "norm/Conversion/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

struct ChooseGeometryPass
    : public norm::impl::NormChooseGeometryBase<ChooseGeometryPass> {
  using Base::Base;

  /// The table of the `tuning-file` option, read once.
  std::optional<std::vector<TuningEntry>> fileTable;

  /// The options, checked; emits an error on `func` and fails otherwise.
  LogicalResult checkOptions(func::FuncOp func, const TargetInfo &target) {
    if (threads != 0 && (threads < 0 || threads % target.warpSize ||
                         threads > target.maxThreadsPerBlock ||
                         !llvm::isPowerOf2_64(threads)))
      return emitError(func.getLoc())
             << "norm-choose-geometry: threads must be 0 (chosen from N) or "
                "a power of two, a multiple of "
             << target.warpSize << " and at most " << target.maxThreadsPerBlock
             << ", got " << static_cast<int64_t>(threads);
    if (cluster < 0 || cluster > kMaxClusterBlocks)
      return emitError(func.getLoc())
             << "norm-choose-geometry: cluster must be 0 (chosen), 1 (never) "
                "or 2 to "
             << kMaxClusterBlocks << ", got " << static_cast<int64_t>(cluster);
    if (maxLanes != 0 && (maxLanes < 0 || !llvm::isPowerOf2_64(maxLanes)))
      return emitError(func.getLoc())
             << "norm-choose-geometry: max-lanes must be 0 (no cap) or a "
                "power of two, got "
             << static_cast<int64_t>(maxLanes);
    if (prefetch < 0 || prefetch > kMaxPrefetch)
      return emitError(func.getLoc())
             << "norm-choose-geometry: prefetch must be 0 (none, or the "
                "tuning table's) to "
             << kMaxPrefetch << ", got " << static_cast<int64_t>(prefetch);
    if (prefetch > 0 && !target.bulkPrefetch)
      return emitError(func.getLoc())
             << "norm-choose-geometry: prefetch=" << static_cast<int64_t>(prefetch)
             << " needs cp.async.bulk.prefetch, which " << chip
             << " does not have (sm_90 and newer do)";
    if (partialVector != 0 && partialVector != 1 && partialVector != 2 &&
        partialVector != 4)
      return emitError(func.getLoc())
             << "norm-choose-geometry: partial-vector must be 0 (the tuning "
                "table's, else 1), 1, 2 or 4, got "
             << static_cast<int64_t>(partialVector);
    if (pipeline < 0 || pipeline > kMaxPipeline)
      return emitError(func.getLoc())
             << "norm-choose-geometry: pipeline must be 0 (the tuning "
                "table's, else the cost model's) to "
             << kMaxPipeline << ", got " << static_cast<int64_t>(pipeline);
    if (narrowCache < 0 || narrowCache > 2)
      return emitError(func.getLoc())
             << "norm-choose-geometry: narrow-cache must be 0 (the tuning "
                "table's, else f32 caches), 1 or 2, got "
             << static_cast<int64_t>(narrowCache);
    if (holdColumns < -1 || holdColumns > 1)
      return emitError(func.getLoc())
             << "norm-choose-geometry: hold-columns must be -1 (the tuning "
                "table's, else the cost model's), 0 or 1, got "
             << static_cast<int64_t>(holdColumns);
    if (batchRows < 0 || batchRows > kMaxBatchRows)
      return emitError(func.getLoc())
             << "norm-choose-geometry: batch-rows must be 0 (chosen) or 1 to "
             << kMaxBatchRows << ", got " << static_cast<int64_t>(batchRows);
    if (rows < 0)
      return emitError(func.getLoc())
             << "norm-choose-geometry: rows must be 0 (unknown) or the rows "
                "M the kernels are for, got "
             << static_cast<int64_t>(rows);
    if (maxRegisterElements < 1)
      return emitError(func.getLoc())
             << "norm-choose-geometry: max-register-elements must be "
                "positive, got "
             << static_cast<int64_t>(maxRegisterElements);
    if (cluster > 1 && target.maxClusterBlocks < cluster)
      return emitError(func.getLoc())
             << "norm-choose-geometry: cluster=" << static_cast<int64_t>(cluster)
             << " needs thread-block clusters of that size, which " << chip
             << " does not have (sm_90 and newer do)";
    return success();
  }

  /// Why a written geometry `g` cannot stand for the row `s`, whose cost
  /// model choice is `chosen`; empty when it can.
  std::string refusal(RowGeometryAttr written, const Geometry &g,
                      const Geometry &chosen, const RowShape &s,
                      const TargetInfo &target) {
    std::string why = checkGeometry(g, s, target);
    if (!why.empty())
      return why;
    if (s.partials == PartialSums::Deterministic && s.partialRows > 0 &&
        !samePartialOrder(g, chosen))
      return "dweight/dbias: this geometry adds the deterministic partial "
             "sums in another order than the cost model's (rows = " +
             std::to_string(g.rows) + " against " +
             std::to_string(chosen.rows) +
             " rows in flight), so their bits would differ from every other "
             "build of this op; keep rows = 1 in both, or the cost model's "
             "threads, lanes and chunks";
    if (written.getShared() && written.getShared() != g.sharedBytes)
      return "shared: " + std::to_string(written.getShared()) +
             " bytes written, the geometry takes " +
             std::to_string(g.sharedBytes) +
             " (leave it out: the pass fills it in)";
    if (written.getDynamicShared() &&
        written.getDynamicShared() != g.dynamicSharedBytes)
      return "dynamic_shared: " + std::to_string(written.getDynamicShared()) +
             " bytes written, the geometry takes " +
             std::to_string(g.dynamicSharedBytes) +
             " (leave it out: the pass fills it in)";
    return std::string();
  }

  /// The tuning table's geometry for the row `s` where it has an entry
  /// that passes every check and keeps the cost model's dweight/dbias
  /// order, else `chosen` (the cost model's).
  Geometry tuned(const RowShape &s, const Geometry &chosen,
                 const TargetInfo &target, bool &holdSet) {
    holdSet = false;
    if (!tuning || s.threads != 0 || s.cluster != 0 || s.maxLanes != 0)
      return chosen;
    const TuningEntry *e = findTuning(
        fileTable ? llvm::ArrayRef<TuningEntry>(*fileTable)
                  : tuningTable(tuningFamily(target.chip)),
        s, rows);
    if (!e)
      return chosen;
    RowShape knobs = s;
    knobs.threads = e->threads;
    knobs.cluster = e->cluster;
    knobs.maxLanes = e->maxLanes;
    if (e->maxRegisterElements)
      knobs.maxRegisterElements = e->maxRegisterElements;
    if (knobs.cluster > target.maxClusterBlocks)
      return chosen;
    // An entry's cluster knob where the slices do not fit the register
    // share makes a looped row split over a cluster (timed and its
    // dweight/dbias bits checked on the H200 by bench/tune.py plan wide).
    Geometry g = chooseRowGeometry(knobs, target);
    // Checked against the entry's register share where it gives one (a
    // knob like the others: the forward's 32 lanes of 10 chunks need 80
    // elements a lane, past the option's default).
    RowShape limits = s;
    limits.maxRegisterElements = knobs.maxRegisterElements;
    // Off the N it was measured at, an entry with layout knobs stands only
    // where they lay the row out as they did there (one without them keeps
    // the cost model's layout, and its other knobs, prefetch to
    // hold_columns, stand on it as they were measured: LayerNorm backward
    // 65536 x 2560, the N = 3072 entry's prefetch, pipeline and narrow
    // caches, 280 us in the fifth session's run, 455 without them).
    // The entry's knobs laid out at the N it was measured at, where that
    // is not this one.
    std::optional<Geometry> measured;
    if (e->tunedN && e->tunedN != *s.n) {
      RowShape at = knobs;
      at.n = e->tunedN;
      measured = chooseRowGeometry(at, target);
    }
    bool layoutKnobs = e->threads || e->cluster || e->maxLanes ||
                       e->maxRegisterElements;
    auto stands = [&](const Geometry &h) {
      return checkGeometry(h, limits, target).empty() &&
             !(layoutKnobs && measured && !tuningTransfers(*measured, h));
    };
    if (!stands(g)) {
      // A cluster entry measured a block's slice of the row: off its N,
      // the same slice (threads, chunks a lane) over as many blocks as
      // this N needs, where the chip has them. Its cluster size alone
      // would lay the row out another way or loop it (LayerNorm forward
      // bf16 N = 65536's 512 threads x 2 blocks at N = 81920: 80 elements
      // a lane, past the register share, so the cost model's one looped
      // block: 26.1 us at M = 1 on the H100, 7.9 under the entry before).
      if (!measured || e->cluster < 2 || measured->cluster < 2 ||
          !measured->registers || measured->sliceColumns <= 0)
        return chosen;
      // The fewest blocks whose slices, of at most the measured chunks a
      // lane and at least half of them, use the chunk slots as the entry's
      // did (tuningTransfers: LayerNorm bf16 N = 100003 under N =
      // 131072's cluster of 4 fills 87% of them in 4 blocks, 98% in 5). A
      // smaller slice is another kernel: RMSNorm bf16 N = 28672 under N =
      // 32768's 512 threads x 2 (4 chunks) would take 7 blocks of one
      // chunk, 2x slower than the cost model's on the H100.
      RowShape slice = knobs;
      slice.threads = measured->threads;
      std::optional<Geometry> found;
      for (int64_t c = std::max<int64_t>(
               2, llvm::divideCeil(*s.n, measured->sliceColumns));
           c <= target.maxClusterBlocks && !found; ++c) {
        slice.cluster = c;
        Geometry h = chooseRowGeometry(slice, target);
        if (stands(h) && h.lanes == measured->lanes &&
            h.chunksPerLane <= measured->chunksPerLane &&
            2 * h.chunksPerLane >= measured->chunksPerLane)
          found = h;
      }
      if (!found)
        return chosen;
      g = *found;
    }
    if (s.partials == PartialSums::Deterministic && s.partialRows > 0 &&
        !samePartialOrder(g, chosen))
      return chosen;
    if (s.partials == PartialSums::Locked && g.rows != 1)
      g = chosen;
    // The entry's prefetch, where the kernel can take it (not a forward
    // kernel, nor rows that can never be aligned), its partial_vector,
    // where the partial sums are in shared memory, and its pipeline, where
    // a register-regime block walks waves of rows.
    setIfTaken(g, &Geometry::prefetch, e->prefetch, s, target);
    setIfTaken(g, &Geometry::partialVector, e->partialVector, s, target);
    setIfTaken(g, &Geometry::pipeline, e->pipeline, s, target);
    setIfTaken(g, &Geometry::narrowCache, e->narrowCache, s, target);
    // Its hold_columns where it has one (the key absent: the cost
    // model's), forward kernels too. Off the N it was measured at, a hold
    // stands only where a lane holds no more chunks than it did there: the
    // held registers grow with them (RMSNorm bf16 N = 10240's entry, 256
    // threads: 5 chunks, 80 registers and three blocks an SM; at N = 11008
    // 6 chunks, 97 and two, 0.88x of not holding on the H200).
    bool holdGrows = e->holdColumns == 1 && measured &&
                     g.chunksPerLane > measured->chunksPerLane;
    if (e->holdColumns >= 0 && !holdGrows)
      holdSet = setIfTaken(g, &Geometry::holdColumns, e->holdColumns, s,
                           target)
                    .empty();
    return g;
  }

  /// Sets `field` of `g` (a field no result bit depends on) to `value`
  /// where the row can take it; otherwise leaves `g` and returns why not.
  static std::string setIfTaken(Geometry &g, int64_t Geometry::*field,
                                int64_t value, const RowShape &s,
                                const TargetInfo &target) {
    Geometry h = g;
    h.*field = value;
    // The rows loaded ahead are the aligned body's (checkGeometry).
    if (h.pipeline && h.layouts == RowLayouts::Vector)
      h.layouts = RowLayouts::Both;
    std::string why = checkGeometry(h, s, target);
    if (why.empty())
      g = h;
    return why;
  }

  /// Chooses or checks the geometry of `op` (a norm op or a row nest) for the
  /// row `s`.
  LogicalResult place(Operation *op, const RowShape &s,
                      const TargetInfo &target) {
    Geometry chosen = chooseRowGeometry(s, target);
    // A plain backward row of one chunk a lane on 256 lanes goes to two
    // chunks on 128 (Geometry.h twoChunkRowsPay). The table's entries for
    // it were measured on the one-chunk layout, and the two-chunk kernel
    // without them was faster than with (plans k2 / k2-holdout), so they
    // are not consulted there.
    bool twoChunks = twoChunkRowsPay(chosen, s, rows);
    if (twoChunks) {
      RowShape two = s;
      two.threads = kTwoChunkThreads;
      chosen = chooseRowGeometry(two, target);
    }
    RowGeometryAttr written = getGeometry(op);
    if (!written) {
      bool holdSet = false;
      Geometry g = twoChunks ? chosen : tuned(s, chosen, target, holdSet);
      // The partial rows in registers where they keep the wave (option
      // register-partials; Geometry.h keepPartialsInRegisters), unless the
      // partial-vector option asks for them side by side in shared memory.
      if (partialVector <= 1)
        (void)keepPartialsInRegisters(g, s, rows, target);
      // The held columns, where neither the option nor the entry says:
      // the cost model's (a forward launch of at most a block an SM).
      if (holdColumns < 0 && !holdSet)
        g.holdColumns = holdColumnsPays(g, s, rows, target) ? 1 : 0;
      // The next wave loaded ahead, where neither the option nor the
      // entry says: the cost model's for a kernel with early rows.
      if (!pipeline && !g.pipeline && earlyPipelinePays(g, s))
        (void)setIfTaken(g, &Geometry::pipeline, 1, s, target);
      // The options that change no result bit, over the table's (dx
      // kernels, and narrow-cache for forward kernels too: a forward block
      // has no row ahead and no partial rows, but a row cache of x):
      // refused where the row cannot take them, as written ones would be.
      for (auto [field, value, name] :
           {std::tuple{&Geometry::prefetch, int64_t(prefetch), "prefetch"},
            std::tuple{&Geometry::partialVector, int64_t(partialVector),
                       "partial-vector"},
            std::tuple{&Geometry::pipeline, int64_t(pipeline), "pipeline"},
            std::tuple{&Geometry::narrowCache, int64_t(narrowCache),
                       "narrow-cache"}}) {
        if (!value || g.*field == value ||
            (s.forward && field != &Geometry::narrowCache))
          continue;
        std::string why = setIfTaken(g, field, value, s, target);
        if (!why.empty())
          return op->emitError() << "norm-choose-geometry: " << name << "="
                                 << value << " is refused: " << why;
      }
      // hold-columns, forward kernels too, and 0 as a value of its own.
      if (holdColumns >= 0 && g.holdColumns != holdColumns) {
        std::string why =
            setIfTaken(g, &Geometry::holdColumns, holdColumns, s, target);
        if (!why.empty())
          return op->emitError()
                 << "norm-choose-geometry: hold-columns="
                 << static_cast<int64_t>(holdColumns) << " is refused: " << why;
      }
      setGeometry(op, toAttr(op->getContext(), g));
      return success();
    }
    Geometry g = fromAttr(written, s, target);
    std::string why = refusal(written, g, chosen, s, target);
    if (!why.empty())
      return op->emitError() << "norm-choose-geometry: " << written
                             << " is refused: " << why;
    setGeometry(op, toAttr(op->getContext(), g));
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    std::optional<TargetInfo> target = TargetInfo::get(chip);
    if (!target) {
      emitError(func.getLoc())
          << "norm-choose-geometry: unknown chip '" << chip
          << "' (known: " << TargetInfo::knownChipList() << ")";
      return signalPassFailure();
    }
    if (failed(checkOptions(func, *target)))
      return signalPassFailure();
    if (!tuningFile.empty() && !fileTable) {
      llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text =
          llvm::MemoryBuffer::getFile(tuningFile);
      if (!text) {
        emitError(func.getLoc())
            << "norm-choose-geometry: tuning-file '" << tuningFile
            << "': " << text.getError().message();
        return signalPassFailure();
      }
      llvm::Expected<std::vector<TuningEntry>> table =
          parseTuningTable((*text)->getBuffer());
      if (!table) {
        emitError(func.getLoc())
            << "norm-choose-geometry: tuning-file '" << tuningFile
            << "': " << llvm::toString(table.takeError());
        return signalPassFailure();
      }
      fileTable = std::move(*table);
    }
    GeometryKnobs knobs{threads,  maxRegisterElements, cluster,
                        batchRows, maxLanes,           trimIdleWarps,
                        twoChunkRows, registerPartials};
    WalkResult result =
        func.walk<WalkOrder::PreOrder>([&](Operation *op) -> WalkResult {
          if (std::optional<RowShape> s = rowShapeOfOp(op, knobs))
            return failed(place(op, *s, *target)) ? WalkResult::interrupt()
                                                  : WalkResult::skip();
          std::optional<Stage> stage = getStage(op);
          auto nest = dyn_cast<scf::ForOp>(op);
          if (!stage || !nest)
            return WalkResult::advance();
          if (*stage != Stage::Dx && *stage != Stage::Forward)
            return WalkResult::skip();
          FailureOr<RowNest> rn =
              analyzeRowNest(nest, *stage == Stage::Forward);
          if (failed(rn) || failed(place(op, rowShapeOf(*rn, knobs), *target)))
            return WalkResult::interrupt();
          return WalkResult::skip();
        });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
