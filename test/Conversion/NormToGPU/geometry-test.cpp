//===- geometry-test.cpp - unit test of the row kernels' geometry ---------===//
//
// Part of mlir-norm. Run by geometry.test. Checks
//  * the geometry of a table of N / element types / strategies (what
//    docs/GPU.md promises: N = 24 bf16 -> 4 lanes, 64 rows; N = 4096 bf16 ->
//    the whole block on one row, partials in shared memory; N = 65536 and
//    dynamic N -> looped);
//  * the determinism rule: for every chip TargetInfo knows, everything that
//    fixes the order of a dweight/dbias sum (lanes, rows, vector, chunks,
//    regime, where the partials live) is the same as for every other chip,
//    except where a chip with clusters splits a row that every chip takes
//    one row at a time per block (dweight/dbias keep their order there);
//  * the cluster regime: which N it takes, and that it never does without
//    clusters, for the forward, or for atomic / locked;
//  * that the chip-independent shared-memory constant fits every chip.
// Prints one line per failed check and exits non-zero if any failed.
//
//===----------------------------------------------------------------------===//

#include "norm/Conversion/NormToGPU/Geometry.h"
#include "norm/Conversion/NormToGPU/TargetInfo.h"
#include "norm/Support/Groups.h"

#include "Tuning.h"

#include <cstdio>
#include <optional>
#include <tuple>
#include <string>
#include <vector>

using namespace mlir::norm;

static int failures = 0;

static void check(bool ok, const std::string &what) {
  if (ok)
    return;
  ++failures;
  std::printf("FAIL: %s\n", what.c_str());
}

namespace {
struct DType {
  const char *name;
  int64_t bytes;
};
struct Strategy {
  const char *name;
  PartialSums partials;
  int64_t partialRows;
  bool forward = false;
};
} // namespace

static std::string describe(std::optional<int64_t> n, const DType &d,
                            const Strategy &s) {
  return "N=" + (n ? std::to_string(*n) : std::string("?")) + " " + d.name +
         " " + s.name;
}

static std::string show(const Geometry &g) {
  return "threads=" + std::to_string(g.threads) +
         " cluster=" + std::to_string(g.cluster) +
         " lanes=" + std::to_string(g.lanes) +
         " rows=" + std::to_string(g.rows) + " vec=" + std::to_string(g.vec) +
         " K=" + std::to_string(g.chunksPerLane) +
         " registers=" + std::to_string(g.registers) +
         " partials=" + std::to_string(int(g.partials)) +
         " layouts=" + std::to_string(int(g.layouts)) +
         " smem=" + std::to_string(g.sharedBytes) +
         " dynamic=" + std::to_string(g.dynamicSharedBytes);
}

/// Everything that fixes a sum order (and the kernel's shape).
static bool sameOrder(const Geometry &a, const Geometry &b) {
  return a.threads == b.threads && a.lanes == b.lanes && a.rows == b.rows &&
         a.vec == b.vec && a.registers == b.registers &&
         a.chunksPerLane == b.chunksPerLane && a.n == b.n && a.warp == b.warp &&
         a.partials == b.partials && a.sharedBytes == b.sharedBytes &&
         a.layouts == b.layouts && a.cluster == b.cluster &&
         a.sliceColumns == b.sliceColumns && a.batch == b.batch;
}

static RowShape shapeOf(std::optional<int64_t> n, int64_t bytes,
                        const Strategy &s, int64_t threads = 256,
                        int64_t cluster = 0, int64_t batchRows = 0) {
  RowShape shape;
  shape.batchRows = batchRows;
  shape.splittable = s.partials == PartialSums::Deterministic ||
                     (s.partials == PartialSums::None && !s.forward);
  shape.cluster = cluster;
  shape.n = n;
  shape.elementBytes = bytes;
  shape.threads = threads;
  shape.maxRegisterElements = 64;
  shape.partials = s.partials;
  shape.partialRows = s.partialRows;
  shape.forward = s.forward;
  return shape;
}

static Geometry geometry(std::optional<int64_t> n, int64_t bytes,
                         const Strategy &s, const TargetInfo &t,
                         int64_t threads = 256, int64_t cluster = 0,
                         int64_t batchRows = 0) {
  return chooseRowGeometry(shapeOf(n, bytes, s, threads, cluster, batchRows),
                           t);
}

/// A register-regime block of 256 threads, one row of 256 lanes, 16-byte
/// chunks of bf16, the partial rows in shared memory (K = 1).
static Geometry rowBlock256() {
  Geometry g;
  g.registers = true;
  g.threads = 256;
  g.lanes = 256;
  g.vec = 8;
  g.partials = PartialsHome::Shared;
  return g;
}

int main() {
  const std::vector<std::optional<int64_t>> ns = {
      1,     3,     24,    128,   1000,   4095,   4096,  5120,
      8192,  10000, 16384, 24576, 49152,  65536,  65537, 100003,
      262144, std::nullopt};
  const DType dtypes[] = {{"f32", 4}, {"f16", 2}, {"bf16", 2}};
  const Strategy strategies[] = {
      {"forward", PartialSums::None, 0, /*forward=*/true},
      {"deterministic-rms", PartialSums::Deterministic, 1},
      {"deterministic-layer", PartialSums::Deterministic, 2},
      {"grouped_atomic", PartialSums::Atomic, 0},
      {"atomic", PartialSums::Atomic, 0},
      {"locked", PartialSums::Locked, 0}};

  // The constant the budget is taken from fits every chip.
  check(!TargetInfo::knownChips().empty(), "TargetInfo knows no chip");
  check(!TargetInfo::get("sm_10"), "sm_10 is not a chip we know");
  for (llvm::StringRef chip : TargetInfo::knownChips()) {
    std::optional<TargetInfo> t = TargetInfo::get(chip);
    check(t.has_value(), "no TargetInfo for " + chip.str());
    if (t) {
      check(kGuaranteedStaticSharedBytes <= t->maxStaticSharedBytes,
            chip.str() + ": less static shared memory than the guaranteed");
      check(kGuaranteedOptInSharedBytes <= t->maxOptInSharedBytes,
            chip.str() + ": less opt-in shared memory than the guaranteed");
      check(t->maxOptInSharedBytes + kSharedBytesReservedPerBlock <=
                t->sharedBytesPerSM,
            chip.str() + ": a block may opt in to more than its SM has");
    }
  }

  // Determinism: the same geometry on every chip, and within the budget.
  TargetInfo first = *TargetInfo::get(TargetInfo::knownChips().front());
  for (int64_t threads : {0, 256, 512, 1024})
    for (std::optional<int64_t> n : ns)
      for (const DType &d : dtypes)
        for (const Strategy &s : strategies) {
          Geometry ref = geometry(n, d.bytes, s, first, threads);
          std::string what =
              describe(n, d, s) + " threads=" + std::to_string(threads);
          check(ref.sharedBytes <= kGuaranteedStaticSharedBytes,
                what + ": " + show(ref) + " exceeds the guaranteed budget");
          // Dynamic shared memory only for one row's partial rows past the
          // static budget, within the opt-in one.
          check(ref.dynamicSharedBytes == 0 ||
                    (ref.partials == PartialsHome::Shared && ref.rows == 1 &&
                     ref.dynamicSharedBytes ==
                         partialsSharedBytes(ref, s.partialRows) &&
                     ref.dynamicSharedBytes > kPartialsSharedBytes &&
                     ref.dynamicSharedBytes <= kDynamicPartialsSharedBytes &&
                     ref.sharedBytes + ref.dynamicSharedBytes <=
                         kGuaranteedOptInSharedBytes),
                what + ": bad dynamic shared memory: " + show(ref));
          // A backward row trimmed of its idle warps keeps the rows of the
          // block the threads gave, in whole warps.
          bool trimmed = !s.forward && ref.lanes > ref.warp &&
                         ref.lanes % ref.warp == 0 &&
                         ref.chosenLanes() * ref.rows == threads;
          check(ref.lanes * ref.rows == ref.threads &&
                    (threads == 0 || ref.threads == threads || trimmed),
                what + ": lanes * rows != threads: " + show(ref));
          check(ref.cluster == 1,
                what + ": a cluster on " + first.chip + ": " + show(ref));
          for (llvm::StringRef chip : TargetInfo::knownChips()) {
            TargetInfo t = *TargetInfo::get(chip);
            Geometry g = geometry(n, d.bytes, s, t, threads);
            // norm-choose-geometry's checker takes every choice of the cost
            // model, and completing its decisions gives the same sizes (what
            // a #norm.row_geometry round trip through the IR relies on).
            RowShape shape = shapeOf(n, d.bytes, s, threads);
            std::string why = checkGeometry(g, shape, t);
            check(why.empty(), what + ": " + chip.str() +
                                   ": the checker refuses " + show(g) + ": " +
                                   why);
            Geometry again = g;
            again.sharedBytes = again.dynamicSharedBytes = -1;
            again.sliceColumns = -1;
            completeGeometry(again, shape, t);
            check(sameOrder(again, g) &&
                      again.dynamicSharedBytes == g.dynamicSharedBytes,
                  what + ": " + chip.str() + ": completing " + show(g) +
                      " gives " + show(again));
            if (sameOrder(ref, g))
              continue;
            // Only a split row, where both take a row at a time per block.
            check(g.cluster > 1 && t.maxClusterBlocks >= g.cluster &&
                      ref.rows == 1 && samePartialOrder(ref, g),
                  what + ": " + chip.str() + " gives " + show(g) + ", " +
                      first.chip + " gives " + show(ref));
            check(g.sharedBytes <= kGuaranteedStaticSharedBytes &&
                      g.lanes == g.threads && g.rows == 1 &&
                      g.sliceColumns == g.chunksPerLane * g.lanes * g.vec &&
                      n && (g.cluster - 1) * g.sliceColumns < *n &&
                      g.cluster * g.sliceColumns >= *n,
                  what + ": " + chip.str() + ": a bad split " + show(g));
          }
        }

  // The table of docs/GPU.md (256 threads).
  auto expect = [&](std::optional<int64_t> n, const DType &d, const Strategy &s,
                    int64_t lanes, int64_t rows, int64_t vec, int64_t k,
                    bool registers, PartialsHome partials) {
    Geometry g = geometry(n, d.bytes, s, first);
    check(g.lanes == lanes && g.rows == rows && g.vec == vec &&
              g.chunksPerLane == k && g.registers == registers &&
              g.partials == partials,
          describe(n, d, s) + ": got " + show(g));
  };
  const DType &f32 = dtypes[0], &bf16 = dtypes[2];
  const Strategy &fwd = strategies[0], &rms = strategies[1],
                 &layer = strategies[2], &atomic = strategies[3],
                 &locked = strategies[5];
  // N = 24 bf16: 3 chunks of 8, 4 lanes per row, 64 rows in flight.
  expect(24, bf16, rms, 4, 64, 8, 1, true, PartialsHome::Registers);
  expect(24, bf16, fwd, 4, 64, 8, 1, true, PartialsHome::None);
  // The forward's lanes (kForwardShareChunks, kForwardRunBytes): up to 6
  // chunks a lane, the best-used slots, ties to fewer lanes, an access of
  // the row's lanes at least 64 contiguous bytes.
  expect(128, bf16, fwd, 4, 64, 8, 4, true, PartialsHome::None);
  expect(1000, bf16, fwd, 32, 8, 8, 4, true, PartialsHome::None);
  expect(1536, bf16, fwd, 32, 8, 8, 6, true, PartialsHome::None);
  expect(6144, bf16, fwd, 128, 2, 8, 6, true, PartialsHome::None);
  // 2 chunks: 1 lane would cover 16 bytes, 2 lanes 32: one chunk a lane.
  expect(16, bf16, fwd, 2, 128, 8, 1, true, PartialsHome::None);
  // Unaligned rows (interleaved, 2-byte accesses): 32 lanes would be the
  // floor, more than the row's 13 chunks need: one chunk a lane.
  expect(100, bf16, fwd, 16, 16, 8, 1, true, PartialsHome::None);
  expect(2047, bf16, fwd, 64, 4, 8, 4, true, PartialsHome::None);
  // The backward keeps one chunk a lane at these N.
  expect(128, bf16, rms, 16, 16, 8, 1, true, PartialsHome::Registers);
  // locked: the block takes a row.
  expect(24, bf16, locked, 256, 1, 8, 1, true, PartialsHome::None);
  expect(1, f32, rms, 1, 256, 4, 1, true, PartialsHome::Registers);
  expect(128, f32, layer, 32, 8, 4, 1, true, PartialsHome::Registers);
  expect(1000, bf16, layer, 128, 2, 8, 1, true, PartialsHome::Registers);
  // N = 4096 bf16: the whole block on one row, 2 chunks per lane; the two
  // partial rows (2 * 4096 * 4 bytes = 32 KB) in shared memory.
  expect(4096, bf16, layer, 256, 1, 8, 2, true, PartialsHome::Shared);
  expect(4095, bf16, layer, 256, 1, 8, 2, true, PartialsHome::Shared);
  // N = 8192 bf16: 64 KB of partial rows pass the static budget; dynamic
  // shared memory (kDynamicPartialsSharedBytes).
  expect(8192, bf16, layer, 256, 1, 8, 4, true, PartialsHome::Shared);
  expect(8192, bf16, rms, 256, 1, 8, 4, true, PartialsHome::Shared);
  // 40 KB of partial row (kPartialsSharedBytes) still fits shared memory.
  expect(10000, bf16, rms, 256, 1, 8, 5, true, PartialsHome::Shared);
  // Dynamic shared memory only where it pays (dynamicPartialsPay): RMSNorm
  // N = 16384 keeps one block an SM either way, so registers.
  expect(16384, f32, rms, 256, 1, 4, 16, true, PartialsHome::Registers);
  expect(16384, bf16, rms, 256, 1, 8, 8, true, PartialsHome::Registers);
  expect(12288, bf16, rms, 256, 1, 8, 6, true, PartialsHome::Shared);
  // 96 KB of LayerNorm partial rows pass the dynamic budget too: registers.
  expect(12288, bf16, layer, 256, 1, 8, 6, true, PartialsHome::Registers);
  auto bytes = [&](int64_t n, const DType &d, const Strategy &s,
                   int64_t shared, int64_t dynamic) {
    Geometry g = geometry(n, d.bytes, s, first);
    check(g.sharedBytes == shared && g.dynamicSharedBytes == dynamic,
          describe(n, d, s) + ": shared bytes: got " + show(g));
  };
  bytes(4096, bf16, layer, 32768 + 64, 0); // static, as before
  bytes(5120, bf16, layer, 64, 49152);     // 3 chunks x 8 x 256 lanes x 2
  bytes(8192, bf16, layer, 64, 65536);     // 2 x 8192 x 4, dynamic
  bytes(12288, bf16, rms, 64, 49152);     // 6 chunks x 8 x 256 lanes
  bytes(16384, bf16, rms, 64, 0);
  bytes(8192, bf16, rms, 32768 + 64, 0);
  bytes(12288, bf16, layer, 64, 0);
  // RMSNorm N = 20480 takes 512 threads (5 chunks a lane): its partial row
  // in registers would spill past the 128 a thread (more than one array
  // over), so dynamic shared memory though the block count stays.
  {
    Geometry g = geometry(20480, bf16.bytes, rms, first, 0);
    check(g.threads == 512 && g.partials == PartialsHome::Shared &&
              g.dynamicSharedBytes == 81920,
          describe(20480, bf16, rms) + " threads=0: got " + show(g));
  }
  expect(16384, bf16, atomic, 256, 1, 8, 8, true, PartialsHome::None);
  // Looped: more than 64 elements per lane, or N not static (no chunks).
  expect(65536, bf16, layer, 256, 1, 8, 0, false, PartialsHome::Global);
  expect(std::nullopt, f32, rms, 256, 1, 1, 0, false, PartialsHome::Global);
  expect(std::nullopt, bf16, fwd, 256, 1, 1, 0, false, PartialsHome::None);

  // Looped rows in batches of B = 4 P (P partial rows, kLoopedPartialBytes)
  // for the partial rows' update; every other kernel one row at a time;
  // the option B as given.
  auto batch = [&](std::optional<int64_t> n, const DType &d, const Strategy &s,
                   int64_t want, int64_t option = 0) {
    Geometry g = geometry(n, d.bytes, s, first, 256, 0, option);
    check(g.batch == want, describe(n, d, s) + " batch-rows=" +
                               std::to_string(option) + ": batch " +
                               std::to_string(g.batch) + ", want " +
                               std::to_string(want));
  };
  batch(65536, bf16, layer, 8);
  batch(262144, f32, rms, 4);
  batch(std::nullopt, bf16, rms, 4);
  batch(65536, bf16, layer, 2, /*option=*/2);
  batch(65536, bf16, atomic, 1);
  batch(65536, bf16, locked, 1);
  batch(65536, bf16, fwd, 1);
  batch(4096, bf16, layer, 1); // registers
  batch(4096, bf16, layer, 1, /*option=*/8);

  // Layouts (a function of N and the element size): rows whose bytes are
  // not a multiple of 16 can never be aligned, so one interleaved body;
  // a lane share of at most 16 elements, one vector body (chunk by
  // chunk); more, both bodies under the run-time alignment check. The
  // looped regime has one body: vector, or interleaved for such rows.
  auto layouts = [&](std::optional<int64_t> n, const DType &d,
                     const Strategy &s, RowLayouts want) {
    Geometry g = geometry(n, d.bytes, s, first);
    check(g.layouts == want, describe(n, d, s) + ": layouts " +
                                 std::to_string(int(g.layouts)) + ", want " +
                                 std::to_string(int(want)));
  };
  layouts(4095, bf16, layer, RowLayouts::Interleaved);
  layouts(4095, f32, rms, RowLayouts::Interleaved);
  layouts(100, bf16, rms, RowLayouts::Interleaved);
  layouts(1, f32, rms, RowLayouts::Interleaved);
  layouts(24, bf16, rms, RowLayouts::Vector);   // 48 bytes a row
  layouts(4096, bf16, layer, RowLayouts::Vector); // 16 elements a lane
  layouts(4096, f32, layer, RowLayouts::Vector);
  layouts(5120, bf16, layer, RowLayouts::Both); // 24 elements a lane
  layouts(8192, bf16, rms, RowLayouts::Both);
  layouts(8192, f32, fwd, RowLayouts::Both);
  layouts(65536, bf16, layer, RowLayouts::Vector); // looped
  layouts(65537, bf16, layer, RowLayouts::Interleaved); // looped
  layouts(100004, f32, rms, RowLayouts::Vector); // 400016 bytes a row
  layouts(std::nullopt, bf16, rms, RowLayouts::Vector);

  // threads = 0: the candidate (256, 128, 512) that uses its chunk slots
  // best, ties to the first.
  auto chosen = [&](int64_t n, const DType &d, const Strategy &s,
                    int64_t want) {
    Geometry g = geometry(n, d.bytes, s, first, /*threads=*/0);
    check(g.threads == want, describe(n, d, s) + " threads=0: " +
                                 std::to_string(g.threads) + ", want " +
                                 std::to_string(want) + " (" + show(g) +
                                 ")");
  };
  chosen(4096, bf16, layer, 256);  // 512 chunks: 2 x 256, all used
  chosen(2048, bf16, rms, 256);    // 1 x 256 and 2 x 128 tie
  chosen(5120, bf16, layer, 128);  // 640 chunks: 5 x 128 against 3 x 256
  chosen(7168, bf16, rms, 128);    // 896: 7 x 128 against 4 x 256
  chosen(6144, bf16, rms, 256);    // 768: 3 x 256
  chosen(10000, bf16, layer, 256); // 128 threads would be 80 a lane
  chosen(1000, bf16, layer, 256);  // 128 lanes a row either way
  chosen(24, bf16, fwd, 256);
  // Looped for every candidate (and dynamic N): kLoopedThreads.
  chosen(65536, bf16, layer, kLoopedThreads);
  chosen(262144, f32, rms, kLoopedThreads);
  {
    Geometry g = geometry(std::nullopt, bf16.bytes, rms, first, 0);
    check(g.threads == kLoopedThreads && !g.registers,
          "dynamic N threads=0: " + show(g));
  }

  // trim-idle-warps: a backward row of more than a warp keeps the warps
  // its chunks need (whole warps), the rows and chunks of the block it was
  // chosen as, so the same partial-sum order; the forward, a block that
  // takes the row whatever its chunks (locked), and the option off keep
  // the power of two.
  auto trim = [&](int64_t n, const DType &d, const Strategy &s,
                  int64_t threads, int64_t lanes, int64_t rows, int64_t k) {
    // The threads the cost model chooses (0), as norm-compile does.
    RowShape on = shapeOf(n, d.bytes, s, 0), off = on;
    off.trimIdleWarps = false;
    Geometry g = chooseRowGeometry(on, first), p = chooseRowGeometry(off, first);
    std::string what = describe(n, d, s) + " trim-idle-warps: ";
    check(g.threads == threads && g.lanes == lanes && g.rows == rows &&
              g.chunksPerLane == k,
          what + "got " + show(g));
    check(p.rows == g.rows && p.chunksPerLane == g.chunksPerLane &&
              p.lanes == g.chosenLanes() && p.threads == g.rows * p.lanes &&
              samePartialOrder(g, p),
          what + show(g) + " against " + show(p));
    check(g.chosenSlotUse() == p.slotUse() && g.slotUse() > p.slotUse(),
          what + "slot use " + std::to_string(g.slotUse()));
    check(checkGeometry(g, on, first).empty(), what + "the checker refuses " +
                                                  show(g));
  };
  trim(768, bf16, layer, 192, 96, 2, 1);   // 96 chunks: 3 warps, not 4
  trim(768, bf16, rms, 192, 96, 2, 1);
  trim(1280, bf16, layer, 160, 160, 1, 1); // 160 chunks: 5 warps, not 8
  trim(768, f32, layer, 192, 192, 1, 1);   // 192 chunks
  {
    // Whole chunks of a power of two, a row within a warp, a forward row,
    // a locked row, several chunks a lane (N = 2304: 288 chunks, 3 x 128;
    // 3584: 448, 2 x 256), rows that can never be 16-byte aligned (bf16
    // 700, f32 850): untouched.
    check(geometry(2304, bf16.bytes, rms, first, 0).lanes == 128 &&
              geometry(700, bf16.bytes, layer, first, 0).lanes == 128 &&
              geometry(850, f32.bytes, rms, first, 0).lanes == 256 &&
              geometry(3584, bf16.bytes, layer, first, 0).lanes == 256 &&
              geometry(1024, bf16.bytes, layer, first, 0).threads == 256 &&
              geometry(512, bf16.bytes, layer, first, 0).lanes == 64 &&
              geometry(768, bf16.bytes, fwd, first, 256).lanes != 96 &&
              geometry(768, bf16.bytes, locked, first, 256).lanes == 256,
          "trim-idle-warps touched a row it keeps");
    RowShape off = shapeOf(768, bf16.bytes, layer, 0);
    off.trimIdleWarps = false;
    Geometry p = chooseRowGeometry(off, first);
    check(p.threads == 256 && p.lanes == 128,
          "trim-idle-warps=false: " + show(p));
  }

  // twoChunkRowsPay: a plain deterministic backward row the cost model lays
  // out on 256 lanes at one chunk (chunks in (128, 256]) goes to 128 lanes
  // at two past 2048 rows; nothing else does.
  {
    RowShape s = shapeOf(2048, bf16.bytes, layer, 0);
    Geometry g = chooseRowGeometry(s, first);
    check(g.lanes == 256 && g.chunksPerLane == 1 && g.rows == 1,
          "two chunks: LayerNorm bf16 2048 lays out at one: " + show(g));
    check(twoChunkRowsPay(g, s, 4096) && twoChunkRowsPay(g, s, 0x10000),
          "two chunks: LayerNorm bf16 2048 past 2048 rows");
    check(!twoChunkRowsPay(g, s, 2048) && !twoChunkRowsPay(g, s, 0),
          "two chunks: 2048 rows or no hint keep one chunk");
    RowShape t = s;
    t.threads = kTwoChunkThreads;
    Geometry two = chooseRowGeometry(t, first);
    check(two.lanes == 128 && two.chunksPerLane == 2 && two.rows == 1 &&
              samePartialOrder(two, g),
          "two chunks: 128 lanes, two chunks, the same partial order: " +
              show(two));
    RowShape early = s;
    early.earlyRows = 1;
    RowShape off = s;
    off.twoChunkRows = false;
    RowShape fixed = s;
    fixed.threads = 256;
    check(!twoChunkRowsPay(g, early, 4096) && !twoChunkRowsPay(g, off, 4096) &&
              !twoChunkRowsPay(g, fixed, 4096),
          "two chunks: not with early rows, off, or threads given");
    // Rows of two 16-byte chunks a lane already (N = 4096), two rows of 128
    // lanes (N = 1024), f32 rows never aligned (N = 1022), the forward.
    for (auto [n, d, st] :
         {std::tuple{int64_t(4096), bf16, layer},
          std::tuple{int64_t(1024), bf16, layer},
          std::tuple{int64_t(1022), f32, rms},
          std::tuple{int64_t(2048), bf16, fwd}}) {
      RowShape o = shapeOf(n, d.bytes, st, 0);
      check(!twoChunkRowsPay(chooseRowGeometry(o, first), o, 4096),
            "two chunks: N = " + std::to_string(n) + " keeps its layout");
    }
    RowShape r = shapeOf(1020, f32.bytes, rms, 0);
    check(twoChunkRowsPay(chooseRowGeometry(r, first), r, 4096),
          "two chunks: RMSNorm f32 1020 (255 chunks of four)");
  }

  // 1024 threads, several rows in flight: partial rows that would not fit
  // the budget in shared memory send the block to one row at a time.
  {
    Geometry g = geometry(1000, bf16.bytes, layer, first, 1024);
    check(g.rows == 1 && g.lanes == 1024 && g.registers,
          "N=1000 bf16 layer threads=1024: got " + show(g));
    check(partialsSharedBytes(geometry(1000, bf16.bytes, rms, first, 1024),
                              1) <= kPartialsSharedBytes,
          "N=1000 bf16 rms threads=1024: partial rows over budget");
  }

  // partial_vector (shared partial sums side by side): the checker takes
  // 2 and 4 where the cost model keeps the partial rows in shared memory
  // (chunks are one 16-byte access, so at least 4 elements: no width is
  // past a chunk), and refuses another width and a home elsewhere.
  {
    TargetInfo hopper = *TargetInfo::get("sm_90");
    auto why = [&](Geometry h, int64_t n) {
      return checkGeometry(h, shapeOf(n, bf16.bytes, layer), hopper);
    };
    Geometry g = geometry(4096, bf16.bytes, layer, hopper);
    check(g.partials == PartialsHome::Shared && g.vec == 8,
          "LayerNorm bf16 4096: shared partial rows, 8-element chunks: " +
              show(g));
    for (int64_t w : {2, 4}) {
      Geometry h = g;
      h.partialVector = w;
      check(why(h, 4096).empty(), "partial_vector " + std::to_string(w) +
                                      " refused: " + why(h, 4096));
    }
    Geometry three = g;
    three.partialVector = 3;
    check(why(three, 4096).find("partial_vector: 1, 2 or 4") !=
              std::string::npos,
          "partial_vector 3: " + why(three, 4096));
    Geometry registers = geometry(16384, bf16.bytes, layer, hopper);
    registers.partialVector = 4;
    check(registers.partials == PartialsHome::Registers &&
              why(registers, 16384)
                      .find("it groups the partial sums of shared memory") !=
                  std::string::npos,
          "partial_vector with partials in registers: " +
              why(registers, 16384));
  }

  // pipeline (the next row's loads ahead) and narrow_cache (row caches in
  // the loaded type): the checker takes them on a register-regime dx
  // kernel over rows that can be aligned (pipeline: in the aligned body of
  // layout = both), and refuses each case it names.
  {
    TargetInfo hopper = *TargetInfo::get("sm_90");
    auto why = [&](Geometry h, int64_t n, int64_t bytes = 2) {
      return checkGeometry(h, shapeOf(n, bytes, layer), hopper);
    };
    auto refuses = [&](const std::string &w, const char *text,
                       const std::string &what) {
      check(w.find(text) != std::string::npos, what + ": " + w);
    };
    Geometry g = geometry(4096, bf16.bytes, layer, hopper);
    check(g.registers && g.layouts == RowLayouts::Vector,
          "LayerNorm bf16 4096: registers, layout vector: " + show(g));
    Geometry both = g;
    both.layouts = RowLayouts::Both;
    both.pipeline = 1;
    both.narrowCache = 1;
    check(why(both, 4096).empty(),
          "pipeline and narrow_cache refused: " + why(both, 4096));
    // `h` with one field set.
    auto with = [](Geometry h, int64_t Geometry::*field, int64_t v) {
      h.*field = v;
      return h;
    };
    refuses(why(with(both, &Geometry::pipeline, 2), 4096), "pipeline: 0 to 1",
            "pipeline 2");
    refuses(why(with(g, &Geometry::pipeline, 1), 4096),
            "pipeline: the loads ahead are the aligned body's own",
            "pipeline with layout vector");
    Geometry interleaved = both;
    interleaved.layouts = RowLayouts::Interleaved;
    refuses(why(interleaved, 4096), "pipeline: only the vector layout's",
            "pipeline with layout interleaved");
    Geometry looped = geometry(262144, bf16.bytes, layer, hopper);
    check(!looped.registers, "N = 262144 bf16: looped: " + show(looped));
    refuses(why(with(looped, &Geometry::pipeline, 1), 262144),
            "pipeline: the next row is loaded into registers",
            "pipeline looped");
    refuses(why(with(looped, &Geometry::narrowCache, 1), 262144),
            "narrow_cache: only the register regime", "narrow_cache looped");
    refuses(why(with(geometry(4096, f32.bytes, layer, hopper),
                     &Geometry::narrowCache, 1),
                4096, f32.bytes),
            "narrow_cache: the rows are f32", "narrow_cache f32");
    check(why(with(both, &Geometry::narrowCache, 2), 4096).empty(),
          "narrow_cache 2 refused: " +
              why(with(both, &Geometry::narrowCache, 2), 4096));
    refuses(why(with(looped, &Geometry::narrowCache, 2), 262144),
            "narrow_cache: only the register regime", "narrow_cache 2 looped");
    refuses(why(with(g, &Geometry::narrowCache, 3), 4096),
            "narrow_cache: 0, 1 or 2", "narrow_cache 3");
    refuses(why(with(g, &Geometry::narrowCache, -1), 4096),
            "narrow_cache: 0, 1 or 2", "narrow_cache -1");
  }

  // The cluster regime (sm_90, threads and cluster chosen): where a block
  // per row would loop or spill more than kClusterSpillArrays of its arrays
  // (by the estimate); the split with the best clusterScore
  // (slots used x row elements resident per SM), ties to fewer blocks.
  {
    TargetInfo hopper = *TargetInfo::get("sm_90");
    auto split = [&](int64_t n, const DType &d, const Strategy &s,
                     int64_t cluster, int64_t threads, int64_t k,
                     PartialsHome partials, int64_t option = 0) {
      Geometry g = geometry(n, d.bytes, s, hopper, 0, option);
      check(g.cluster == cluster && g.threads == threads &&
                g.chunksPerLane == k && g.registers &&
                g.partials == partials,
            describe(n, d, s) + " sm_90: got " + show(g));
    };
    split(20480, bf16, layer, 5, 256, 2, PartialsHome::Shared);
    split(32768, bf16, rms, 8, 256, 2, PartialsHome::Shared);
    split(65536, bf16, layer, 8, 512, 2, PartialsHome::Registers);
    split(65536, bf16, rms, 8, 512, 2, PartialsHome::Shared);
    split(50000, f32, rms, 7, 512, 4, PartialsHome::Shared); // 7 x 8192
    split(24576, bf16, layer, 6, 256, 2, PartialsHome::Shared);
    // Forced where the choice would not split: 2 x 4096 columns.
    split(8192, bf16, layer, 2, 256, 2, PartialsHome::Shared, 2);
    // The option forces a size (N = 16384 RMSNorm: 4 x 4096 columns).
    split(16384, bf16, rms, 4, 256, 2, PartialsHome::Shared, 4);
    // Forced where no slice holds the row in registers: the looped regime's
    // block walks its slice (32768 columns), one row at a time; the cost
    // model alone keeps the unsplit looped block (unmeasured on the GPU).
    for (const Strategy &st : {rms, layer}) {
      // (With the default max-register-elements, 64, 512 threads hold the
      // slice in registers: the register split, as before.)
      RowShape forced = shapeOf(262144, bf16.bytes, st, 0, 8, 0);
      forced.maxRegisterElements = 32;
      Geometry g = chooseRowGeometry(forced, hopper);
      check(g.cluster == 8 && !g.registers && g.threads == 512 &&
                g.chunksPerLane == 8 && g.sliceColumns == 32768 &&
                g.partials == PartialsHome::Global && g.batch == 1,
            describe(262144, bf16, st) + " sm_90 cluster=8: got " + show(g));
      Geometry d = geometry(262144, bf16.bytes, st, hopper, 0);
      check(d.cluster == 1 && !d.registers,
            describe(262144, bf16, st) + " sm_90: got " + show(d));
    }
    auto unsplit = [&](std::optional<int64_t> n, const DType &d,
                       const Strategy &s, int64_t option = 0) {
      Geometry g = geometry(n, d.bytes, s, hopper, 0, option);
      check(g.cluster == 1 && g.sliceColumns == 0,
            describe(n, d, s) + " sm_90: a cluster: " + show(g));
    };
    unsplit(4096, bf16, layer); // 64 registers (ptxas: 63)
    unsplit(8192, bf16, rms);   // its partial row in shared memory
    unsplit(5120, bf16, rms);
    // Registers over the ceiling by at most two arrays (kClusterSpillArrays).
    unsplit(8192, bf16, layer);
    unsplit(5120, bf16, layer);
    unsplit(10000, bf16, layer);
    unsplit(16384, bf16, layer);
    unsplit(20480, bf16, rms);
    unsplit(24576, bf16, rms);
    unsplit(24, bf16, rms);     // several rows in flight
    unsplit(65537, bf16, layer); // 16 a lane would need 9 blocks: looped
    unsplit(262144, bf16, rms);
    unsplit(std::nullopt, bf16, rms);
    unsplit(65536, bf16, fwd);
    unsplit(65536, bf16, atomic);
    unsplit(65536, bf16, locked);
    unsplit(65536, bf16, layer, /*option=*/1);
    // Without clusters the option changes nothing.
    Geometry g = geometry(65536, bf16.bytes, layer, first, 0, 8);
    check(g.cluster == 1 && !g.registers, "sm_80 cluster=8: " + show(g));
  }

  // The tuning tables: the embedded one parses (tuningTable would abort
  // otherwise) and has entries; each family's table is found by its chips
  // only; a malformed table is refused with the entry and key at fault.
  {
    check(!tuningTable(tuningFamily("sm_90")).empty() &&
              tuningTable(tuningFamily("sm_90")).data() ==
                  tuningTable(tuningFamily("sm_90a")).data(),
          "the sm_90 table serves sm_90 and sm_90a");
    check(tuningTable(tuningFamily("sm_80")).empty(),
          "sm_80 has no tuning table");
    auto refused = [](const char *json, const char *needle) {
      llvm::Expected<std::vector<TuningEntry>> t = parseTuningTable(json);
      if (t) {
        check(false, std::string("table accepted: ") + json);
        return;
      }
      std::string msg = llvm::toString(t.takeError());
      check(msg.find(needle) != std::string::npos,
            "table error '" + msg + "' names " + needle);
    };
    refused("{}", "no \"entries\"");
    refused("{\"entries\": [{\"kernel\": \"dx\", \"n\": [1, 2]}]}",
            "no knob");
    refused("{\"entries\": [{\"kernel\": \"dx\", \"n\": [5, 2], "
            "\"cluster\": 2}]}",
            "\"n\" must be");
    refused("{\"entries\": [{\"kernel\": \"row\", \"n\": [1, 2], "
            "\"cluster\": 2}]}",
            "\"kernel\"");
    refused("{\"entries\": [{\"kernel\": \"dx\", \"n\": [1, 2], "
            "\"cluster\": 2, \"grid\": 3}]}",
            "unknown key \"grid\"");
    refused("{\"entries\": [{\"kernel\": \"dx\", \"n\": [1, 2], "
            "\"cluster\": 16}]}",
            "\"cluster\" must be at most");
    refused("{\"entries\": [{\"kernel\": \"dx\", \"n\": [1, 2], "
            "\"rows\": [100, 0], \"cluster\": 2}]}",
            "\"rows\" must run from 1 or an edge + 1");
    // max_register_elements is a knob of its own (with cluster: the looped
    // row split over a cluster).
    {
      llvm::Expected<std::vector<TuningEntry>> m = parseTuningTable(
          "{\"entries\": [{\"kernel\": \"dx\", \"n\": [1, 2], "
          "\"max_register_elements\": 32}]}");
      check(m && m->size() == 1 && (*m)[0].maxRegisterElements == 32 &&
                (*m)[0].cluster == 0,
            "max_register_elements alone is a knob");
      if (!m)
        llvm::consumeError(m.takeError());
    }
    // The bit-neutral knobs, each alone.
    for (auto [key, value, field] :
         {std::tuple{"prefetch", 2, &TuningEntry::prefetch},
          std::tuple{"partial_vector", 4, &TuningEntry::partialVector},
          std::tuple{"pipeline", 1, &TuningEntry::pipeline},
          std::tuple{"narrow_cache", 1, &TuningEntry::narrowCache}}) {
      llvm::Expected<std::vector<TuningEntry>> m = parseTuningTable(
          "{\"entries\": [{\"kernel\": \"dx\", \"n\": [1, 2], \"" +
          std::string(key) + "\": " + std::to_string(value) + "}]}");
      check(m && m->size() == 1 && (*m)[0].*field == value,
            std::string(key) + " alone is a knob");
      if (!m)
        llvm::consumeError(m.takeError());
    }
    refused("{\"entries\": [{\"kernel\": \"dx\", \"n\": [1, 2], "
            "\"prefetch\": 5}]}",
            "\"prefetch\" must be at most 4");
    refused("{\"entries\": [{\"kernel\": \"dx\", \"n\": [1, 2], "
            "\"partial_vector\": 3}]}",
            "\"partial_vector\" must be 1, 2 or 4");
    refused("{\"entries\": [{\"kernel\": \"dx\", \"n\": [1, 2], "
            "\"partial_vector\": 1}]}",
            "no knob");
    refused("{\"entries\": [{\"kernel\": \"dx\", \"n\": [1, 2], "
            "\"pipeline\": 2}]}",
            "\"pipeline\" must be at most 1");
    refused("{\"entries\": [{\"kernel\": \"dx\", \"n\": [1, 2], "
            "\"narrow_cache\": 3}]}",
            "\"narrow_cache\" must be 0, 1 or 2");
    refused("{\"entries\": [{\"kernel\": \"dx\", \"n\": [1, 2], "
            "\"pipeline\": 0, \"narrow_cache\": 0}]}",
            "no knob");
    refused("{\"entries\": [{\"kernel\": \"dx\", \"n\": [1, 2], "
            "\"max_register_elements\": -1}]}",
            "\"max_register_elements\" must be a non-negative integer");
    // Lookup: ranges inclusive, rows 0 (unknown) only for every-M entries.
    llvm::Expected<std::vector<TuningEntry>> t = parseTuningTable(
        "{\"entries\": [{\"kernel\": \"dx\", \"partial_rows\": 1, "
        "\"element_bytes\": 2, \"n\": [100, 200], \"rows\": [129, 512], "
        "\"cluster\": 2}, {\"kernel\": \"dx\", \"element_bytes\": 2, "
        "\"n\": [100, 200], \"threads\": 128}]}");
    check(bool(t), "a well-formed table parses");
    if (t) {
      RowShape r = shapeOf(150, 2, rms, 0, 0, 0);
      const TuningEntry *e = findTuning(*t, r, 129);
      check(e && e->cluster == 2, "rows 129 finds the ranged entry");
      e = findTuning(*t, r, 513);
      check(e && e->threads == 128, "rows 513 falls to the every-M entry");
      e = findTuning(*t, r, 0);
      check(e && e->threads == 128, "unknown rows: only every-M entries");
      check(!findTuning(*t, shapeOf(201, 2, rms, 0, 0, 0), 129),
            "N past the range finds nothing");
      check(!findTuning(*t, shapeOf(150, 4, rms, 0, 0, 0), 129),
            "another element size finds nothing");
    }
  }

  // dxEarlyRows: a dx kernel's early rows against its wave (sm_90, 132
  // SMs). 256 threads, 512 programs: four blocks an SM, 64 registers.
  {
    TargetInfo h = *TargetInfo::get("sm_90");
    Geometry g = rowBlock256();
    // 16 a lane: late 64 fits, early 80 does not: late, four blocks.
    g.chunksPerLane = 2;
    DxEarlyRows r = dxEarlyRows(g, 2, 1, 512, h);
    check(!r.early && r.residentBlocks == 4,
          "dxEarlyRows 16 a lane: late, 4 blocks an SM");
    // 8 a lane: early 56 fits: early, four blocks.
    g.chunksPerLane = 1;
    r = dxEarlyRows(g, 2, 1, 512, h);
    check(r.early && r.residentBlocks == 4,
          "dxEarlyRows 8 a lane: early, 4 blocks an SM");
    // A pipelined row counts a share: 8 a lane, partials in registers
    // (late 64 + 8 = 72) fits neither: early, nothing asked.
    g.pipeline = 1;
    g.partials = PartialsHome::Registers;
    r = dxEarlyRows(g, 2, 1, 512, h);
    check(r.early && r.residentBlocks == 0,
          "dxEarlyRows pipelined: early, nothing asked");
    g.pipeline = 0;
    // 256 programs: two blocks an SM, 128 registers; 32 a lane, late 128
    // (batched loads count an array) fits, early 160 does not.
    g.partials = PartialsHome::Shared;
    g.chunksPerLane = 4;
    r = dxEarlyRows(g, 2, 1, 256, h);
    check(!r.early && r.residentBlocks == 2,
          "dxEarlyRows 32 a lane, 256 programs: late, 2 blocks an SM");
    // One wave at one block an SM: nothing to keep; early.
    r = dxEarlyRows(g, 2, 1, 100, h);
    check(r.early && r.residentBlocks == 0,
          "dxEarlyRows one block an SM: early, nothing asked");
    // Past the thread's ceiling without the early row: late.
    g.chunksPerLane = 12;
    r = dxEarlyRows(g, 2, 1, 256, h);
    check(!r.early && r.residentBlocks == 0,
          "dxEarlyRows past the ceiling: late, nothing asked");
    // ringFit (async-rows): the ring's 16 registers must keep the wave.
    // 8 a lane in two rows, partials in shared memory (estimate 48, 64
    // with the ring): ring, four blocks; 16 a lane (64, 80): four blocks of 256
    // an SM become three: no ring; at 256 programs two blocks (128
    // registers) fit: ring, two; at 100 programs the wave needs one block
    // an SM: ring, nothing asked.
    g.chunksPerLane = 1;
    // One row a block at one chunk a lane: never the ring.
    RingFit f = ringFit(g, 2, 512, h);
    check(!f.ring && f.residentBlocks == 0, "ringFit one row, one chunk");
    // Two rows of 128 lanes.
    g.lanes = 128;
    g.rows = 2;
    f = ringFit(g, 2, 512, h);
    check(f.ring && f.residentBlocks == 4, "ringFit 8 a lane: ring, 4");
    g.lanes = 256;
    g.rows = 1;
    g.chunksPerLane = 2;
    f = ringFit(g, 2, 512, h);
    check(!f.ring && f.residentBlocks == 0, "ringFit 16 a lane: no ring");
    f = ringFit(g, 2, 256, h);
    check(f.ring && f.residentBlocks == 2,
          "ringFit 16 a lane, 256 programs: ring, 2");
    f = ringFit(g, 2, 100, h);
    check(f.ring && f.residentBlocks == 0,
          "ringFit 16 a lane, 100 programs: one block an SM, ring");
    g.chunksPerLane = 12;
    // No early rows: nothing changes; a cluster or the looped regime
    // reads late.
    r = dxEarlyRows(g, 2, 0, 512, h);
    check(r.early && r.residentBlocks == 0, "dxEarlyRows without early rows");
    g.chunksPerLane = 1;
    g.cluster = 2;
    r = dxEarlyRows(g, 2, 1, 512, h);
    check(!r.early && r.residentBlocks == 0, "dxEarlyRows cluster: late");
    g.cluster = 1;
    g.registers = false;
    r = dxEarlyRows(g, 2, 1, 512, h);
    check(!r.early && r.residentBlocks == 0, "dxEarlyRows looped: late");
  }

  // dxWaveBlocks: the blocks an SM that keep a dx kernel's largest launch
  // one wave, where the register estimate and the shared memory fit them
  // (sm_90: 132 SMs, 228 KB an SM).
  {
    TargetInfo h = *TargetInfo::get("sm_90");
    Geometry g = rowBlock256();
    g.chunksPerLane = 2; // 16 a lane, partials in shared: estimate 64
    g.sharedBytes = 32896;
    check(dxWaveBlocks(g, 2, 512, h) == 4,
          "dxWaveBlocks 512 programs at 64 registers: 4");
    check(dxWaveBlocks(g, 2, 256, h) == 2, "dxWaveBlocks 256 programs: 2");
    check(dxWaveBlocks(g, 2, 132, h) == 0,
          "dxWaveBlocks one block an SM: nothing asked");
    // Partials in registers: estimate 96 > 64, nothing asked.
    g.partials = PartialsHome::Registers;
    check(dxWaveBlocks(g, 2, 512, h) == 0,
          "dxWaveBlocks estimate past the budget: nothing asked");
    g.partials = PartialsHome::Shared;
    // Four blocks of 57 KB and the 1 KB reserve do not fit 228 KB.
    g.sharedBytes = 57 * 1024 + 16;
    check(dxWaveBlocks(g, 2, 512, h) == 0,
          "dxWaveBlocks past the SM's shared memory: nothing asked");
    g.sharedBytes = 0;
    g.dynamicSharedBytes = 40 * 1024;
    check(dxWaveBlocks(g, 2, 512, h) == 4,
          "dxWaveBlocks 40 KB dynamic: 4 fit");
    g.sharedBytes = 32896;
    g.dynamicSharedBytes = 0;
    g.cluster = 2;
    check(dxWaveBlocks(g, 2, 512, h) == 0, "dxWaveBlocks cluster: nothing");
    g.cluster = 1;
    g.registers = false;
    check(dxWaveBlocks(g, 2, 512, h) == 0, "dxWaveBlocks looped: nothing");
  }

  // dxLargestPrograms: G at the last M of the rows hint's bucket (edges
  // 128, 512, 2048, 8192), groupCap(N) without a hint or past the edges.
  check(dxLargestPrograms(3000, 0) == 512, "dxLargestPrograms no hint: cap");
  check(dxLargestPrograms(3000, 129) == defaultGroups(512, 3000) &&
            dxLargestPrograms(3000, 129) == 256,
        "dxLargestPrograms hint 129 at N = 3000: G(512) = 256");
  check(dxLargestPrograms(777, 513) == defaultGroups(2048, 777) &&
            dxLargestPrograms(777, 513) == 342,
        "dxLargestPrograms hint 513 at N = 777: G(2048) = 342");
  check(dxLargestPrograms(777, 1) == 128, "dxLargestPrograms hint 1: 128");
  check(dxLargestPrograms(777, 8193) == 512,
        "dxLargestPrograms past the last edge: cap");
  check(dxLargestPrograms(20000, 2049) == 128,
        "dxLargestPrograms never above the cap");

  if (failures)
    std::printf("%d check(s) failed\n", failures);
  else
    std::printf("geometry: all checks passed\n");
  return failures ? 1 : 0;
}
