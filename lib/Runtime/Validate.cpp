//===- Validate.cpp - tensors checked against the manifest ----------------===//
//
// Part of mlir-norm.
//
// Each message names the argument and gives the expected vs actual value,
// e.g. "'weight': expected shape [4096], got [1024]".
//
//===----------------------------------------------------------------------===//

#include "Validate.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

using namespace mlir::norm::runtime;

static_assert(kMaxRank == NORMRT_MAX_RANK,
              "NormrtTensor holds every rank the manifest reader accepts");

namespace {

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
  return buf;
}

/// "[?, 4096]" for a manifest shape.
std::string formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += shape[i] == kRowsExtent ? "?" : std::to_string(shape[i]);
  }
  return s + "]";
}

/// "[12, 4096]" for `count` sizes or strides.
std::string formatList(const int64_t *values, int32_t count) {
  std::string s = "[";
  for (int32_t i = 0; i < count; ++i) {
    if (i)
      s += ", ";
    s += std::to_string(values[i]);
  }
  return s + "]";
}

/// The first `count` sizes of a tensor, all of them by default.
std::string formatSizes(const NormrtTensor &t, int32_t count = -1) {
  return formatList(t.sizes, count < 0 ? t.rank : count);
}

Status invalid(const ArgumentSpec &a, const std::string &what) {
  return Status::error(NORMRT_ERROR_INVALID_ARGUMENT,
                       "'" + a.name + "': " + what);
}

/// The checks that need only the tensor and its argument.
Status checkTensor(const ArgumentSpec &a, const NormrtTensor &t) {
  int32_t rank = int32_t(a.shape.size());
  if (t.rank != rank)
    return invalid(a, "expected rank " + std::to_string(rank) + ", got " +
                          std::to_string(t.rank));
  if (t.dtype != int32_t(a.dtype)) {
    bool known = t.dtype >= NORMRT_F32 && t.dtype <= NORMRT_BF16;
    return invalid(a, std::string("expected dtype ") + dtypeName(a.dtype) +
                          ", got " +
                          (known ? dtypeName(Dtype(t.dtype))
                                 : "dtype code " + std::to_string(t.dtype)));
  }
  for (int32_t i = 0; i < rank; ++i)
    if (t.sizes[i] < 0)
      return invalid(a, "negative size in " + formatSizes(t));
  for (int32_t i = 0; i < rank; ++i)
    if (a.shape[i] != kRowsExtent && t.sizes[i] != a.shape[i])
      return invalid(a, "expected shape " + formatShape(a.shape) + ", got " +
                            formatSizes(t));
  if (t.strides[rank - 1] != 1)
    return invalid(a, "inner stride must be 1, got " +
                          std::to_string(t.strides[rank - 1]));
  // The strides the kernels compute with instead of the tensor's: static
  // ones from the manifest, contiguous row-major where it gives none. Only
  // where the extent exceeds 1 (a stride there is never multiplied).
  int64_t compact = 1;
  for (int32_t i = rank - 1; i >= 0; --i) {
    int64_t want = a.strides.empty() ? compact : a.strides[size_t(i)];
    if (want != kRowsExtent && t.sizes[i] > 1 && t.strides[i] != want)
      return invalid(a, std::string("the kernels assume ") +
                            (a.strides.empty() ? "contiguous rows"
                                               : "the compiled strides") +
                            ": stride " + std::to_string(i) + " must be " +
                            std::to_string(want) + ", got " +
                            formatList(t.strides, t.rank) +
                            (a.rowRank > 1 ? " (the row extents are viewed as "
                                        "one: they must be contiguous)"
                                      : " (for views, compile with a strided "
                                        "layout, strided<[?, 1], offset: ?>)"));
    // Past 64 bits no stride is right; checkExtent names the overflow.
    if (__builtin_mul_overflow(compact, std::max<int64_t>(t.sizes[i], 1),
                               &compact))
      break;
  }
  bool empty = false;
  for (int32_t i = 0; i < rank; ++i)
    empty |= t.sizes[i] == 0;
  if (empty)
    return Status::success(); // Never dereferenced.
  auto address = reinterpret_cast<uint64_t>(t.data);
  if (!address)
    return invalid(a, "null data pointer");
  uint64_t bytes = uint64_t(dtypeBytes(a.dtype));
  if (address % bytes)
    return invalid(a, "data pointer " + hex(address) + " not aligned to " +
                          std::to_string(bytes) + " bytes");
  return Status::success();
}

/// The checks against the rows argument and the extent of the view. The
/// kernels take M rows of every row argument: [M, N] (the statistics [M]),
/// the row extents of one of rank 3 or more viewed as one.
Status checkExtent(const ArgumentSpec &a, const NormrtTensor &t,
                   const ArgumentSpec &rowsArg, const NormrtTensor &rowsTensor,
                   int64_t m, int64_t n) {
  // Every row argument, also one the manifest gives a static row extent.
  // Each extent, not only their product: the kernels read the row extents
  // of each argument, so [4, 4, N] against [2, 8, N] would be 16 rows of
  // other rows. The reader gave every row argument as many.
  int32_t rowRank = a.rowRank;
  for (int32_t i = 0; a.rows && i < rowRank; ++i) {
    if (t.sizes[i] == rowsTensor.sizes[i])
      continue;
    if (rowRank == 1)
      return invalid(a, "rows " + std::to_string(t.sizes[0]) + " but '" +
                            rowsArg.name + "' has " + std::to_string(m));
    return invalid(a, "rows " + formatSizes(t, rowRank) + " but '" +
                          rowsArg.name + "' has " +
                          formatSizes(rowsTensor, rowRank) +
                          " (each row extent must match, not only their "
                          "product M)");
  }
  int64_t elementBytes = dtypeBytes(a.dtype);
  // Elements from the first to one past the last; a vector (the reader
  // makes every other argument of rank 2 or more a row argument) has unit
  // stride.
  int64_t extent = t.sizes[0];
  if (a.rows && rowRank == 1 && t.rank == 2) {
    // [M, N]: the kernels take the row stride, so rows may be padded.
    int64_t rows = t.sizes[0];
    int64_t stride = t.strides[0];
    // A single row's stride is never used.
    if (rows > 1 && stride < n)
      return invalid(a, "row stride " + std::to_string(stride) +
                            " < N = " + std::to_string(n));
    int64_t product;
    if (__builtin_mul_overflow(rows, stride, &product))
      return invalid(a,
                     "M * stride overflows int64 (M = " + std::to_string(rows) +
                         ", row stride = " + std::to_string(stride) + ")");
    extent = rows ? (rows - 1) * std::max<int64_t>(stride, 0) + t.sizes[1] : 0;
  } else if (a.rows && rowRank > 1) {
    // [B, S, N] (or statistics [B, S]): the compiler views the row extents
    // as one (memref.collapse_shape) only where the memref's layout
    // guarantees that they are contiguous (the identity layout, with
    // dynamic extents), and the kernels then compute the row addresses
    // from the sizes, not from the strides passed: padded rows would be
    // read and written as if contiguous. So the rows must be contiguous;
    // the stride of an extent of 1 is never used.
    int64_t rowLength = rowRank < t.rank ? t.sizes[t.rank - 1] : 1;
    bool empty = false;
    for (int32_t i = 0; i < t.rank; ++i)
      empty |= t.sizes[i] == 0;
    extent = 0;
    if (!empty && __builtin_mul_overflow(m, rowLength, &extent))
      return invalid(a, "M * N overflows int64 (M = " + std::to_string(m) +
                            ", N = " + std::to_string(rowLength) + ")");
    // Every partial product is at most M * rowLength: no overflow.
    int64_t expected = rowLength;
    for (int32_t i = rowRank - 1; !empty && i >= 0; --i) {
      if (t.sizes[i] > 1 && t.strides[i] != expected)
        return invalid(a, "stride " + std::to_string(i) + " must be " +
                              std::to_string(expected) + ", got " +
                              std::to_string(t.strides[i]) + " (strides " +
                              formatList(t.strides, t.rank) +
                              "): the kernels view the row extents " +
                              formatSizes(t, rowRank) + " as " +
                              std::to_string(m) +
                              " contiguous rows and do not read the strides");
      expected *= t.sizes[i];
    }
  }
  int64_t bytes;
  if (__builtin_mul_overflow(extent, elementBytes, &bytes))
    return invalid(a, "the view's size in bytes overflows int64 (" +
                          std::to_string(extent) + " elements of " +
                          std::to_string(elementBytes) + " bytes)");
  uint64_t end;
  if (bytes && __builtin_add_overflow(reinterpret_cast<uint64_t>(t.data),
                                      uint64_t(bytes), &end))
    return invalid(a, "the view (" + std::to_string(bytes) + " bytes from " +
                          hex(reinterpret_cast<uint64_t>(t.data)) +
                          ") wraps around the address space");
  return Status::success();
}

/// Two views are one: the in-place dx = dy.
bool sameView(const ArgumentSpec &a, const NormrtTensor &t,
              const ArgumentSpec &b, const NormrtTensor &u) {
  if (t.data != u.data || a.dtype != b.dtype || t.rank != u.rank)
    return false;
  for (int32_t i = 0; i < t.rank; ++i)
    if (t.sizes[i] != u.sizes[i])
      return false;
  // The stride of an extent of 1 (a single row) is never used.
  for (int32_t i = 0; i < t.rank; ++i)
    if (t.strides[i] != u.strides[i] && t.sizes[i] > 1)
      return false;
  return true;
}

std::string formatRange(const ByteRange &r) {
  return "[" + hex(r.begin) + ", " + hex(r.end) + ")";
}

std::string argumentList(const Manifest &manifest) {
  std::string s;
  for (const ArgumentSpec &a : manifest.arguments)
    s += (s.empty() ? "" : ", ") + a.name;
  return s;
}

} // namespace

ByteRange mlir::norm::runtime::byteRange(const ArgumentSpec &a,
                                         const NormrtTensor &t) {
  // After checkTensor and checkExtent: non-negative sizes, unit inner
  // stride, a positive stride for every other extent above 1 (a row stride
  // >= N, or contiguous rows), and a view that neither overflows nor wraps.
  // So the last element is at sum((size - 1) * stride), and an extent of 1
  // adds nothing whatever its stride.
  int64_t elements = 1;
  for (int32_t i = 0; i < t.rank; ++i) {
    if (!t.sizes[i]) {
      elements = 0;
      break;
    }
    if (t.sizes[i] > 1)
      elements += (t.sizes[i] - 1) * t.strides[i];
  }
  uint64_t begin = reinterpret_cast<uint64_t>(t.data);
  if (!elements)
    return {begin, begin};
  return {begin, begin + uint64_t(elements) * uint64_t(dtypeBytes(a.dtype))};
}

Status mlir::norm::runtime::checkOverlaps(
    const Manifest &manifest, const std::vector<const NormrtTensor *> &bound) {
  size_t count = manifest.arguments.size();
  thread_local std::vector<ByteRange> ranges; // kept: no allocation a call
  ranges.resize(count);
  for (size_t i = 0; i < count; ++i)
    ranges[i] = byteRange(manifest.arguments[i], *bound[i]);
  int32_t dx = manifest.findKind(ArgumentKind::Dx),
          dy = manifest.findKind(ArgumentKind::Dy);
  for (size_t i = 0; i < count; ++i) {
    const ArgumentSpec &a = manifest.arguments[i];
    if (!a.output || ranges[i].empty())
      continue;
    for (size_t j = 0; j < count; ++j) {
      const ArgumentSpec &b = manifest.arguments[j];
      // Output pairs once, from the first of the two.
      if (j == i || (b.output && j < i) || !ranges[i].overlaps(ranges[j]))
        continue;
      bool inPlace = int32_t(i) == dx && int32_t(j) == dy;
      if (inPlace && sameView(a, *bound[i], b, *bound[j]))
        continue;
      std::string rule = "an output may overlap no other argument";
      if (dx >= 0 && dy >= 0)
        rule +=
            std::string(" (only dx may be dy itself") +
            (inPlace ? ": the same pointer, dtype, shape and strides" : "") +
            ")";
      return Status::error(NORMRT_ERROR_INVALID_ARGUMENT,
                           "'" + a.name + "' overlaps '" + b.name +
                               "' (bytes " + formatRange(ranges[i]) + " and " +
                               formatRange(ranges[j]) + "): " + rule);
    }
  }
  return Status::success();
}

Status mlir::norm::runtime::checkWorkspaceOverlaps(
    const Manifest &manifest, const std::vector<const NormrtTensor *> &bound,
    ByteRange workspace) {
  if (workspace.empty())
    return Status::success();
  for (size_t i = 0; i < manifest.arguments.size(); ++i) {
    ByteRange r = byteRange(manifest.arguments[i], *bound[i]);
    if (workspace.overlaps(r))
      return Status::error(
          NORMRT_ERROR_WORKSPACE,
          "the workspace overlaps '" + manifest.arguments[i].name +
              "' (bytes " + formatRange(workspace) + " and " + formatRange(r) +
              "): the workspace may overlap no argument");
  }
  return Status::success();
}

Status mlir::norm::runtime::bindTensors(
    const Manifest &manifest, const NormrtTensor *tensors, int32_t numTensors,
    std::vector<const NormrtTensor *> &bound, int64_t &m) {
  auto error = [](std::string message) {
    return Status::error(NORMRT_ERROR_INVALID_ARGUMENT, std::move(message));
  };
  if (numTensors < 0)
    return error("num_tensors is negative (" + std::to_string(numTensors) +
                 ")");
  if (!tensors && numTensors > 0)
    return error("tensors is NULL but num_tensors is " +
                 std::to_string(numTensors));

  size_t numArguments = manifest.arguments.size();
  bound.assign(numArguments, nullptr);
  thread_local std::vector<int32_t> source; // kept: no allocation a call
  source.assign(numArguments, -1);
  for (int32_t j = 0; j < numTensors; ++j) {
    const NormrtTensor &t = tensors[j];
    int32_t index;
    if (!t.name) {
      if (size_t(j) >= numArguments)
        return error("tensors[" + std::to_string(j) +
                     "] has no name and the function has only " +
                     std::to_string(numArguments) + " arguments");
      index = j;
    } else {
      index = manifest.findArgument(t.name);
      if (index < 0)
        return error("unknown argument '" + std::string(t.name) +
                     "'; the function takes " + argumentList(manifest));
    }
    if (bound[index])
      return error("argument '" + manifest.arguments[index].name +
                   "' given twice (tensors[" + std::to_string(source[index]) +
                   "] and tensors[" + std::to_string(j) + "])");
    bound[index] = &t;
    source[index] = j;
  }
  for (size_t i = 0; i < numArguments; ++i)
    if (!bound[i])
      return error("missing argument '" + manifest.arguments[i].name + "'");

  // M comes from the rows argument, so check it first: the product of its
  // row extents (B * S of a rank-3 'x'), which every row argument repeats.
  const ArgumentSpec &rowsArg = manifest.arguments[manifest.rowsArgument];
  const NormrtTensor &rowsTensor = *bound[manifest.rowsArgument];
  if (Status s = checkTensor(rowsArg, rowsTensor); s.failed())
    return s;
  m = 1;
  for (int32_t i = 0; i < rowsArg.rowRank; ++i)
    m = rowsTensor.sizes[i] ? m : 0;
  for (int32_t i = 0; m && i < rowsArg.rowRank; ++i)
    if (__builtin_mul_overflow(m, rowsTensor.sizes[i], &m))
      return error("'" + rowsArg.name + "': the row count M, the product of " +
                   formatSizes(rowsTensor, rowsArg.rowRank) +
                   ", overflows int64");
  for (size_t i = 0; i < numArguments; ++i)
    if (Status s = checkTensor(manifest.arguments[i], *bound[i]); s.failed())
      return s;
  for (size_t i = 0; i < numArguments; ++i)
    if (Status s = checkExtent(manifest.arguments[i], *bound[i], rowsArg,
                               rowsTensor, m, manifest.n);
        s.failed())
      return s;
  return checkOverlaps(manifest, bound);
}
