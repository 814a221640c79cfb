//===- ReduceKernel.cpp - the fixed-order sum over the partial rows ---===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "Launch.h"

#include "norm/Conversion/NormToGPU/TargetCodegen.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::norm;

/// Clones the ops of the reduce nest's column body before its sum (the
/// sum's initial values, pure) with `m`, and returns the initial values.
static SmallVector<Value> cloneSumInits(OpBuilder &b, scf::ForOp nest,
                                        scf::ForOp sum, IRMapping &m) {
  for (Operation &op : nest.getBody()->without_terminator()) {
    if (&op == sum.getOperation())
      break;
    b.clone(op, m);
  }
  SmallVector<Value> inits;
  for (Value v : sum.getInitArgs())
    inits.push_back(m.lookupOrDefault(v));
  return inits;
}

/// The kReduceSlices slices' sums of one column added in slice order, the
/// reduce kernel's last step: `slice(q)` emits slice q's sum.
static Value addSlices(OpBuilder &b, Location loc,
                       function_ref<Value(int64_t)> slice) {
  Value total = slice(0);
  for (int64_t q = 1; q < kReduceSlices; ++q)
    total = arith::AddFOp::create(b, loc, total, slice(q));
  return total;
}

/// `for j { s = sum over w of ws[w, j]; stores }`: a block per `columns`
/// columns; its kReduceSlices slices of threads take the partial rows
/// w = slice, slice + 8, ..., then slice 0 adds the 8 slices' sums in
/// order. A fixed order, so a fixed result, whatever `columns` and
/// `unroll` are.
///
/// A thread's rows go in batches of `batches.unroll`, software-pipelined
/// `batches.depth` deep: a step issues the loads of its batch, then adds
/// the batch loaded `depth` steps before (carried through the loop; depth
/// 0, the batch it has just loaded). A batch's rows past G are loaded
/// clamped to the last row and not added (the sum stays in row order),
/// so every load's address is valid and every step issues a full batch.
void norm::buildReduceKernel(scf::ForOp nest, scf::ForOp sum, StringRef name,
                             int64_t columns, ReduceBatches batches) {
  int64_t unroll = batches.unroll, depth = batches.depth;
  OpBuilder b(nest);
  Location loc = nest.getLoc();
  Value n = nest.getUpperBound();
  Value grid = arith::CeilDivUIOp::create(b, loc, n, cIndex(b, loc, columns));
  createLaunch(
      b, loc, grid, columns * kReduceSlices, name,
      [&](OpBuilder &kb, gpu::LaunchOp launch) {
        Value tid = launch.getThreadIds().x;
        Value lane =
            arith::RemUIOp::create(kb, loc, tid, cIndex(kb, loc, columns));
        Value slice =
            arith::DivUIOp::create(kb, loc, tid, cIndex(kb, loc, columns));
        Value j = arith::AddIOp::create(
            kb, loc,
            arith::MulIOp::create(kb, loc, launch.getBlockIds().x,
                                  cIndex(kb, loc, columns)),
            lane);
        Value inRange =
            arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::ult, j, n);
        IRMapping m;
        m.map(nest.getInductionVar(), j);
        // Ops before the sum (its initial values) are pure: clone them.
        SmallVector<Value> inits = cloneSumInits(kb, nest, sum, m);

        // The sum's body in two parts: the chain (every op that needs the
        // running sums) and the row's loads (the rest), and the values the
        // loads hand the chain (`handed`), carried from one step to the
        // next.
        Block *body = sum.getBody();
        DenseSet<Operation *> chain;
        for (Operation &op : body->without_terminator())
          if (llvm::any_of(op.getOperands(), [&](Value v) {
                return llvm::is_contained(sum.getRegionIterArgs(), v) ||
                       (v.getDefiningOp() && chain.contains(v.getDefiningOp()));
              }))
            chain.insert(&op);
        SetVector<Value> handed;
        auto hand = [&](Value v) {
          if (Operation *def = v.getDefiningOp())
            if (def->getBlock() == body && !chain.contains(def))
              handed.insert(v);
        };
        for (Operation &op : body->without_terminator())
          if (chain.contains(&op))
            for (Value v : op.getOperands())
              hand(v);
        for (Value v : body->getTerminator()->getOperands())
          hand(v);

        auto ifOp = scf::IfOp::create(kb, loc, sum.getResultTypes(), inRange,
                                      /*withElseRegion=*/true);
        {
          OpBuilder tb = ifOp.getThenBodyBuilder();
          Value ub = m.lookupOrDefault(sum.getUpperBound());
          Value lastRow =
              arith::SubIOp::create(tb, loc, ub, cIndex(tb, loc, 1));
          Value stride = cIndex(tb, loc, kReduceSlices * unroll);
          // One batch's types (`unroll` x `handed`, batch-major) and zeros
          // of them.
          SmallVector<Type> batchTypes;
          for (int64_t k = 0; k < unroll; ++k)
            for (Value v : handed)
              batchTypes.push_back(v.getType());
          auto zeros = [&](OpBuilder &zb) {
            SmallVector<Value> vals;
            for (Type t : batchTypes)
              vals.push_back(arith::ConstantOp::create(
                  zb, loc, cast<TypedAttr>(zb.getZeroAttr(t))));
            return vals;
          };
          // The loads of the batch at rows w0, w0 + 8, ... (each clamped to
          // the last row): `unroll` x `handed` values, batch-major.
          auto loadBatch = [&](OpBuilder &lb, Value w0) {
            SmallVector<Value> vals;
            for (int64_t k = 0; k < unroll; ++k) {
              Value w = k ? arith::AddIOp::create(
                                lb, loc, w0, cIndex(lb, loc, k * kReduceSlices))
                          : w0;
              w = arith::MinUIOp::create(lb, loc, w, lastRow);
              IRMapping bm = m;
              bm.map(sum.getInductionVar(), w);
              for (Operation &op : body->without_terminator())
                if (!chain.contains(&op))
                  lb.clone(op, bm);
              for (Value v : handed)
                vals.push_back(bm.lookup(v));
            }
            return vals;
          };
          // `depth` batches are carried: a step issues its batch's
          // loads, then adds the batch loaded `depth` steps before, so
          // the batches between stay in flight while it waits (with one,
          // ptxas puts the adds first and the loads after them, and each
          // step waits for everything it loaded). The first steps have
          // nothing to add: they start from zeros, not from loads of
          // their own (LLVM's instcombine folds a phi of two loads into one
          // load of a phi of their addresses, which undoes the pipeline),
          // and `depth` steps more add the last batches.
          SmallVector<Value> iters(inits);
          for (int64_t d = 0; d < depth; ++d)
            llvm::append_range(iters, zeros(tb));
          int64_t numSums = inits.size();
          int64_t batchSize = unroll * handed.size();
          Value lag = cIndex(tb, loc, depth * kReduceSlices * unroll);
          Value end = arith::AddIOp::create(tb, loc, ub, lag);
          auto steps = scf::ForOp::create(
              tb, loc, slice, end, stride, iters,
              [&](OpBuilder &fb, Location, Value w0, ValueRange carried) {
                // Steps past G (the last `depth`, and every step of a
                // slice at or past G) load nothing.
                auto loads = scf::IfOp::create(
                    fb, loc, batchTypes,
                    arith::CmpIOp::create(fb, loc, arith::CmpIPredicate::ult,
                                          w0, ub),
                    /*withElseRegion=*/true);
                {
                  OpBuilder lb = loads.getThenBodyBuilder();
                  scf::YieldOp::create(lb, loc, loadBatch(lb, w0));
                  OpBuilder zb = loads.getElseBodyBuilder();
                  scf::YieldOp::create(zb, loc, zeros(zb));
                }
                ValueRange next = loads.getResults();
                // The batch added here is that of rows w0 - lag + 8 k: in
                // the first `depth` steps they wrap past every G and
                // add nothing.
                Value prev = arith::SubIOp::create(fb, loc, w0, lag);
                SmallVector<Value> acc(carried.begin(),
                                       carried.begin() + numSums);
                ValueRange batch =
                    depth ? carried.drop_front(numSums).take_front(batchSize)
                          : next;
                for (int64_t k = 0; k < unroll; ++k) {
                  Value row =
                      k ? arith::AddIOp::create(
                              fb, loc, prev, cIndex(fb, loc, k * kReduceSlices))
                        : prev;
                  Value ok = arith::CmpIOp::create(
                      fb, loc, arith::CmpIPredicate::ult, row, ub);
                  IRMapping bm = m;
                  for (auto [i, v] : llvm::enumerate(handed))
                    bm.map(v, batch[k * handed.size() + i]);
                  for (auto [arg, v] : llvm::zip(sum.getRegionIterArgs(), acc))
                    bm.map(arg, v);
                  for (Operation &op : body->without_terminator())
                    if (chain.contains(&op))
                      fb.clone(op, bm);
                  for (auto [i, v] :
                       llvm::enumerate(body->getTerminator()->getOperands()))
                    acc[i] = arith::SelectOp::create(
                        fb, loc, ok, bm.lookupOrDefault(v), acc[i]);
                }
                SmallVector<Value> yields(acc);
                if (depth) {
                  llvm::append_range(
                      yields, carried.drop_front(numSums + batchSize));
                  llvm::append_range(yields, next);
                }
                scf::YieldOp::create(fb, loc, yields);
              });
          scf::YieldOp::create(
              tb, loc, steps.getResults().take_front(numSums));
          OpBuilder eb = ifOp.getElseBodyBuilder();
          scf::YieldOp::create(eb, loc, inits);
        }
        // The 8 slices of each column meet in shared memory.
        SmallVector<Value> scratch;
        for (Type t : sum.getResultTypes()) {
          Value buf =
              addSharedBuffer(launch, {kReduceSlices, columns}, t, loc);
          scratch.push_back(buf);
        }
        for (auto [buf, v] : llvm::zip(scratch, ifOp.getResults()))
          memref::StoreOp::create(kb, loc, v, buf, ValueRange{slice, lane});
        gpu::BarrierOp::create(kb, loc);
        Value first = arith::AndIOp::create(
            kb, loc, inRange,
            arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::eq, slice,
                                  cIndex(kb, loc, 0)));
        scf::IfOp::create(kb, loc, first, [&](OpBuilder &ib, Location) {
          for (auto [res, slices] : llvm::zip(sum.getResults(), scratch)) {
            Value buf = slices;
            m.map(res, addSlices(ib, loc, [&](int64_t q) -> Value {
                    return memref::LoadOp::create(
                        ib, loc, buf, ValueRange{cIndex(ib, loc, q), lane});
                  }));
          }
          bool after = false;
          for (Operation &op : nest.getBody()->without_terminator()) {
            if (&op == sum.getOperation()) {
              after = true;
              continue;
            }
            if (after)
              ib.clone(op, m);
          }
          scf::YieldOp::create(ib, loc);
        });
      });
}

Value norm::partialRowsOf(scf::ForOp sum) {
  for (Operation &op : sum.getBody()->without_terminator())
    if (auto load = dyn_cast<memref::LoadOp>(op))
      return load.getMemRef();
  return Value();
}

namespace {
/// The reduce nest's column body cut by sum result, for finishing a column
/// from one partial row's value (forwardFinish).
struct FinishSlices {
  /// Per sum result: its load of a partial row, and the sum body's ops it
  /// is computed by (body order).
  SmallVector<memref::LoadOp> load;
  SmallVector<SmallVector<Operation *>> sumOps;
  /// Per sum result: the nest's ops after the sum that use it (body
  /// order); and the ops there that use none (pure: cloned with each).
  SmallVector<SmallVector<Operation *>> after;
  SmallVector<Operation *> independent;
};
} // namespace

/// Cuts the reduce nest's column body by sum result: each result must add
/// one load of a partial row at [sum IV, column] through pure ops, and each
/// op after the sum may use at most one result. std::nullopt otherwise.
static std::optional<FinishSlices> sliceFinish(scf::ForOp nest,
                                               scf::ForOp sum) {
  Block *body = sum.getBody();
  unsigned results = sum.getNumResults();
  FinishSlices f;
  f.load.resize(results);
  f.sumOps.resize(results);
  f.after.resize(results);
  for (unsigned i = 0; i < results; ++i) {
    llvm::SmallPtrSet<Operation *, 16> in;
    SmallVector<Value> work{body->getTerminator()->getOperand(i)};
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (!def || def->getBlock() != body || !in.insert(def).second)
        continue;
      if (auto load = dyn_cast<memref::LoadOp>(def)) {
        ValueRange idx = load.getIndices();
        if (f.load[i] || idx.size() != 2 ||
            idx[0] != sum.getInductionVar() ||
            idx[1] != nest.getInductionVar())
          return std::nullopt;
        f.load[i] = load;
        continue;
      }
      if (def->getNumRegions() || !isPure(def))
        return std::nullopt;
      llvm::append_range(work, def->getOperands());
    }
    if (!f.load[i])
      return std::nullopt;
    for (Operation &op : body->without_terminator())
      if (in.contains(&op) && &op != f.load[i].getOperation())
        f.sumOps[i].push_back(&op);
  }
  DenseMap<Value, int> uses;
  for (unsigned i = 0; i < results; ++i)
    uses[sum.getResult(i)] = i;
  bool past = false;
  for (Operation &op : nest.getBody()->without_terminator()) {
    if (&op == sum.getOperation()) {
      past = true;
      continue;
    }
    if (!past)
      continue;
    if (op.getNumRegions())
      return std::nullopt;
    int result = -1;
    for (Value o : op.getOperands()) {
      auto it = uses.find(o);
      if (it == uses.end() || it->second < 0)
        continue;
      if (result >= 0 && result != it->second)
        return std::nullopt;
      result = it->second;
    }
    for (Value r : op.getResults())
      uses[r] = result;
    if (result >= 0)
      f.after[result].push_back(&op);
    else if (isPure(&op))
      f.independent.push_back(&op);
    else
      return std::nullopt;
  }
  return f;
}

/// finishOneGroup without the barrier and the load back, where every write
/// of the partial rows in `dx` is a column's final store
/// (kFinalPartialAttr): right after each, where G = 1, the storing thread
/// does the reduce kernel's arithmetic for G = 1 on the value it stored
/// (an element a column of a vector store) and the nest's stores for that
/// column, the sum results of that partial row only. `materialize` maps
/// the values the nest uses from above at a builder's point. Returns
/// false, changing nothing, where a write is not marked or the nest's
/// column body does not cut by partial row (sliceFinish).
static bool forwardFinish(
    gpu::LaunchOp dx, scf::ForOp nest, scf::ForOp sum,
    function_ref<void(OpBuilder &, IRMapping &)> materialize) {
  std::optional<FinishSlices> f = sliceFinish(nest, sum);
  if (!f)
    return false;
  llvm::MapVector<Value, SmallVector<unsigned>> resultsOf;
  for (auto [i, load] : llvm::enumerate(f->load))
    resultsOf[load.getMemRef()].push_back(i);
  SmallVector<Operation *> finals;
  llvm::SmallPtrSet<Value, 4> stored;
  bool marked = true;
  dx.walk([&](Operation *op) {
    if (!llvm::any_of(op->getOperands(),
                      [&](Value v) { return resultsOf.contains(v); }))
      return;
    Value mem, value;
    unsigned indices = 0;
    if (auto st = dyn_cast<memref::StoreOp>(op)) {
      mem = st.getMemRef();
      value = st.getValueToStore();
      indices = st.getIndices().size();
    } else if (auto st = dyn_cast<vector::StoreOp>(op)) {
      mem = st.getBase();
      value = st.getValueToStore();
      indices = st.getIndices().size();
      if (st.getVectorType().getRank() != 1)
        mem = Value();
    }
    if (!mem || !resultsOf.contains(mem) || resultsOf.contains(value) ||
        indices != 2 || !op->hasAttr(kFinalPartialAttr)) {
      marked = false;
      return;
    }
    finals.push_back(op);
    stored.insert(mem);
  });
  if (!marked || stored.size() != resultsOf.size())
    return false;

  Location loc = nest.getLoc();
  OpBuilder top = OpBuilder::atBlockBegin(&dx.getBody().front());
  Value ws = resultsOf.front().first;
  Value single = arith::CmpIOp::create(
      top, loc, arith::CmpIPredicate::eq, memref::DimOp::create(top, loc, ws, 0),
      cIndex(top, loc, 1));
  for (Operation *st : finals) {
    OpBuilder b(st->getContext());
    b.setInsertionPointAfter(st);
    Value mem, value, column;
    if (auto s = dyn_cast<memref::StoreOp>(st)) {
      mem = s.getMemRef();
      value = s.getValueToStore();
      column = s.getIndices()[1];
    } else {
      auto v = cast<vector::StoreOp>(st);
      mem = v.getBase();
      value = v.getValueToStore();
      column = v.getIndices()[1];
    }
    auto vt = dyn_cast<VectorType>(value.getType());
    int64_t width = vt ? vt.getNumElements() : 1;
    SmallVector<unsigned> results = resultsOf.lookup(mem);
    scf::IfOp::create(b, loc, single, [&](OpBuilder &ib, Location) {
      for (int64_t e = 0; e < width; ++e) {
        IRMapping m;
        materialize(ib, m);
        m.map(nest.getInductionVar(),
              e ? arith::AddIOp::create(ib, loc, column, cIndex(ib, loc, e))
                      .getResult()
                : column);
        Value v = vt ? vector::ExtractOp::create(ib, loc, value, e).getResult()
                     : value;
        SmallVector<Value> inits = cloneSumInits(ib, nest, sum, m);
        m.map(sum.getInductionVar(), cIndex(ib, loc, 0));
        for (auto [arg, init] : llvm::zip(sum.getRegionIterArgs(), inits))
          m.map(arg, init);
        for (unsigned i : results) {
          m.map(f->load[i].getResult(), v);
          for (Operation *op : f->sumOps[i])
            ib.clone(*op, m);
          Value row0 = m.lookupOrDefault(
              sum.getBody()->getTerminator()->getOperand(i));
          Value init = inits[i];
          m.map(sum.getResult(i), addSlices(ib, loc, [&](int64_t q) {
                  return q ? init : row0;
                }));
        }
        for (Operation *op : f->independent)
          ib.clone(*op, m);
        for (unsigned i : results)
          for (Operation *op : f->after[i])
            ib.clone(*op, m);
      }
      scf::YieldOp::create(ib, loc);
    });
  }
  return true;
}

bool norm::finishOneGroup(gpu::LaunchOp dx, scf::ForOp nest, scf::ForOp sum,
                          int64_t cluster, const TargetCodegen &codegen,
                          bool finishForwarded) {
  // G is the partial rows' leading extent (the runtime sizes them so): a
  // constant other than 1 never takes this path.
  Value ws = partialRowsOf(sum);
  if (!ws)
    return false;
  auto wsType = cast<MemRefType>(ws.getType());
  if (wsType.getRank() < 1 ||
      (!wsType.isDynamicDim(0) && wsType.getDimSize(0) != 1))
    return false;

  // What the nest uses from above must be available at the end of the dx
  // launch: defined before it, or pure and recomputed there from what is.
  DominanceInfo dom(dx->getParentOfType<FunctionOpInterface>());
  DenseMap<Value, bool> availability;
  std::function<bool(Value)> available = [&](Value v) -> bool {
    if (dom.properlyDominates(v, dx))
      return true;
    auto it = availability.find(v);
    if (it != availability.end())
      return it->second;
    Operation *def = v.getDefiningOp();
    bool ok = def && def->getNumRegions() == 0 && isPure(def) &&
              llvm::all_of(def->getOperands(), available);
    availability[v] = ok;
    return ok;
  };
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(nest.getRegion(), above);
  above.insert(nest.getUpperBound());
  if (!llvm::all_of(above, available))
    return false;

  // The values the nest uses from above, at a builder's point in the
  // launch: those defined before it as they are, the others recomputed.
  auto materializeAbove = [&](OpBuilder &ib, IRMapping &m) {
    std::function<Value(Value)> materialize = [&](Value v) -> Value {
      if (dom.properlyDominates(v, dx))
        return v;
      if (Value got = m.lookupOrNull(v))
        return got;
      Operation *def = v.getDefiningOp();
      for (Value o : def->getOperands())
        materialize(o);
      ib.clone(*def, m);
      return m.lookup(v);
    };
    for (Value v : above)
      m.map(v, materialize(v));
  };
  if (finishForwarded && forwardFinish(dx, nest, sum, materializeAbove))
    return true;

  Location loc = nest.getLoc();
  Block &body = dx.getBody().back();
  OpBuilder b = OpBuilder::atBlockTerminator(&body);
  Value g = memref::DimOp::create(b, loc, ws, 0);
  Value single = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, g,
                                       cIndex(b, loc, 1));
  scf::IfOp::create(b, loc, single, [&](OpBuilder &ib, Location) {
    // Every block's partial row is written: the blocks of the one program
    // (a cluster, or one block) meet, and read each other's columns.
    if (cluster > 1)
      codegen.clusterBarrier(ib, loc);
    else
      gpu::BarrierOp::create(ib, loc);
    IRMapping m;
    materializeAbove(ib, m);
    // Thread t of the T threads of the launch takes columns t, t + T, ...
    // (the column loop runs from 0 in steps of 1, checkColumnLoop),
    // `columns` of them a step: their loads go out together, where one
    // column a step waited for each load in turn (N / T loads in a row: 40
    // at N = 5120 on one block of 128 threads). With N and the block
    // known, the thread's whole share of the row in one step where
    // kFinishLoads allows (2 steps of 32 there; 8 columns a step took 5,
    // each an L2 round trip). A column past N loads column N - 1 and
    // stores nothing.
    int64_t columns = kFinishColumns;
    std::optional<int64_t> block = getConstantIntValue(dx.getBlockSizeX());
    std::optional<int64_t> width = getConstantIntValue(nest.getUpperBound());
    if (block && width && *block > 0) {
      int64_t share =
          llvm::divideCeil(*width, *block * std::max<int64_t>(cluster, 1));
      int64_t most = std::max<int64_t>(
          1, kFinishLoads / std::max<int64_t>(1, sum.getNumResults()));
      columns = std::clamp<int64_t>(share, 1, most);
    }
    // At G = 1 the grid is the one program's blocks: T is a constant where
    // the block is, and the step's columns sit at constant offsets from
    // one address (a register each otherwise: the dx kernel of RMSNorm
    // bf16 5120 took 242 registers for 32 columns a step, 128 without).
    Value threads =
        block ? cIndex(ib, loc, *block * std::max<int64_t>(cluster, 1))
              : arith::MulIOp::create(ib, loc, dx.getBlockSize().x,
                                      dx.getGridSize().x);
    Value t = arith::AddIOp::create(
        ib, loc,
        arith::MulIOp::create(ib, loc, dx.getBlockIds().x, dx.getBlockSize().x),
        dx.getThreadIds().x);
    Value n = m.lookup(nest.getUpperBound());
    Value last = arith::SubIOp::create(ib, loc, n, cIndex(ib, loc, 1));
    scf::ForOp::create(
        ib, loc, t, n,
        arith::MulIOp::create(ib, loc, threads, cIndex(ib, loc, columns)),
        ValueRange{}, [&](OpBuilder &fb, Location, Value j0, ValueRange) {
          // The reduce kernel's arithmetic at G = 1 (buildReduceKernel):
          // slice 0 adds row 0 to the initial values, slices 1 to 7 have
          // no row and keep them, and the slices' sums are added in
          // order; then the nest's stores, for the columns below N.
          Block *nestBody = nest.getBody();
          SmallVector<IRMapping> maps(columns, m);
          SmallVector<Value> inRange;
          for (int64_t u = 0; u < columns; ++u) {
            IRMapping &cm = maps[u];
            Value j = u ? arith::AddIOp::create(
                              fb, loc, j0,
                              arith::MulIOp::create(fb, loc, threads,
                                                    cIndex(fb, loc, u)))
                        : j0;
            inRange.push_back(arith::CmpIOp::create(
                fb, loc, arith::CmpIPredicate::ult, j, n));
            cm.map(nest.getInductionVar(),
                   arith::MinUIOp::create(fb, loc, j, last));
            SmallVector<Value> inits = cloneSumInits(fb, nest, sum, cm);
            cm.map(sum.getInductionVar(), cIndex(fb, loc, 0));
            for (auto [arg, v] : llvm::zip(sum.getRegionIterArgs(), inits))
              cm.map(arg, v);
            for (Operation &op : sum.getBody()->without_terminator())
              fb.clone(op, cm);
            for (auto [i, res] : llvm::enumerate(sum.getResults())) {
              Value row0 = cm.lookupOrDefault(
                  sum.getBody()->getTerminator()->getOperand(i));
              Value init = inits[i];
              cm.map(res, addSlices(fb, loc, [&](int64_t q) {
                       return q ? init : row0;
                     }));
            }
          }
          for (int64_t u = 0; u < columns; ++u)
            scf::IfOp::create(fb, loc, inRange[u], [&](OpBuilder &sb, Location) {
              bool after = false;
              for (Operation &op : nestBody->without_terminator()) {
                if (after)
                  sb.clone(op, maps[u]);
                after = after || &op == sum.getOperation();
              }
              scf::YieldOp::create(sb, loc);
            });
          scf::YieldOp::create(fb, loc);
        });
    scf::YieldOp::create(ib, loc);
  });
  return true;
}
