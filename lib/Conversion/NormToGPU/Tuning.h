//===- Tuning.h - measured geometry choices per chip family -----*- C++ -*-===//
//
// Part of mlir-norm. Private to lib/Conversion/NormToGPU.
//
// A tuning table (tuning/<family>.json, embedded at build time) lists, per
// row kernel, N range and range of rows M, the cost model's knobs
// (threads, cluster, max-lanes, max-register-elements) that bench/tune.py measured faster on that chip
// family than the cost model's own choice. norm-choose-geometry consults it
// before the cost model and keeps an entry's geometry only where it adds
// the dweight/dbias partial sums in the cost model's order
// (samePartialOrder), so no entry can change those bits; chips without a
// table, rows it does not cover and a disabled table (`tuning=false`) get
// the cost model. docs/GPU.md "The tuning table".
//
//===----------------------------------------------------------------------===//

#ifndef NORM_LIB_CONVERSION_NORMTOGPU_TUNING_H
#define NORM_LIB_CONVERSION_NORMTOGPU_TUNING_H

#include "norm/Conversion/NormToGPU/Geometry.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace mlir::norm {

/// The rows M where an entry's M range may end: a range is [1 or e + 1,
/// e' or unbounded] for edges e < e' here (the geometric midpoints of the
/// M bench/tune.py's table plans measure: 64, 256, 1024, 4096, 16384). So
/// every M between two edges gets the same entries, and a cache of
/// compiled kernels (norm_mlir.torch, libnormtorch: their _ROW_EDGES /
/// kRowEdges, checked against this by python/tests) keys by the bucket,
/// compiling with its first M as the `rows` hint.
inline constexpr int64_t kTuningRowEdges[] = {128, 512, 2048, 8192};

/// One measured choice.
struct TuningEntry {
  /// The row kernel: a forward kernel, else a dx kernel with this many
  /// deterministic partial rows (1: RMSNorm or LayerNorm without bias, 2:
  /// LayerNorm); 0 matches any dx kernel.
  bool forward = false;
  int64_t partialRows = 0;
  /// Bytes of the row's narrowest element (2: bf16 and f16, 4: f32).
  int64_t elementBytes = 2;
  /// Inclusive ranges; rowsHi 0 means no upper bound.
  int64_t nLo = 1, nHi = 0;
  int64_t rowsLo = 1, rowsHi = 0;
  /// The knobs, as the pass options would give them (0: the cost model's):
  /// threads, cluster, max-lanes, max-register-elements (with cluster: the
  /// looped row split over a cluster where the slice's share exceeds it).
  int64_t threads = 0;
  int64_t cluster = 0;
  int64_t maxLanes = 0;
  int64_t maxRegisterElements = 0;
  /// Waves of rows prefetched into L2 (Geometry::prefetch; 0: none).
  int64_t prefetch = 0;
  /// Shared partial sums a lane keeps side by side
  /// (Geometry::partialVector: 1, 2 or 4).
  int64_t partialVector = 1;
  /// Waves of rows loaded ahead into registers (Geometry::pipeline; 0:
  /// none).
  int64_t pipeline = 0;
  /// Row caches in the loaded type (Geometry::narrowCache; 0: f32).
  int64_t narrowCache = 0;
  /// Column vectors held in registers (Geometry::holdColumns: 0 or 1; -1,
  /// the key absent: the cost model's).
  int64_t holdColumns = -1;
  /// A forward entry's kernel: 1 RMSNorm's, 2 LayerNorm's (RowShape::
  /// rowSums); 0 either.
  int64_t rowSums = 0;
  /// The N the entry's knobs were measured at (0, the key absent: not
  /// known). At another N of its range the entry stands only where its
  /// knobs lay the row out as they did there (tuningTransfers).
  int64_t tunedN = 0;
};

/// The chip family whose table serves `chip` ("sm_90" for sm_90 and
/// sm_90a), or empty when none has one.
llvm::StringRef tuningFamily(llvm::StringRef chip);

/// Parses a table (the JSON of tuning/<family>.json); an error names the
/// entry and key at fault.
llvm::Expected<std::vector<TuningEntry>> parseTuningTable(llvm::StringRef json);

/// The embedded table of `family` (empty for a family without one). The
/// embedded tables are checked at build time by the geometry test, so this
/// never fails at run time.
llvm::ArrayRef<TuningEntry> tuningTable(llvm::StringRef family);

/// The first entry of `table` for the row `s` at `rows` rows (0: unknown,
/// which only entries for every M match).
const TuningEntry *findTuning(llvm::ArrayRef<TuningEntry> table,
                              const RowShape &s, int64_t rows);

} // namespace mlir::norm

#endif // NORM_LIB_CONVERSION_NORMTOGPU_TUNING_H
