//===- Geometry.cpp - how a row nest is spread over a block ---------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Conversion/NormToGPU/Geometry.h"
#include "Tuning.h"
#include "norm/Conversion/NormToGPU/TargetInfo.h"
#include "norm/Support/Groups.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cassert>
#include <string>
#include <type_traits>

using namespace mlir::norm;

/// A block of `s.threads` on one row, before any chunking: the access
/// width and the warp from the target.
static Geometry blockPerRow(const RowShape &s, const TargetInfo &target) {
  Geometry g;
  g.threads = g.lanes = s.threads;
  g.rows = 1;
  g.warp = target.warpSize;
  g.vectorBytes = target.maxVectorBytes;
  g.vec = std::max<int64_t>(1, target.maxVectorBytes / s.elementBytes);
  g.n = s.n;
  return g;
}

/// The lanes of a forward row of `chunks` chunks in a block of `threads`
/// (kForwardShareChunks): the power of two with at most that many chunks a
/// lane, and whose one access covers at least kForwardRunBytes of a row,
/// whose slots are best used, ties to fewer lanes; 0 when none. Never more
/// lanes than `maxLanes` (one chunk a lane). `accessBytes`: the bytes of a
/// lane's access (a 16-byte chunk, or one element in the interleaved
/// layout).
static int64_t forwardLanes(int64_t chunks, int64_t maxLanes,
                            int64_t accessBytes) {
  int64_t best = 0;
  double bestUse = 0;
  for (int64_t l = 1; l <= maxLanes; l *= 2) {
    int64_t k = llvm::divideCeil(chunks, l);
    if (k > kForwardShareChunks || l * accessBytes < kForwardRunBytes)
      continue;
    double use = double(chunks) / double(k * l);
    if (use > bestUse) {
      best = l;
      bestUse = use;
    }
  }
  return best;
}

/// A backward row of more than a warp at one chunk a lane keeps only the
/// warps its chunks need: L = its chunks rounded up to whole warps, not the
/// power of two the block was chosen with (T shrinks to S L). Those
/// warps had no chunk of the row, but ran its every per-row step: the
/// statistics' loads, the in-row shuffles of zeros, both barriers and the
/// cross-warp step (LayerNorm bf16 N = 768: 128 lanes for 96 chunks, one
/// warp in four idle; ncu found that kernel bound by issue, not bytes).
/// Nothing else moves: S and the rows of each program are the same,
/// so every partial sum is added in the same order (samePartialOrder);
/// only a row's in-row sums lose the idle warps' terms, which were +0.
/// The forward keeps its power of two (forwardLanes already picks the
/// lanes its chunks use best). Only at one chunk a lane (K = 1): measured
/// on the H100 against the power of two (plans trim and trim-holdout,
/// both ops, 16-bit and f32, with and without dresidual), K = 1 1.014x
/// and 1.026x held out (LayerNorm 16-bit with dresidual up to 1.2x), K = 2
/// 0.998x, K = 3 0.989x (0.95x at LayerNorm bf16 2176-2304, 96 lanes).
/// Only rows that can be 16-byte aligned (`alignable`): rows that never
/// are (the interleaved layout's element accesses) measured 0.988x
/// trimmed (plan trim-few, N = 330-1500 at M = 1-2048; LayerNorm bf16
/// 512 x 1100 0.86x), where aligned rows gained at every M timed.
static void trimIdleWarps(Geometry &g, int64_t chunks, bool alignable) {
  if (!g.registers || g.lanes <= g.warp || g.cluster > 1 ||
      g.chunksPerLane != 1 || !alignable)
    return;
  int64_t need = llvm::alignTo(chunks, g.warp);
  if (need >= g.lanes)
    return;
  // More than half the power of two (its chunks needed more lanes than
  // half of it): Geometry::chosenLanes recovers it.
  assert(int64_t(llvm::PowerOf2Ceil(need)) == g.lanes &&
         "trimmed lanes lost the power of two the block was chosen by");
  g.lanes = need;
  g.threads = g.rows * need;
}

/// Lanes, rows and chunking; `wholeBlockRows` gives every row the block.
static Geometry layOut(const RowShape &s, const TargetInfo &target,
                       bool wholeBlockRows) {
  Geometry g = blockPerRow(s, target);
  if (!s.n) {
    g.vec = 1; // no whole chunks without a static N: coalesced elements
    return g;
  }
  int64_t chunks = llvm::divideCeil(*s.n, g.vec);
  int64_t lanes = std::min<int64_t>(s.threads, llvm::PowerOf2Ceil(chunks));
  if (s.maxLanes)
    lanes = std::min(lanes, s.maxLanes);
  else if (s.forward)
    if (int64_t l = forwardLanes(
            chunks, lanes,
            (*s.n * s.elementBytes) % g.vectorBytes ? s.elementBytes
                                                    : g.vectorBytes))
      lanes = l;
  if (wholeBlockRows)
    lanes = s.threads;
  int64_t k = llvm::divideCeil(chunks, lanes);
  if (k * g.vec > s.maxRegisterElements)
    return g; // looped regime: whole block per row, re-read from L2
  g.registers = true;
  g.lanes = lanes;
  g.rows = s.threads / lanes;
  g.chunksPerLane = k;
  // (Not where the block takes one row whatever its chunks: a locked
  // row, or partial rows past the shared budget.)
  if (!s.forward && s.trimIdleWarps && !wholeBlockRows)
    trimIdleWarps(g, chunks, (*s.n * s.elementBytes) % g.vectorBytes == 0);
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

int64_t mlir::norm::registerEstimate(const Geometry &g, int64_t partialRows) {
  if (!g.registers)
    return 0;
  int64_t share = g.chunksPerLane * g.vec;
  int64_t arrays = 2 + (g.partials == PartialsHome::Registers ? partialRows : 0);
  // Above kBatchedLoadsShare a lane's loads are all issued at once: one
  // more array's worth is live while they land.
  if (share > kBatchedLoadsShare)
    ++arrays;
  return arrays * share + kRegisterOverhead;
}

int64_t mlir::norm::heldForwardRegisters(const Geometry &g,
                                         const RowShape &s) {
  if (!g.registers)
    return 0;
  int64_t share = g.chunksPerLane * g.vec;
  // The held chunks stay in the loaded type, 32-bit words of them.
  int64_t words = llvm::divideCeil(share * s.columnVectors * s.elementBytes,
                                   int64_t(4));
  return share + words + kRegisterOverhead;
}

/// The last M of the tuning table's row bucket that holds `rows`; none past
/// the last edge (a bucket without end).
static std::optional<int64_t> bucketLastRow(int64_t rows) {
  const int64_t *end = llvm::find_if(
      kTuningRowEdges, [&](int64_t edge) { return rows <= edge; });
  if (end == std::end(kTuningRowEdges))
    return std::nullopt;
  return *end;
}

bool mlir::norm::holdColumnsPays(const Geometry &g, const RowShape &s,
                                  int64_t rows, const TargetInfo &target) {
  if (!s.forward || rows <= 0 || s.columnVectors == 0 || !g.registers ||
      !g.n || g.vec == 1 || g.layouts == RowLayouts::Interleaved)
    return false;
  // The kernel serves every M of the hint's bucket (the tuning table's M
  // ranges; norm_mlir.torch gives a bucket's first M): judged at its last.
  std::optional<int64_t> end = bucketLastRow(rows);
  if (!end)
    return false;
  int64_t blocks = llvm::divideCeil(*end, g.rows) * g.cluster;
  // One wave: every block resident at once with the held registers.
  int64_t regs = std::min(heldForwardRegisters(g, s), maxRegisters(g));
  int64_t perSM = std::min(kThreadsPerSM / g.threads,
                           kRegistersPerSM / (g.threads * regs));
  return blocks <= target.sms * std::max<int64_t>(perSM, 1);
}

bool mlir::norm::restrictPays(int64_t threads, int64_t rowsPerBlock,
                              int64_t cluster, int64_t rows,
                              const TargetInfo &target) {
  return restrictBlocksPerSM(threads, rowsPerBlock, cluster, rows, target) >
         0;
}

int64_t mlir::norm::restrictBlocksPerSM(int64_t threads, int64_t rowsPerBlock,
                                        int64_t cluster, int64_t rows,
                                        const TargetInfo &target) {
  if (rows <= 0 || threads <= 0 || rowsPerBlock <= 0 || target.sms <= 0)
    return 0;
  std::optional<int64_t> end = bucketLastRow(rows);
  if (!end)
    return 0;
  int64_t blocks =
      llvm::divideCeil(*end, rowsPerBlock) * std::max<int64_t>(cluster, 1);
  if (blocks > target.sms * std::max<int64_t>(kThreadsPerSM / threads, 1))
    return 0;
  return llvm::divideCeil(blocks, target.sms);
}

bool mlir::norm::earlyPipelinePays(const Geometry &g, const RowShape &s) {
  return !s.forward && s.earlyRows > 0 && g.registers && g.cluster <= 1 &&
         g.chunksPerLane == 1;
}

bool mlir::norm::twoChunkRowsPay(const Geometry &g, const RowShape &s,
                                  int64_t rows) {
  if (!s.twoChunkRows || s.forward || s.earlyRows > 0 || !s.n ||
      s.partials != PartialSums::Deterministic || s.partialRows <= 0 ||
      s.threads != 0 || s.cluster > 1 || s.maxLanes != 0 ||
      rows <= kTuningRowEdges[2])
    return false;
  if (!g.registers || g.cluster > 1 || g.rows != 1 || g.chunksPerLane != 1 ||
      g.chosenLanes() != 2 * kTwoChunkThreads)
    return false;
  return (*s.n * s.elementBytes) % g.vectorBytes == 0;
}

static void sizeSharedMemory(Geometry &g, const RowShape &s);

bool mlir::norm::keepPartialsInRegisters(Geometry &g, const RowShape &s,
                                          int64_t rows,
                                          const TargetInfo &target) {
  if (!s.registerPartials || s.forward || s.earlyRows > 0 || !s.n ||
      target.sms <= 0)
    return false;
  if (!g.registers || g.partials != PartialsHome::Shared || g.rows != 1 ||
      g.cluster > 1 || g.dynamicSharedBytes > 0 || g.threads <= 0)
    return false;
  // Measured (H100, plans regpart / regpart-holdout): at two chunks a lane
  // up to a share of kBatchedLoadsShare, 1.01-1.18x (LayerNorm 16-bit N =
  // 1280-2048 and f32 768-1536 most); at one chunk a lane (no ring)
  // 0.95-1.04x, LayerNorm 16-bit 2048 at 1024 rows the loss; above that
  // share (RMSNorm f32 2304-2560, 20 a lane) 0.98-1.00x.
  // A tuned partial_vector was measured with the sums in shared memory:
  // the entry stands.
  int64_t share = g.chunksPerLane * g.vec;
  if (g.chunksPerLane < 2 || share > kBatchedLoadsShare || g.partialVector > 1)
    return false;
  Geometry r = g;
  r.partials = PartialsHome::Registers;
  // With the ring's registers (norm-map-to-gpu gives a row of two chunks a
  // lane the ring where they fit, ringFit).
  int64_t regs = registerEstimate(r, s.partialRows) + kRingRegisters;
  int64_t need = std::max<int64_t>(
      1, llvm::divideCeil(dxLargestPrograms(*s.n, rows), target.sms));
  if (need * g.threads > kThreadsPerSM ||
      regs > std::min<int64_t>(maxRegisters(g),
                               kRegistersPerSM / (need * g.threads)))
    return false;
  sizeSharedMemory(r, s);
  g = r;
  return true;
}

int64_t mlir::norm::dxLargestPrograms(int64_t n, int64_t rows) {
  std::optional<int64_t> end =
      rows > 0 ? bucketLastRow(rows) : std::optional<int64_t>();
  return end ? defaultGroups(*end, n) : groupCap(n);
}

DxEarlyRows mlir::norm::dxEarlyRows(const Geometry &g, int64_t partialRows,
                                    int64_t earlyRows, int64_t programs,
                                    const TargetInfo &target) {
  if (earlyRows <= 0)
    return {};
  if (!g.registers || g.cluster > 1 || g.threads <= 0)
    return {/*early=*/false, 0};
  int64_t share = g.chunksPerLane * g.vec;
  int64_t late = registerEstimate(g, partialRows) + (g.pipeline ? share : 0);
  int64_t early = late + earlyRows * share;
  int64_t need =
      target.sms > 0 ? llvm::divideCeil(std::max<int64_t>(programs, 0),
                                        target.sms)
                     : 0;
  if (need >= 2 && need * g.threads <= kThreadsPerSM) {
    int64_t budget = kRegistersPerSM / (need * g.threads);
    if (early <= budget)
      return {/*early=*/true, need};
    if (late <= budget)
      return {/*early=*/false, need};
  }
  return {/*early=*/late <= maxRegisters(g), 0};
}

RingFit mlir::norm::ringFit(const Geometry &g, int64_t partialRows,
                            int64_t programs, const TargetInfo &target) {
  if (!g.registers || g.cluster > 1 || g.threads <= 0 || target.sms <= 0)
    return {};
  // One row a block at one chunk a lane: a thread has one chunk of each
  // memref in flight a row, and the ring's per-row addressing and wait
  // cost what it hides (LayerNorm 16-bit N = 2048, f32 1024: 0.75-0.96x
  // on the H200 and H100).
  if (g.rows == 1 && g.chunksPerLane == 1)
    return {};
  int64_t need =
      llvm::divideCeil(std::max<int64_t>(programs, 0), target.sms);
  auto perSM = [&](int64_t regs) {
    return std::min(kThreadsPerSM, kRegistersPerSM / regs) / g.threads;
  };
  int64_t estimate = registerEstimate(g, partialRows);
  int64_t with = estimate + kRingRegisters;
  if (perSM(with) < std::min(perSM(estimate), std::max<int64_t>(need, 1)))
    return {};
  bool resident = need >= 2 && need * g.threads <= kThreadsPerSM &&
                  with <= kRegistersPerSM / (need * g.threads);
  // The blocks an SM the ring's shared memory must leave room for.
  int64_t blocks =
      std::max<int64_t>(1, need > 0 ? std::min(perSM(with), need) : perSM(with));
  int64_t own = g.sharedBytes + kRingStaticSlack +
                llvm::alignTo(g.dynamicSharedBytes, g.vectorBytes);
  int64_t block = std::min(target.maxOptInSharedBytes,
                           target.sharedBytesPerSM / blocks -
                               kSharedBytesReservedPerBlock);
  return {/*ring=*/true, resident ? need : 0,
          std::max<int64_t>(0, block - own)};
}

int64_t mlir::norm::dxWaveBlocks(const Geometry &g, int64_t partialRows,
                                 int64_t programs, const TargetInfo &target) {
  if (!g.registers || g.cluster > 1 || g.threads <= 0 || target.sms <= 0)
    return 0;
  int64_t need =
      llvm::divideCeil(std::max<int64_t>(programs, 0), target.sms);
  if (need < 2 || need * g.threads > kThreadsPerSM)
    return 0;
  if (registerEstimate(g, partialRows) > kRegistersPerSM / (need * g.threads))
    return 0;
  int64_t shared = g.sharedBytes +
                   llvm::alignTo(g.dynamicSharedBytes, g.vectorBytes) +
                   kSharedBytesReservedPerBlock;
  if (target.sharedBytesPerSM > 0 && need * shared > target.sharedBytesPerSM)
    return 0;
  return need;
}

bool mlir::norm::tuningTransfers(const Geometry &tuned, const Geometry &g) {
  return tuned.registers == g.registers &&
         g.chosenSlotUse() >= tuned.chosenSlotUse() - kTunedSlotLoss;
}

bool mlir::norm::samePartialOrder(const Geometry &a, const Geometry &b) {
  if (a.rows == 1 && b.rows == 1)
    return true;
  // Several rows in flight, partial rows in registers: row slot s of a
  // block adds the rows s, s + S, ... of its program, each lane its own
  // columns, and the S slots meet column by column in slot order
  // (RowPartialsRegisters): the order is S's alone, whatever the lanes
  // and threads that carry it.
  if (a.registers && b.registers && a.cluster == 1 && b.cluster == 1 &&
      a.partials == PartialsHome::Registers &&
      b.partials == PartialsHome::Registers)
    return a.rows == b.rows;
  return a.threads == b.threads && a.lanes == b.lanes && a.rows == b.rows &&
         a.vec == b.vec && a.registers == b.registers &&
         a.chunksPerLane == b.chunksPerLane && a.partials == b.partials &&
         a.cluster == b.cluster;
}

/// The geometry of a row split over the blocks of a cluster, each of
/// `s.threads` threads with K chunks a lane: every block is a
/// register-regime block of one row at a time over its slice of K L V
/// columns, and the cluster has as many blocks as the slices need.
static Geometry layOutSlice(const RowShape &s, const TargetInfo &target,
                            int64_t k) {
  Geometry g = blockPerRow(s, target);
  g.chunksPerLane = k;
  g.sliceColumns = k * g.lanes * g.vec;
  g.cluster = llvm::divideCeil(*s.n, g.sliceColumns);
  g.registers = k * g.vec <= s.maxRegisterElements;
  return g;
}

/// Where the partial sums of a one-row-at-a-time register geometry live,
/// its layouts and its shared memory (the tail of chooseRowGeometry).
static void placePartials(Geometry &g, const RowShape &s);

int64_t mlir::norm::maxRegisters(const Geometry &g) {
  return std::min<int64_t>(255, kRegistersPerSM / g.threads);
}

/// Blocks of g.threads an SM keeps resident at `regs` registers a thread.
static int64_t residentBlocks(const Geometry &g, int64_t regs) {
  return std::min<int64_t>(kRegistersPerSM / (std::max<int64_t>(regs, 1) *
                                               g.threads),
                           kThreadsPerSM / g.threads);
}

/// Threads an SM keeps resident for a split geometry, from its register
/// estimate: ptxas gives a 512-thread block up to its maxRegisters (128)
/// whatever it needs (102-119 measured where 64-96 were estimated), so
/// one such block per SM.
static int64_t residentThreads(const Geometry &g, int64_t partialRows) {
  int64_t regs = g.threads >= 512
                     ? maxRegisters(g)
                     : std::max<int64_t>(64, registerEstimate(g, partialRows));
  return residentBlocks(g, regs) * g.threads;
}

double mlir::norm::clusterScore(const Geometry &g, int64_t partialRows) {
  double inFlight = double(residentThreads(g, partialRows)) *
                    double(g.chunksPerLane * g.vec);
  double busy = std::min<double>(
      1.0, inFlight / double(kClusterResidentThreads * kClusterShare));
  return g.slotUse() * busy;
}

/// The split geometry for `s`: over the thread candidates and lane shares
/// of at most kClusterShare (or the option's cluster size), the one with
/// the best clusterScore within the chip's largest cluster; ties to fewer
/// blocks, then to the earlier candidate.
static std::optional<Geometry> chooseCluster(const RowShape &s,
                                             const TargetInfo &target) {
  std::optional<Geometry> best, looped;
  double bestScore = -1;
  int64_t vec = blockPerRow(s, target).vec;
  int64_t chunks = llvm::divideCeil(*s.n, vec);
  for (int64_t t : kThreadCandidates) {
    RowShape c = s;
    c.threads = s.threads ? s.threads : t;
    llvm::SmallVector<int64_t, 4> shares;
    if (s.cluster > 1)
      shares.push_back(llvm::divideCeil(chunks, s.cluster * c.threads));
    else
      for (int64_t k = 1; k * vec <= kClusterShare; ++k)
        shares.push_back(k);
    for (int64_t k : shares) {
      Geometry g = layOutSlice(c, target, k);
      if (!g.registers && s.cluster > 1 && g.cluster == s.cluster &&
          !looped) {
        // Forced, and too wide for registers with these threads: the
        // looped slice, in the looped regime's block unless the threads
        // are given too; taken only if no thread count holds the slice in
        // registers.
        if (!s.threads) {
          c.threads = kLoopedThreads;
          g = layOutSlice(c, target,
                          llvm::divideCeil(chunks, s.cluster * c.threads));
          g.registers = false;
        }
        placePartials(g, c);
        looped = g;
        continue;
      }
      if (!g.registers || g.cluster < 2 || g.cluster > target.maxClusterBlocks)
        continue;
      placePartials(g, c);
      if (s.cluster <= 1 &&
          registerEstimate(g, s.partialRows) > kClusterRegisterLimit)
        continue;
      double score = clusterScore(g, s.partialRows);
      if (!best || score > bestScore ||
          (score == bestScore && g.cluster < best->cluster)) {
        best = g;
        bestScore = score;
      }
    }
  }
  // Where no slice holds the row in registers (RMSNorm bf16 N = 262144
  // needs 32768 columns a block of 8) the cost model keeps one looped block
  // per row; a looped split is taken only when forced (above: the option;
  // ChooseGeometry keeps tuning entries from it) and no thread count holds
  // the slice in registers. It is the likely remedy for few wide rows (one block walked
  // 262144 columns in a latency-bound loop: RMSNorm 1 x 262144 took 116 us
  // on the H200 for 1.5 MB, LayerNorm 400), but it was written when no GPU
  // was lent: unmeasured, so not yet a default (docs/NOTES.md).
  return best ? best : looped;
}

Geometry mlir::norm::chooseRowGeometry(const RowShape &s,
                                       const TargetInfo &target) {
  // A row split over a cluster: forced by the option, or chosen (threads and
  // cluster both left to the geometry) where one block per row would loop
  // over the row or, by the estimate, spill more than kClusterSpillArrays
  // of its arrays. Only ever where the unsplit geometry takes one row at a
  // time (Geometry.h).
  // A forward row only when forced (the option, or a tuning entry: the
  // split pays where rows are too few to fill the chip, which the row
  // shape does not know).
  bool mayCluster = s.splittable && s.n && target.maxClusterBlocks > 1 &&
                    s.cluster != 1 &&
                    (s.cluster > 1 || (s.threads == 0 && !s.forward));
  if (mayCluster) {
    RowShape unsplit = s;
    unsplit.cluster = 1;
    Geometry g = chooseRowGeometry(unsplit, target);
    bool wanted = s.cluster > 1 || !g.registers ||
                  registerEstimate(g, s.partialRows) - maxRegisters(g) >
                      kClusterSpillArrays * g.chunksPerLane * g.vec;
    // (A forward block of several rows has no partial-row order to keep.)
    if ((g.rows == 1 || s.forward) && wanted)
      if (std::optional<Geometry> split = chooseCluster(s, target))
        return *split;
    return g;
  }
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
      if (!best || g.chosenSlotUse() > best->chosenSlotUse())
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

  placePartials(g, s);
  return g;
}

/// Whether one row's partial rows past the static budget are worth the
/// dynamic shared memory (a one-row, unsplit geometry): when the kernel
/// then keeps more blocks resident an SM, or when in registers they would
/// spill (registerEstimate more than one array of the lane's share over
/// maxRegisters: below that ptxas still fits them, RMSNorm bf16 16384
/// estimated at 288 and given 246). In shared memory a lane keeps its two
/// row caches and ptxas gives it about 2 x share + kRegisterOverhead
/// registers (measured: 105-128 for shares of 24-48, LayerNorm bf16
/// 6144-10000 and RMSNorm 12288, where registerEstimate's batched-load
/// array does not show). Where neither holds, the partial rows'
/// shared-memory traffic costs more than their registers did (RMSNorm bf16
/// 16384: 72% of copy in 246 registers, 65% in shared memory at 181, one
/// block an SM either way).
static bool dynamicPartialsPay(const Geometry &g, int64_t partialRows) {
  Geometry inRegisters = g;
  inRegisters.partials = PartialsHome::Registers;
  int64_t regs = registerEstimate(inRegisters, partialRows);
  int64_t share = g.chunksPerLane * g.vec;
  if (regs - maxRegisters(g) > share)
    return true;
  int64_t shared = 2 * share + kRegisterOverhead;
  return residentBlocks(g, shared) >
         residentBlocks(g, std::min(regs, maxRegisters(g)));
}

/// The static and dynamic shared memory of a complete geometry: the
/// partial rows where they live there, the cross-warp scratch, the cluster's
/// slots.
static void sizeSharedMemory(Geometry &g, const RowShape &s) {
  g.sharedBytes = 0;
  g.dynamicSharedBytes = 0;
  if (g.partials == PartialsHome::Shared &&
      partialsSharedBytes(g, s.partialRows) > kPartialsSharedBytes)
    g.dynamicSharedBytes = partialsSharedBytes(g, s.partialRows);
  else if (g.partials == PartialsHome::Shared ||
           (g.partials == PartialsHome::Registers && g.rows > 1))
    g.sharedBytes += partialsSharedBytes(g, s.partialRows);
  if (g.lanes > g.warp) // cross-warp scratch: two sums a row, a slot a warp
    g.sharedBytes +=
        2 * g.batch * (g.threads / g.warp) * int64_t(sizeof(float));
  if (g.cluster > 1) // the in-row sums' receive slots and mbarriers, two
                     // rows' worth
    g.sharedBytes += 2 * g.cluster * kClusterSumSlots * int64_t(sizeof(float)) +
                     2 * int64_t(sizeof(uint64_t));
}

static void placePartials(Geometry &g, const RowShape &s) {
  bool deterministic =
      s.partials == PartialSums::Deterministic && s.partialRows > 0;
  int64_t bytes = deterministic && g.registers
                      ? partialsSharedBytes(g, s.partialRows)
                      : 0;
  if (!deterministic)
    g.partials = PartialsHome::None;
  else if (!g.registers)
    g.partials = PartialsHome::Global;
  else if (g.rows == 1 && bytes <= kPartialsSharedBytes)
    // One row in flight: registers are better spent on the row cache, so
    // more blocks fit on an SM.
    g.partials = PartialsHome::Shared;
  else if (g.rows == 1 && g.cluster == 1 &&
           bytes <= kDynamicPartialsSharedBytes &&
           dynamicPartialsPay(g, s.partialRows))
    // Past the static budget, in dynamic shared memory where that pays
    // (the order of the sums is the same wherever they live).
    g.partials = PartialsHome::Shared;
  else
    g.partials = PartialsHome::Registers;

  if (g.partials == PartialsHome::Global && g.cluster > 1)
    g.batch = 1; // the cluster's sums go one row at a time
  else if (g.partials == PartialsHome::Global)
    g.batch = s.batchRows ? s.batchRows
                          : std::min<int64_t>(kMaxBatchRows,
                                              llvm::divideCeil(
                                                  8 * s.partialRows,
                                                  kLoopedPartialBytes));

  // Layouts (a function of N and the element size only, like the rest).
  // Rows that can never be 16-byte aligned take the interleaved layout in
  // both regimes (coalesced element accesses).
  if (g.n && g.vec > 1) {
    if ((*g.n * s.elementBytes) % g.vectorBytes != 0)
      g.layouts = RowLayouts::Interleaved;
    else if (g.registers && g.chunksPerLane * g.vec > kBatchedLoadsShare)
      g.layouts = RowLayouts::Both;
  }

  sizeSharedMemory(g, s);
  assert(g.sharedBytes <= kGuaranteedStaticSharedBytes &&
         "a row kernel exceeds the static shared memory of every chip");
  assert(g.sharedBytes + g.dynamicSharedBytes <= kGuaranteedOptInSharedBytes &&
         "a row kernel exceeds the opt-in shared memory of every chip");
}

void mlir::norm::completeGeometry(Geometry &g, const RowShape &s,
                                  const TargetInfo &target) {
  g.n = s.n;
  g.warp = target.warpSize;
  g.vectorBytes = target.maxVectorBytes;
  g.sliceColumns =
      g.cluster > 1 ? g.chunksPerLane * g.lanes * g.vec : int64_t(0);
  sizeSharedMemory(g, s);
}

namespace {
/// A diagnostic's text, built with <<.
struct Why {
  std::string text;
  template <typename T> Why &operator<<(const T &v) {
    if constexpr (std::is_arithmetic_v<T>)
      text += std::to_string(v);
    else
      text += v;
    return *this;
  }
};
} // namespace

std::string mlir::norm::checkGeometry(const Geometry &g, const RowShape &s,
                                      const TargetInfo &target) {
  Why why;
  // The block.
  if (g.threads > target.maxThreadsPerBlock || g.threads % target.warpSize)
    return (why << "threads: a block of " << g.threads << " threads; "
                << target.chip << " takes multiples of its "
                << target.warpSize << "-thread warp up to "
                << target.maxThreadsPerBlock)
        .text;
  // The chunk: one widest access, or elements where N is dynamic.
  int64_t vec =
      s.n ? std::max<int64_t>(1, target.maxVectorBytes / s.elementBytes) : 1;
  if (g.vec != vec)
    return (why << "vector: the row kernels' chunk is "
                << (s.n ? "one " + std::to_string(target.maxVectorBytes) +
                              "-byte access, "
                        : std::string("one element where N is dynamic, "))
                << vec << " elements of " << s.elementBytes
                << " bytes; got vector = " << g.vec)
        .text;
  bool deterministic =
      s.partials == PartialSums::Deterministic && s.partialRows > 0;
  if (g.registers) {
    if (!s.n)
      return "regime: the registers regime unrolls a lane's chunks, which "
             "needs a static N; this row's N is dynamic (use regime = "
             "looped)";
    int64_t share = g.chunksPerLane * g.vec;
    if (s.maxRegisterElements > 0 && share > s.maxRegisterElements)
      return (why << "registers: a lane's share of " << share
                  << " elements per row array passes max-register-elements ("
                  << s.maxRegisterElements
                  << "), past which the row caches spill; use fewer chunks, "
                     "more lanes or regime = looped")
          .text;
    int64_t chunks = llvm::divideCeil(*s.n, g.vec);
    int64_t blocks =
        llvm::divideCeil(*s.n, g.chunksPerLane * g.lanes * g.vec);
    if (g.cluster == 1 &&
        g.chunksPerLane != int64_t(llvm::divideCeil(chunks, g.lanes)))
      return (why << "chunks: N = " << *s.n << " is " << chunks
                  << " chunks over " << g.lanes << " lanes, "
                  << llvm::divideCeil(chunks, g.lanes)
                  << " a lane; got chunks = " << g.chunksPerLane)
          .text;
    if (g.cluster != blocks)
      return (why << (g.cluster > 1 ? "cluster: " : "chunks: ") << "N = "
                  << *s.n << " in slices of " << g.chunksPerLane << " x "
                  << g.lanes << " x " << g.vec << " columns needs "
                  << blocks << " block(s) a row, the geometry has cluster = "
                  << g.cluster)
          .text;
  }
  // A looped row split over a cluster: each block walks its slice of K L V
  // columns in a loop, one row at a time.
  if (!g.registers && g.cluster > 1) {
    if (!s.n)
      return "cluster: a row split over a cluster needs a static N; this "
             "row's N is dynamic";
    if (g.chunksPerLane < 1)
      return "chunks: a looped row split over a cluster needs its slice's "
             "chunks per lane (chunks >= 1)";
    int64_t blocks =
        llvm::divideCeil(*s.n, g.chunksPerLane * g.lanes * g.vec);
    if (g.cluster != blocks)
      return (why << "cluster: N = " << *s.n << " in slices of "
                  << g.chunksPerLane << " x " << g.lanes << " x " << g.vec
                  << " columns needs " << blocks
                  << " block(s) a row, the geometry has cluster = "
                  << g.cluster)
          .text;
    if (g.batch != 1)
      return (why << "batch: a looped row split over a cluster takes one row "
                     "at a time (batch = 1), got batch = "
                  << g.batch)
          .text;
  }
  // Clusters.
  if (g.cluster > 1) {
    if (g.cluster > target.maxClusterBlocks)
      return (why << "cluster: " << g.cluster << " blocks a cluster; "
                  << target.chip
                  << (target.maxClusterBlocks > 1
                          ? " allows at most " +
                                std::to_string(target.maxClusterBlocks)
                          : std::string(" has no thread-block clusters "
                                        "(sm_90 and newer do)")))
          .text;
    if (!s.splittable)
      return "cluster: only a forward kernel or a dx kernel of the "
             "deterministic strategy (or without dweight/dbias) may split its "
             "rows over a cluster";
  }
  // The partial rows' home follows the strategy and the regime.
  if (!deterministic && g.partials != PartialsHome::None)
    return "partials: this kernel has no deterministic partial rows; got "
           "partials other than none";
  if (deterministic) {
    if (g.partials == PartialsHome::None)
      return "partials: the deterministic strategy's partial rows need a "
             "home (registers, shared or global)";
    if (!g.registers && g.partials != PartialsHome::Global)
      return "partials: the looped regime keeps its partial rows in global "
             "memory (partials = global)";
  }
  if (s.partials == PartialSums::Locked && g.rows != 1)
    return (why << "rows: the locked strategy holds a group's lock for one "
                   "row at a time (rows = 1); got rows = "
                << g.rows)
        .text;
  if (g.batch > kMaxBatchRows)
    return (why << "batch: at most " << kMaxBatchRows << " rows, got "
                << g.batch)
        .text;
  // L2 prefetch of the rows ahead: whole 16-byte aligned rows (or slices),
  // so a static N whose rows can be aligned, and the chip's bulk prefetch.
  if (g.prefetch < 0 || g.prefetch > kMaxPrefetch)
    return (why << "prefetch: 0 to " << kMaxPrefetch
                << " waves of rows ahead, got " << g.prefetch)
        .text;
  if (g.prefetch > 0) {
    if (!target.bulkPrefetch)
      return (why << "prefetch: " << target.chip
                  << " has no cp.async.bulk.prefetch (sm_90 and newer do)")
          .text;
    if (s.forward)
      return "prefetch: a forward kernel's block takes one wave of rows, so "
             "there is no row ahead of it to prefetch";
    if (!s.n || g.layouts == RowLayouts::Interleaved)
      return "prefetch: the rows are prefetched as whole 16-byte aligned "
             "ranges, which needs a static N whose rows can be 16-byte "
             "aligned (N times the element size a multiple of 16)";
  }
  // Shared partial sums a lane keeps side by side: at most one 16-byte
  // access of f32, so within any chunk (one 16-byte access of 4 elements
  // or more, checked above).
  if (g.partialVector != 1 && g.partialVector != 2 && g.partialVector != 4)
    return (why << "partial_vector: 1, 2 or 4 sums side by side, got "
                << g.partialVector)
        .text;
  if (g.partialVector > 1 && g.partials != PartialsHome::Shared)
    return "partial_vector: it groups the partial sums of shared memory, and "
           "this geometry keeps none there (partials = shared is one row in "
           "flight of the registers regime with deterministic partial rows)";
  if (g.partialVector > 1 && g.layouts == RowLayouts::Interleaved)
    return "partial_vector: only the vector layout's body groups the partial "
           "sums, and rows that can never be 16-byte aligned have none "
           "(layout = interleaved)";
  // The next wave's loads issued into registers: the unrolled chunks of
  // the register regime, rows walked in waves (a forward block has one
  // wave; the global home walks batches of rows), and the vector layout's
  // 16-byte loads (the interleaved body keeps its loads where they are).
  if (g.pipeline < 0 || g.pipeline > kMaxPipeline)
    return (why << "pipeline: 0 to " << kMaxPipeline
                << " waves of rows loaded ahead, got " << g.pipeline)
        .text;
  if (g.pipeline > 0) {
    if (!g.registers)
      return "pipeline: the next row is loaded into registers, which needs "
             "the register regime (regime = registers: a lane's share of "
             "the row unrolled)";
    if (s.forward)
      return "pipeline: a forward kernel's block takes one wave of rows, so "
             "there is no row ahead of it to load";
    if (g.partials == PartialsHome::Global)
      return "pipeline: the partial rows in global memory walk the rows in "
             "batches, not waves";
    if (g.layouts == RowLayouts::Interleaved || g.vec == 1)
      return "pipeline: only the vector layout's 16-byte loads are issued "
             "ahead, and these rows can never be 16-byte aligned (N times "
             "the element size a multiple of 16)";
    if (g.layouts != RowLayouts::Both)
      return "pipeline: the loads ahead are the aligned body's own (layout "
             "= both: no alignment test a chunk, whose fallback would keep "
             "the buffered row live through a second body)";
  }
  // Row caches kept in the loaded type: the register regime's private
  // arrays, of rows narrower than their f32 values.
  if (g.narrowCache < 0 || g.narrowCache > 2)
    return (why << "narrow_cache: 0, 1 or 2, got " << g.narrowCache).text;
  if (g.narrowCache) {
    if (!g.registers)
      return "narrow_cache: only the register regime keeps row caches (the "
             "looped regime reads the rows again)";
    if (s.elementBytes >= 4)
      return "narrow_cache: the rows are f32, which the caches hold "
             "already";
  }
  // Column vectors held in registers: the register regime's unrolled
  // chunks, loaded in the vector layout's body (the interleaved body keeps
  // its loads).
  if (g.holdColumns != 0 && g.holdColumns != 1)
    return (why << "hold_columns: 0 or 1, got " << g.holdColumns).text;
  if (g.holdColumns) {
    if (!g.registers)
      return "hold_columns: the columns are held for a lane's unrolled "
             "chunks, which needs the register regime (regime = "
             "registers)";
    if (g.layouts == RowLayouts::Interleaved || g.vec == 1)
      return "hold_columns: only the vector layout's 16-byte loads are "
             "held, and these rows can never be 16-byte aligned (N times "
             "the element size a multiple of 16)";
  }
  // Shared memory, against what every chip gives (never this chip's own,
  // so the kernel runs on every chip the same).
  if (g.sharedBytes > kGuaranteedStaticSharedBytes)
    return (why << "shared memory: " << g.sharedBytes
                << " bytes of static shared memory pass the "
                << kGuaranteedStaticSharedBytes
                << " every chip gives a block without opting in")
        .text;
  if (g.sharedBytes + g.dynamicSharedBytes >
      std::min(kGuaranteedOptInSharedBytes, target.maxOptInSharedBytes))
    return (why << "shared memory: " << g.sharedBytes + g.dynamicSharedBytes
                << " bytes pass the "
                << std::min(kGuaranteedOptInSharedBytes,
                            target.maxOptInSharedBytes)
                << " a block may opt in to on every chip")
        .text;
  return std::string();
}
