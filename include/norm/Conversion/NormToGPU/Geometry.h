//===- Geometry.h - how a row nest is spread over a block -------*- C++ -*-===//
//
// Part of mlir-norm. The geometry of a row kernel (`dx`, `forward`) as a pure
// function of the nest's shape: no IR here, so it is unit-tested on its own
// (test/Conversion/NormToGPU/geometry-test.cpp).
//
// The determinism rule: everything that fixes the order of a dweight/dbias
// sum is a function of (N, element type, strategy, pass options) only. Where
// a decision needs a shared-memory budget, it reads the chip-independent
// kGuaranteedStaticSharedBytes, never TargetInfo::maxStaticSharedBytes.
// The one chip-dependent choice, splitting a row over a thread-block
// cluster (sm_90), is only ever made where the geometry without it takes
// one row at a time per block (rows == 1): there, every regime adds a
// column's contributions in the program's row order, one row after the
// other, so dweight/dbias keep their bits; only dx's in-row sums (over the
// cluster's blocks, then within each) take another order.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_CONVERSION_NORMTOGPU_GEOMETRY_H
#define NORM_CONVERSION_NORMTOGPU_GEOMETRY_H

#include "llvm/Support/MathExtras.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::norm {

struct TargetInfo;

/// Static shared memory every CUDA chip since sm_50 gives a block without
/// opting in. Every TargetInfo's maxStaticSharedBytes is at least this (the
/// geometry test checks it), so a kernel within it runs on every chip.
inline constexpr int64_t kGuaranteedStaticSharedBytes = 48 * 1024;

/// The share of it the `deterministic` partial rows may take in shared
/// memory; the rest is left to the reductions' scratch (at most 8 KB:
/// 2 x 32 warps x 4 bytes a sum, the cluster's slots). 40 KB, not the 32
/// it was: the S = 1 kernels whose partial rows take 32-40 KB (LayerNorm
/// bf16 N = 4097-5120, RMSNorm 8193-10240) then free the registers those
/// rows took. Measured (bench/RESULTS.md): RMSNorm 17895 x 10000 170 ->
/// 127 registers, 49% -> 70% of copy; LayerNorm 34943 x 5120 225 -> 128
/// registers, 54% -> 51% (its shared-memory traffic for two partial rows
/// eats what the occupancy gives).
inline constexpr int64_t kPartialsSharedBytes =
    kGuaranteedStaticSharedBytes - 8 * 1024;

/// Shared memory, static plus dynamic, every chip we know lets a block
/// have once its kernel opts in: the smallest TargetInfo::maxOptInSharedBytes
/// (sm_86 and sm_89: 99 KB; the geometry test checks every chip's is at
/// least this). Chip-independent like the budget above, so the geometry
/// stays a function of N, the element type, the strategy and the options.
inline constexpr int64_t kGuaranteedOptInSharedBytes = 99 * 1024;

/// The share of it one-row-at-a-time (S = 1) `deterministic` partial rows
/// may take as dynamic shared memory when they pass kPartialsSharedBytes:
/// the rest is the static scratch (at most 8 KB). Below it, such rows
/// would live in registers (two or three more arrays of the lane's share:
/// 128-240 registers at LayerNorm 5120-16384, RMSNorm 12288-16384, one
/// block an SM); in shared memory the dx kernel keeps the two row caches.
inline constexpr int64_t kDynamicPartialsSharedBytes =
    kGuaranteedOptInSharedBytes - 8 * 1024;

/// How a nest combines its rows' contributions to dweight/dbias, as far as
/// the geometry cares (the nest's norm.strategy; None for the forward and
/// for ops without dweight/dbias).
enum class PartialSums { None, Deterministic, Atomic, Locked };

/// Where a kernel keeps its running `deterministic` partial sums.
enum class PartialsHome {
  None,      // no deterministic partial rows
  Registers, // private arrays; with S > 1 they meet in shared memory [S, N]
  Shared,    // one row in flight: lane-major slots in shared memory
             // (static, or dynamic past kPartialsSharedBytes)
  Global,    // looped regime: the program's partial row, updated in place
};

/// How a row kernel maps a lane's chunks to columns (RowContext.h,
/// `columnOf`), and which bodies it has.
enum class RowLayouts {
  /// One body, vector layout: each chunk takes a 16-byte access when the
  /// launch's rows are aligned (checked per chunk), else element accesses
  /// in the same layout. The looped regime, and a small lane share.
  Vector,
  /// One body, interleaved layout: rows of N * element size not a multiple
  /// of 16 bytes can never all be aligned, so every access is an element
  /// access, coalesced across the lanes.
  Interleaved,
  /// Two bodies under `if (aligned)`: vector layout with the whole groups'
  /// loads issued at once, else interleaved.
  Both,
};

/// A lane share (K V elements) above which a register-regime kernel issues
/// all its whole chunks' loads at once instead of chunk by chunk. Up to it
/// (two 16-byte chunks of bf16), the kernel stays within 64 registers, four
/// 256-thread blocks per SM, whose rows are the bytes in flight; past it,
/// at most two blocks fit, and each thread must keep its own loads in
/// flight together (docs/NOTES.md, the N sweep of issue 9).
inline constexpr int64_t kBatchedLoadsShare = 16;

/// The most chunks a lane of a forward row takes (K), and so the fewest
/// lanes a row spreads over. A forward thread keeps one row cache (x) and
/// no partial sums, so a share of several chunks costs few registers, and
/// above kBatchedLoadsShare its loads are issued together: the bytes in
/// flight per thread grow with K, the in-row sums take fewer shuffle
/// steps, and a row smaller than a block wastes no idle lanes (chunks
/// rounded up to a power of two of lanes). Among the power-of-two lane
/// counts with K <= this and one access of the row's lanes covering at
/// least kForwardRunBytes, the forward takes the one whose chunk slots are
/// best used, ties to fewer lanes (more chunks a lane). Measured
/// (bench/variants.py, bf16, ~1 GiB, max-lanes 8-64 against one chunk a
/// lane; bench/RESULTS.md): N = 384: 57 -> 96% of copy (LayerNorm, 16
/// lanes x 3 chunks), N = 640: 54 -> 96% (16 x 5), N = 1536: 53 -> 97%
/// (32 x 6), RMSNorm 67-84 -> 87-97%; LayerNorm N = 1000 at 16 lanes x 8
/// chunks (118 registers) fell back to 93%. The whole forward sweep: N =
/// 128-2048 at 95-97%; LayerNorm N = 6144 (128 lanes x 6, 122 registers)
/// lost 92 -> 85%.
inline constexpr int64_t kForwardShareChunks = 6;
/// The fewest contiguous bytes of a row one access of its lanes covers
/// under the forward's lane rule (kForwardShareChunks): 4 lanes of 16-byte
/// chunks, or 32 lanes of bf16 elements in the interleaved layout. The
/// first forward sweep with the rule had no such floor: rows of N = 16-32
/// on 1 lane (16 bytes a row per access, half a sector) fell from 84-96%
/// to 63-76%, and N = 100 / 127 (unaligned, interleaved) on 4 lanes (8
/// bytes) from 59-64% to 21-24%; N = 128 on 4 lanes x 4 chunks ran at
/// 95-96%.
inline constexpr int64_t kForwardRunBytes = 64;

/// Threads per block the geometry chooses from when the pass option
/// `threads` is 0, in order of preference on a tie. The one that wastes
/// the fewest chunk slots of a row wins (a slot past the last chunk is an
/// idle lane in every row: N = 5120 bf16 is 640 chunks, 83% of 3 x 256
/// slots and 100% of 5 x 128); only register-regime layouts compete.
inline constexpr int64_t kThreadCandidates[] = {256, 128, 512};
/// Threads per block of the looped regime (no candidate keeps the row in
/// registers, or N is dynamic). A block walks one row at a time and G is
/// about one program per SM there, so the block is all an SM has in
/// flight: ncu on LayerNorm 2731 x 65536 at 256 threads showed 12.5% of
/// the warps active and 24% of DRAM bandwidth. 512, not 1024: every
/// candidate being looped, 512 stays looped (40-63 registers, no spills,
/// ptxas -v, N = 49152-262144), while 1024 threads would put N = 49152 and
/// 65536 in the register regime at 32 registers and spill 3-7 KB.
inline constexpr int64_t kLoopedThreads = 512;

/// Rows of the looped regime whose contributions to the program's partial
/// rows a block adds in one pass (B): the reduction loop of B rows walks
/// the columns once, each thread reads its columns of the P partial rows,
/// adds the B rows' terms in row order and writes them back, where one row
/// at a time read and wrote them for every row. The order of every
/// column's sum is the same (the program's rows, one after the other), so
/// dweight/dbias keep their bits. B is the fewest rows that bring that
/// traffic, 2 x 4 x P / B bytes per element of a row, down to this many
/// bytes (half of what bf16 x and dy take): B = 4 P, 8 for LayerNorm's
/// dweight and dbias, 4 for one partial row. Measured (bench/variants.py,
/// bf16, N = 65537-262144, 512 threads; docs/NOTES.md): LayerNorm B = 1 /
/// 2 / 4 / 8: 6-7% / 10-12% / 12-19% / 13-21% of copy (8 spills 1 KB and
/// still wins); RMSNorm 9-25% / 11-32% / 12-39% / 13-21% (8 spills 0.5-1.4
/// KB: a little ahead at the odd N, far behind at 131072 and 262144). 256
/// threads (no spills at B = 8) lost to 512 everywhere. The B rows'
/// in-row sums meet in one cross-warp step.
inline constexpr int64_t kLoopedPartialBytes = 2;
/// The most rows the `batch-rows` option may ask for.
inline constexpr int64_t kMaxBatchRows = 16;
/// The most waves of rows a block may prefetch into L2 ahead
/// (Geometry::prefetch).
inline constexpr int64_t kMaxPrefetch = 4;
/// Waves of rows a register-regime block loads ahead into registers
/// (Geometry::pipeline).
inline constexpr int64_t kMaxPipeline = 1;

/// Registers a thread of a register-regime kernel needs, estimated: the
/// two row caches (x, dy; f32), the partial sums when they live in
/// registers, the loads in flight when a share above kBatchedLoadsShare
/// issues them at once, and what the index arithmetic and the sums take
/// besides. Against ptxas -v (sm_90, bf16): 64 estimated / 63-64 used at
/// 16 elements in shared memory, 96 / 109-119 at 16 in registers (LayerNorm,
/// 512 threads), 128 / 120 at 32 (RMSNorm, shared), 152 / 159 at 24
/// (LayerNorm, registers).
inline constexpr int64_t kRegisterOverhead = 32;
/// A split block is not to need more registers than this (by the
/// estimate); it is also what ptxas gives a 512-thread block.
inline constexpr int64_t kClusterRegisterLimit = 128;
/// The register file and the threads of an SM (every chip with clusters).
inline constexpr int64_t kRegistersPerSM = 65536;
inline constexpr int64_t kThreadsPerSM = 2048;
/// Resident threads per SM, each with kClusterShare elements of a row, that
/// a split geometry counts as fully busy: four 256-thread blocks of 16
/// elements a lane, which is what LayerNorm N = 4096 (69% of copy) and a
/// split LayerNorm N = 8192 (2 x 256 threads, 62%) run with; a split with
/// one 512-thread block per SM (N = 10000-65536 in the first version) ran
/// at 22-39%.
inline constexpr int64_t kClusterResidentThreads = 1024;
/// The largest lane share of a block of a cluster (elements per thread per
/// row array): one vector body, loads chunk by chunk. ptxas -v, sm_90, on
/// the first version, which allowed up to 64: LayerNorm bf16 at 24
/// elements took 228 registers (N = 10000, 256 threads) or spilled 648
/// bytes (N = 24576, 512 threads), RMSNorm at 32 with its partial row in
/// registers spilled 152-256 bytes (N = 32768-131072); at 16, 64-109
/// registers and no spills.
inline constexpr int64_t kClusterShare = kBatchedLoadsShare;
/// A row is split (chosen) when one block per row loops, or when its
/// register estimate passes maxRegisters by more than this many of its
/// lane-share arrays. The split kernel keeps one row in flight per block
/// and waits at a cluster barrier in every row; measured (bench/variants.py,
/// bf16) it beat the unsplit kernel where that looped (LayerNorm N >=
/// 49152: 7% -> 26-28% of copy; RMSNorm 27% -> 32-35%) or spilled 1.9-5 KB
/// (LayerNorm 20480-32768: 11-34% -> 42-46%), and lost where the unsplit
/// one spilled little or not at all (LayerNorm 5120-16384: 43-53% -> 37-39%;
/// RMSNorm 10000-24576: 48-71% -> 43-50%). The estimates' excess over the
/// ceiling separates the two groups: 104-224 registers, more than two
/// arrays, for the winners; at most 97 and two arrays for the losers.
/// LayerNorm N = 8192 is the exception: 2 x 256 threads won (51% -> 62%)
/// with no spill to remove; prefetching the next row in the split kernel
/// (docs/NOTES.md) is what should move the line.
inline constexpr int64_t kClusterSpillArrays = 2;
/// The portable cluster sizes (2 to 8) the option may force.
inline constexpr int64_t kMaxClusterBlocks = 8;
/// In-row sums a split row may have (LayerNorm's dx has two): each block's
/// share of them goes to a slot its cluster reads, for two rows at a time.
inline constexpr int64_t kClusterSumSlots = 4;

/// What the geometry is chosen from.
struct RowShape {
  std::optional<int64_t> n; // columns, when static
  int64_t elementBytes = 4; // narrowest element type of the row memrefs
  int64_t threads = 256;    // the pass's `threads` option (0: chosen)
  int64_t maxRegisterElements = 64;
  PartialSums partials = PartialSums::None;
  /// f32 partial rows the kernel accumulates (dweight, dbias): 0, 1 or 2.
  int64_t partialRows = 0;
  /// Whether the kernel may split its rows over a cluster: a forward
  /// kernel, or a `dx` kernel of the `deterministic` strategy or without
  /// dweight/dbias (a forward kernel only where `cluster` forces it: the
  /// cost model never splits a forward row).
  bool splittable = false;
  /// The pass's `cluster` option: 0 chosen (when `threads` is 0 too), 1
  /// never, C in [2, 8] a cluster of C (or fewer, as the slices need)
  /// whenever the row is splittable.
  int64_t cluster = 0;
  /// The pass's `batch-rows` option: rows per partial-row update of the
  /// looped regime (0: chosen, kLoopedPartialBytes).
  int64_t batchRows = 0;
  /// The pass's `max-lanes` option: the most lanes a row spreads over (0:
  /// the block).
  int64_t maxLanes = 0;
  /// The pass's `trim-idle-warps` option: a backward row at one chunk a
  /// lane that can be 16-byte aligned keeps only the warps its chunks need
  /// (trimIdleWarps in Geometry.cpp).
  bool trimIdleWarps = true;
  /// The pass's `two-chunk-rows` option: where the cost model gives a
  /// plain backward row a block of 256 lanes at one chunk a lane, lay it
  /// out on 128 lanes at two (twoChunkRowsPay).
  bool twoChunkRows = true;
  /// The pass's `register-partials` option: a deterministic row of one row
  /// in flight keeps its partial rows in registers instead of static
  /// shared memory where they keep the wave (keepPartialsInRegisters).
  bool registerPartials = true;
  /// A forward kernel (one row cache, no partial sums): its lanes per row
  /// follow kForwardShareChunks.
  bool forward = false;
  /// Column vectors the row reads (weight, bias): 0, 1 or 2.
  int64_t columnVectors = 0;
  /// A forward kernel's in-row sums: 2 for LayerNorm's (the mean, then
  /// the variance about it), 1 for RMSNorm's (the mean square); 0 for a
  /// dx kernel. The tuning table's forward entries may name one
  /// (`row_sums`): the two forwards differ in their best geometry.
  int64_t rowSums = 0;
  /// A dx kernel's row caches filled in its first column loop for rows only
  /// a later loop reads (norm-cache-rows' `norm.early_row`: dresidual).
  int64_t earlyRows = 0;
};

/// How a row nest is spread over a block.
struct Geometry {
  int64_t threads = 256; // T
  /// L: lanes per row: a power of two, or, for a row of more than a
  /// warp, whole warps (the backward's: only the warps its chunks need,
  /// trimIdleWarps).
  int64_t lanes = 256;
  int64_t rows = 1;      // S = T / L: rows in flight per block
  int64_t vec = 1;       // V: elements per chunk (one widest access)
  /// Register regime (K unrolled chunks per lane, row caches in private
  /// arrays) when true; looped regime (a block per row, chunk loop, rows
  /// re-read) when false.
  bool registers = false;
  int64_t chunksPerLane = 0; // K, register regime
  std::optional<int64_t> n;
  int64_t warp = 32;        // lanes of a shuffle
  int64_t vectorBytes = 16; // bytes of one chunk access (its alignment)
  PartialsHome partials = PartialsHome::None;
  RowLayouts layouts = RowLayouts::Vector;
  /// Static shared memory of the kernel: partial rows plus the cross-warp
  /// scratch.
  int64_t sharedBytes = 0;
  /// Dynamic shared memory of the kernel (the launch's sharedMemBytes; the
  /// runtime opts the kernel in above 48 KB): the partial rows when they
  /// take more than kPartialsSharedBytes (PartialsHome::Shared, S = 1).
  int64_t dynamicSharedBytes = 0;
  /// Blocks per thread-block cluster that split each row (C; 1: a row is
  /// one block's). With C > 1, block s of a program's cluster owns columns
  /// [s * sliceColumns, (s + 1) * sliceColumns) of every row of the
  /// program, and the in-row sums meet across the cluster in distributed
  /// shared memory, in rank order. The launch has G * C blocks.
  int64_t cluster = 1;
  /// Columns per block of a cluster (K L V; N when cluster == 1).
  int64_t sliceColumns = 0;
  /// Looped regime with its partial rows in global memory: rows whose
  /// terms one read-modify-write of the partial rows adds
  /// (kLoopedPartialBytes); 1 otherwise.
  int64_t batch = 1;
  /// Waves of rows prefetched into L2 ahead of the one being worked on
  /// (cp.async.bulk.prefetch; 0: none). Changes no result bit, so the
  /// tuning table may set it (kMaxPrefetch).
  int64_t prefetch = 0;
  /// PartialsHome::Shared: the partial sums a lane keeps side by side in
  /// the vector layout's body (W: 1, 2 or 4, at most vec), moved W at a
  /// time on the vector path. Changes no result bit, so the tuning table
  /// may set it; 1 (a word a lane) otherwise and by default.
  int64_t partialVector = 1;
  /// Register regime, rows walked in waves (not the forward's one wave):
  /// the global loads of the next wave's row (its chunks of the row
  /// memrefs the first column loop reads, and its row statistics) issued
  /// into registers right after this row's first column loop, before its
  /// in-row sums, so they are in flight while the block reduces and
  /// writes this row (0: none, 1: one wave ahead). Changes no result bit,
  /// so the tuning table may set it (kMaxPipeline).
  int64_t pipeline = 0;
  /// Register regime, 16-bit rows: the row caches of x and dy kept in the
  /// loaded type, extended again at each use (1: an element a private
  /// array entry, which ptxas still gives a 32-bit register of its own;
  /// 2: two elements a 32-bit word, half the registers of f32), or as the
  /// f32 values the first column loop computed with (0). Changes no
  /// result bit (the extension is exact), so the tuning table may set it.
  int64_t narrowCache = 0;
  /// Register regime: the column vectors the row body reads (weight,
  /// bias), a lane's whole chunks of them loaded into registers once, at
  /// the top of the vector layout's body, and used by every row of the
  /// program (1), instead of loaded at each use (0). A forward row's
  /// weight then travels with x instead of after the in-row sums (one
  /// memory round trip less on a row's latency chain), and a block of
  /// several waves reads it once. Changes no result bit (the same values),
  /// so the tuning table may set it.
  int64_t holdColumns = 0;

  /// Warps of one row (> 1: in-row sums take a shared-memory step).
  int64_t warpsPerRow() const { return lanes > warp ? lanes / warp : 1; }
  /// Chunks of a row over the chunk slots its lanes walk (register
  /// regime; 0 otherwise).
  double slotUse() const { return slotUseOver(lanes); }
  /// The lanes the block was chosen with: a row of whole warps trimmed
  /// from a power of two (trimIdleWarps) counts the power of two, which
  /// its lanes never reach half of.
  int64_t chosenLanes() const {
    return lanes > warp ? int64_t(llvm::PowerOf2Ceil(lanes)) : lanes;
  }
  /// slotUse over the chosen lanes: what the cost model picks a block by
  /// and a tuning entry transfers by (trimming idle warps changes
  /// neither choice, so no dweight/dbias bit).
  double chosenSlotUse() const { return slotUseOver(chosenLanes()); }

private:
  double slotUseOver(int64_t l) const {
    if (!registers || !n)
      return 0;
    int64_t chunks = (*n + vec - 1) / vec;
    return double(chunks) / double(chunksPerLane * l * cluster);
  }
};

/// The geometry of a row kernel. `target` supplies the warp and the widest
/// access (the same on every chip it knows) and whether a row may be split
/// over a cluster, never a budget.
Geometry chooseRowGeometry(const RowShape &shape, const TargetInfo &target);

/// Whether the forward kernel of geometry `g` for the row `s` holds its
/// column vectors in registers (Geometry::holdColumns) when built for
/// `rows` rows (the pass's hint; 0: unknown). Held, the weight's and
/// bias's loads travel with x's instead of after the in-row sums: a memory
/// round trip less on a row's latency chain, for a lane's K chunks of them
/// in registers for the whole row. That pays where latency is the kernel's
/// time, a launch whose blocks are all resident at once with the held
/// registers (one wave: target.sms times the blocks an SM holds by
/// heldForwardRegisters), and costs where blocks wait for an SM's
/// registers. Measured (bench/tune.py plans hold and fwd-hold, H200, the
/// grid's configurations with and without, N = 320-49152, M = 1-65536;
/// waves from ptxas -v's registers): at most a quarter of a wave held
/// 1.33x faster in geometric mean, a quarter to a half 1.20x, a half to
/// one 1.12x (0.96x at worst), 1-1.5 waves 0.90x, past 4 waves 0.93x
/// (0.59x at worst: LayerNorm bf16, two blocks an SM became one). The
/// first rule (at most a block an SM) never held a cluster's blocks at M
/// <= 128, where holding them was 1.4-2x faster (RMSNorm 8 x 14336, a
/// cluster of 8: 11.2 -> 5.5 us). A dx kernel holds nothing by default
/// (0.96-0.99x in geometric mean there, 0.68x at worst). Unknown rows:
/// nothing held (the kernel may serve any M).
bool holdColumnsPays(const Geometry &g, const RowShape &s, int64_t rows,
                     const TargetInfo &target);

/// Whether a forward kernel of `threads` threads a block, `rowsPerBlock`
/// rows a block and `cluster` blocks a row (1: none), built for `rows`
/// rows (the pass's hint; 0: unknown), reads its inputs through noalias
/// read-only pointers (norm-restrict-kernel-arguments: `ld.global.nc`,
/// which ptxas moves above the y stores, so a row's weight and bias loads
/// no longer wait behind the previous chunk's store). That takes the
/// registers the moved loads land in: it pays where the launch at the
/// bucket's last M is one wave at full thread occupancy, where a row's
/// latency chain is the kernel's time, and costs past that, where fewer
/// blocks an SM stream less. Measured (bench/tune.py plan restrict, H200,
/// 748 points of every op at bf16 / f16 / f32, N = 256-65536, M = 1-32768,
/// with against without): every kernel restricted 1.006x in geometric mean
/// but LayerNorm forward 0.79-0.86x at M = 8192-32768, N = 2048-4096 (two
/// blocks an SM where there were three); the kernels this rule restricts
/// (264 of the forward points) 1.010x against themselves unrestricted,
/// 0.84-1.29x (pairs of identical kernels: 0.97-1.03x); a tighter rule
/// (half or a quarter of a wave) gained less (1.008x, 1.001x). The
/// backward's kernels measured 1.000-1.002x either way, so they are not
/// restricted. Unknown rows: not restricted.
bool restrictPays(int64_t threads, int64_t rowsPerBlock, int64_t cluster,
                  int64_t rows, const TargetInfo &target);

/// The blocks an SM that the launch restrictPays judges (the bucket's last
/// M) needs resident to be one wave: ceil(blocks / SMs); 0 where
/// restrictPays is false. norm-restrict-kernel-arguments gives it to the
/// kernel as `nvvm.minctasm` (`.minnctapersm`), so the registers the moved
/// loads take cannot push the launch past one wave (RMSNorm bf16 N = 2560,
/// 4 rows a block of 256 threads: 512 blocks at M = 2048 need four an SM;
/// restricted, ptxas gave it 80 registers, three).
int64_t restrictBlocksPerSM(int64_t threads, int64_t rowsPerBlock,
                            int64_t cluster, int64_t rows,
                            const TargetInfo &target);

/// What a `dx` kernel with early rows (row caches norm-cache-rows filled
/// in the first column loop for rows only a later loop reads: dresidual)
/// does with them: keep them or read those rows late again, and the blocks
/// an SM it asks ptxas to keep resident (`.minnctapersm`, 0: none).
struct DxEarlyRows {
  bool early = true;
  int64_t residentBlocks = 0;
};

/// The rule. The geometry was chosen (tuned) for the kernel without the
/// early rows; their registers must not cost it the wave it had. The
/// largest launch, `programs` blocks, is one wave at need = ceil(programs
/// / SMs) blocks an SM, which leaves budget = 65536 / (need x threads)
/// registers a thread. With `late` the register estimate (registerEstimate,
/// plus a lane share for a pipelined row) and `early` that plus a share
/// for each of `earlyRows` rows: early and resident where early fits the
/// budget, late and resident where only late does; otherwise (no wave to
/// keep, or nothing fits) early unless late is already past the thread's
/// ceiling (maxRegisters: the kernel spills without them). A split row
/// (cluster) or the looped regime reads late, as before early rows
/// existed. Measured on the H200 (plan dres, 56 backward kernels with
/// dresidual, N = 512-12288, bf16 / f32, M = 8192 / 65536), against
/// reading late without residency: this rule 0.90x the time (no kernel
/// slower than 1.01x); early rows everywhere 0.93x, up to 1.42x slower
/// where they cost a wave (N = 4096: 64 -> 79 registers, four 256-thread
/// blocks an SM -> three, 512 programs in two waves).
DxEarlyRows dxEarlyRows(const Geometry &g, int64_t partialRows,
                        int64_t earlyRows, int64_t programs,
                        const TargetInfo &target);

/// Whether the cost model loads a dx kernel's next wave of rows ahead
/// (Geometry::pipeline = 1) where neither the option nor the tuning table
/// says: a register-regime kernel with early rows (dresidual: three rows
/// read a row, x, dy and dresidual, all in the first column loop) whose
/// lanes hold one 16-byte chunk of a row each, so a buffered row costs a
/// lane four registers. Measured on the H200 (plan small-g, LayerNorm /
/// RMSNorm bf16, N = 512-2048, M = 16384 and 65536): faster at all 16
/// points with dresidual (LayerNorm 65536 x 768 165.5 -> 151.8 us, 65536 x
/// 1024 190 -> 171), while the plain LayerNorm kernels, two rows read, lose
/// (125 -> 144 us at 768), so it is not asked of them. With two chunks a
/// lane (f32 N = 2048) it lost: LayerNorm 65536 x 2048 with dresidual 547
/// -> 773 us (plan dres).
bool earlyPipelinePays(const Geometry &g, const RowShape &s);

/// Threads a plain backward row takes instead where twoChunkRowsPay holds.
inline constexpr int64_t kTwoChunkThreads = 128;

/// Whether the cost model's `g` for the row `s`, built for the rows hint
/// `rows`, should be laid out again on kTwoChunkThreads lanes at two
/// chunks a lane: a `deterministic` backward row without early rows
/// (dresidual) that took one row of 256 lanes at one chunk a lane (its
/// chunks in (128, 256]: kThreadCandidates' tie between 256 at one chunk
/// and 128 at two goes to 256), rows that can be 16-byte aligned, and a
/// hint past the tuning table's 2048-row edge. S stays 1, so dweight and
/// dbias keep their bits; dx's in-row sums add two chunks a lane first.
/// Each row's per-row steps (statistics, shuffles, barriers, pointer
/// steps: about 130 instructions a lane whatever N) are then paid once for
/// 16 elements instead of 8, and the rows loaded ahead go to the
/// shared-memory ring (ringFit takes two chunks a lane). Measured on the
/// H100 against the table's kernels (plans k2 and k2-holdout, N = 640-2048,
/// M = 4096-65536, bench/tune-sm_90-k2*-h100.json): plain kernels
/// 1.054-1.072x by element type, held out 1.054-1.070x, none below 0.976x;
/// with dresidual 0.97-1.00x, so not there.
bool twoChunkRowsPay(const Geometry &g, const RowShape &s, int64_t rows);

/// The largest launch (programs, G) of a dx kernel over rows of `n`
/// columns built for the rows hint `rows`: G at the last M of the hint's
/// bucket (the tuning table's row edges; G grows with M), or groupCap(n)
/// where the hint is 0 or in the last, unbounded bucket. Measured on the
/// H200 (plan dres-few): judged at groupCap alone, LayerNorm bf16 512 x
/// 3000 kept its early row for a wave of 512 programs it never launches
/// (72 registers, 256 programs of 512 threads in two waves: 1.17x slower
/// than reading late).
int64_t dxLargestPrograms(int64_t n, int64_t rows);
/// The `register-partials` option: a deterministic backward row of one row
/// in flight (no early rows, no cluster) at two chunks a lane or more and
/// a share of at most kBatchedLoadsShare, whose partial rows sit in static
/// shared memory (not side by side: a tuned partial_vector stands), keeps
/// them in registers instead where registerEstimate with them plus the
/// ring's kRingRegisters still keeps the blocks an SM that hold the
/// largest launch of the rows hint's bucket (dxLargestPrograms) in one
/// wave. Each element's partial sums then cost no shared-memory load and
/// store a row. Sets `g` (partials, its shared memory) and returns true
/// where it does. The partial rows' order is one row at a time either
/// way: no dweight/dbias bit changes.
bool keepPartialsInRegisters(Geometry &g, const RowShape &s, int64_t rows,
                             const TargetInfo &target);

/// The registers a forward thread of a register-regime geometry is
/// estimated to need with its column vectors held: its row cache (K V
/// f32), the held chunks as 32-bit words of the row's element type, and
/// kRegisterOverhead; 0 for the looped regime. Against ptxas -v (sm_90,
/// the 152 held forward kernels of plan hold): 17 over to 32 under.
int64_t heldForwardRegisters(const Geometry &g, const RowShape &s);

/// The registers a thread of a register-regime geometry is estimated to
/// need (kRegisterOverhead); 0 for the looped regime.
int64_t registerEstimate(const Geometry &g, int64_t partialRows);

/// Registers a thread the shared-memory ring of async-rows adds to a dx
/// kernel (the ring slots' and the copies' addresses).
inline constexpr int64_t kRingRegisters = 16;

/// Static shared memory left free beside a kernel's own when the ring is
/// placed (the in-row sums' second buffers, RowReduceBlock.cpp, are
/// within it).
inline constexpr int64_t kRingStaticSlack = 2048;

/// Whether a dx kernel's rows go through the shared-memory ring
/// (norm-map-to-gpu async-rows, RowPipeline.cpp), and the blocks an SM to
/// ask ptxas for. Its largest launch (`programs` blocks) is one wave at
/// need = ceil(programs / SMs) blocks an SM; the ring's registers must not
/// cost the kernel blocks of that wave: with the register estimate e, the
/// blocks an SM min(2048, 65536 / e') / threads at e' = e + kRingRegisters
/// must be as many as at e, or need. Resident: need, where e' fits it.
/// Never for one row a block at one chunk a lane (measured: the ring
/// costs more than it hides there).
///
/// The ring's slots go to static shared memory where asyncRows waves fit
/// beside the kernel's own (kGuaranteedStaticSharedBytes), else, with
/// norm-map-to-gpu's ring-dynamic (off by default: 0.83-1.43x by kernel on
/// the H100, docs/GPU.md), to dynamic shared memory after the kernel's own
/// dynamic bytes, within `dynamicBudget`: what the chip lets a block opt in to, and what keeps
/// the blocks an SM the registers allow (min(blocks, need), at least one)
/// in the SM's shared memory. The ring loads the same values either way:
/// no result bit depends on where it lives.
struct RingFit {
  bool ring = false;
  int64_t residentBlocks = 0;
  int64_t dynamicBudget = 0;
};
RingFit ringFit(const Geometry &g, int64_t partialRows, int64_t programs,
                const TargetInfo &target);

/// The blocks an SM a dx kernel without the ring or early rows needs for
/// its largest launch (`programs` blocks) to be one wave, recorded as the
/// kernel's `wave` (0: none): need = ceil(programs / SMs), where need >= 2,
/// need blocks fit the SM's threads and shared memory, and the register
/// estimate fits the budget 65536 / (need x threads). The compiler leaves
/// the registers to the JIT; the runtime (lib/Runtime/Module.cpp fitWaves)
/// asks it for these blocks (`.minnctapersm`) only where its registers
/// fall short (LayerNorm bf16 N = 4096: 512 programs of 256 threads,
/// estimated at 64 registers, given 70: three blocks an SM, 396 programs
/// and then 116). Asked of ptxas everywhere instead, the kernels it
/// already fitted lost up to 7% (their code perturbed, a few bytes
/// spilled); asked only where it fell short, 1.03-1.17x (H100,
/// docs/NOTES.md). norm-map-to-gpu's wave-resident.
int64_t dxWaveBlocks(const Geometry &g, int64_t partialRows, int64_t programs,
                     const TargetInfo &target);

/// The registers ptxas may give a thread of a block of g.threads (255, or
/// the register file over the block): beyond, it spills.
int64_t maxRegisters(const Geometry &g);

/// How well a split geometry uses the chip: the share of its chunk slots
/// with columns, times the row elements its resident threads hold per SM
/// over kClusterResidentThreads x kClusterShare (at most 1).
double clusterScore(const Geometry &g, int64_t partialRows);

/// How much worse (in Geometry::slotUse, a share of the row's chunk slots)
/// a tuning entry's geometry may use its slots at an N of its range than
/// at the N it was measured at and still stand for it (tuningTransfers).
inline constexpr double kTunedSlotLoss = 0.1;

/// Whether a tuning entry with layout knobs (threads, cluster, max-lanes,
/// max-register-elements) measured at one N, where its knobs gave the
/// geometry `tuned`, stands for another N of its range, where they give
/// `g`: the same regime (registers or looped), and chunk slots used at
/// most kTunedSlotLoss worse. Otherwise the measurement says nothing about
/// `g`. Seen (bench/RESULTS.md, fifth session): the forward entry measured
/// at N = 2048 (256 lanes, one chunk a lane, every slot used) served N =
/// 2560 with two chunks a lane and 62% of the slots (LayerNorm 2048 x
/// 2560: 15.4 us, the cost model's geometry 13.5). The lanes and the
/// cluster may follow N: a first version also asked for the same block,
/// lanes, rows and cluster, and dropped the N = 8192 entry's cluster of 8
/// at N = 7168 (7 blocks of the same 128 x 1 slots: LayerNorm backward 64 x
/// 7168 12.0 -> 16.0 us) and the N = 3072 entry's 512 threads over 2 blocks
/// at 2560 (64 x 2560: 10.5 -> 12.4 us).
bool tuningTransfers(const Geometry &tuned, const Geometry &g);

/// Whether two geometries add dweight/dbias in the same order: the same
/// geometry, or one row at a time per block in both (see the rule above).
bool samePartialOrder(const Geometry &a, const Geometry &b);

/// Fills in what follows from a geometry's decisions for the row `s`: N, the
/// warp and access width of `target`, the columns of a cluster's slice, and
/// the static and dynamic shared memory (the same formulas the cost model
/// sizes its own choices with). For a geometry written by hand.
void completeGeometry(Geometry &g, const RowShape &s, const TargetInfo &target);

/// Why the row kernel of `s` cannot be built with `g` on `target`, naming
/// the limit it breaks (registers, shared memory, cluster size, the row's
/// coverage, the strategy's home for its partial rows), or an empty string
/// when it can. `g` is complete (completeGeometry). Checks
/// `s.maxRegisterElements` only when it is positive.
std::string checkGeometry(const Geometry &g, const RowShape &s,
                          const TargetInfo &target);

/// Shared memory the deterministic partial rows take when a kernel of
/// geometry `g` keeps them there: one f32 slot per column and row in flight
/// (S > 1, the combine step), or per lane slot (S = 1). The one formula the
/// budget kPartialsSharedBytes is checked against.
int64_t partialsSharedBytes(const Geometry &g, int64_t partialRows);

} // namespace mlir::norm

#endif // NORM_CONVERSION_NORMTOGPU_GEOMETRY_H
