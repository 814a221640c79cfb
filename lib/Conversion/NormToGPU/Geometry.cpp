//===- Geometry.cpp - how a row nest is spread over a block ---------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Conversion/NormToGPU/Geometry.h"
#include "norm/Conversion/NormToGPU/TargetInfo.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cassert>

using namespace mlir::norm;

/// Lanes, rows and chunking; `wholeBlockRows` gives every row the block.
static Geometry layOut(const RowShape &s, const TargetInfo &target,
                       bool wholeBlockRows) {
  Geometry g;
  g.threads = s.threads;
  g.warp = target.warpSize;
  g.vectorBytes = target.maxVectorBytes;
  g.vec = std::max<int64_t>(1, target.maxVectorBytes / s.elementBytes);
  g.n = s.n;
  g.lanes = s.threads;
  g.rows = 1;
  if (!s.n) {
    g.vec = 1; // no whole chunks without a static N: coalesced elements
    return g;
  }
  int64_t chunks = llvm::divideCeil(*s.n, g.vec);
  int64_t lanes = std::min<int64_t>(s.threads, llvm::PowerOf2Ceil(chunks));
  if (wholeBlockRows)
    lanes = s.threads;
  int64_t k = llvm::divideCeil(chunks, lanes);
  if (k * g.vec > s.maxRegisterElements)
    return g; // looped regime: whole block per row, re-read from L2
  g.registers = true;
  g.lanes = lanes;
  g.rows = s.threads / lanes;
  g.chunksPerLane = k;
  return g;
}

int64_t mlir::norm::partialsSharedBytes(const Geometry &g,
                                        int64_t partialRows) {
  if (!g.n)
    return 0;
  int64_t slots =
      g.rows > 1 ? g.rows * *g.n : g.chunksPerLane * g.vec * g.lanes;
  return partialRows * slots * int64_t(sizeof(float));
}

Geometry mlir::norm::chooseRowGeometry(const RowShape &s,
                                       const TargetInfo &target) {
  if (s.threads == 0) {
    // The candidate with the best use of its chunk slots; ties go to the
    // earlier one.
    std::optional<Geometry> best;
    // (Every candidate is within every chip's block limit: the choice
    // must not depend on the chip.)
    for (int64_t t : kThreadCandidates) {
      RowShape c = s;
      c.threads = t;
      Geometry g = chooseRowGeometry(c, target);
      if (!best || g.slotUse() > best->slotUse())
        best = g;
    }
    assert(best && "no thread count fits the chip");
    if (!best->registers) {
      // The looped regime whatever the candidate: the largest block.
      RowShape c = s;
      c.threads = kLoopedThreads;
      return chooseRowGeometry(c, target);
    }
    return *best;
  }
  // locked: the block holds the group's lock for one row at a time.
  Geometry g = layOut(s, target, s.partials == PartialSums::Locked);
  bool deterministic =
      s.partials == PartialSums::Deterministic && s.partialRows > 0;
  // Several rows in flight combine their partial rows in shared memory; if
  // that does not fit the budget, the block takes one row at a time.
  if (deterministic && g.registers && g.rows > 1 &&
      partialsSharedBytes(g, s.partialRows) > kPartialsSharedBytes)
    g = layOut(s, target, /*wholeBlockRows=*/true);

  if (!deterministic)
    g.partials = PartialsHome::None;
  else if (!g.registers)
    g.partials = PartialsHome::Global;
  else if (g.rows == 1 &&
           partialsSharedBytes(g, s.partialRows) <= kPartialsSharedBytes)
    // One row in flight: registers are better spent on the row cache, so
    // more blocks fit on an SM.
    g.partials = PartialsHome::Shared;
  else
    g.partials = PartialsHome::Registers;

  // Layouts (a function of N and the element size only, like the rest).
  if (g.registers && g.n && g.vec > 1) {
    if ((*g.n * s.elementBytes) % g.vectorBytes != 0)
      g.layouts = RowLayouts::Interleaved;
    else if (g.chunksPerLane * g.vec > kBatchedLoadsShare)
      g.layouts = RowLayouts::Both;
  }

  g.sharedBytes = 0;
  if (g.partials == PartialsHome::Shared ||
      (g.partials == PartialsHome::Registers && g.rows > 1))
    g.sharedBytes += partialsSharedBytes(g, s.partialRows);
  if (g.lanes > g.warp) // two cross-warp scratch buffers, a slot per warp
    g.sharedBytes += 2 * (g.threads / g.warp) * int64_t(sizeof(float));
  assert(g.sharedBytes <= kGuaranteedStaticSharedBytes &&
         "a row kernel exceeds the static shared memory of every chip");
  return g;
}
