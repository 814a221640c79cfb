//===- HostBuffer.h - host arrays passed to test kernels --------*- C++ -*-===//
//
// Part of mlir-norm.
//
// A HostBuffer is a rank-1 or rank-2 array in a storage type, placed in a
// larger allocation the way a memref view is: `offset` elements before it,
// `rowPad` elements after each row, and a tail behind it. Everything outside
// the view holds a guard pattern, so a kernel that writes outside its view
// (or into an input) is caught. The buffer hands out the StridedMemRefType
// descriptor that `_mlir_ciface_kernel` takes.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TEST_EXECUTION_HOSTBUFFER_H
#define NORM_TEST_EXECUTION_HOSTBUFFER_H

#include "StorageTypes.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

namespace norm_exec {

class HostBuffer {
public:
  /// Elements of guard behind the view.
  static constexpr int64_t kTailGuard = 8;
  /// The byte every guard element is filled with.
  static constexpr uint8_t kGuardByte = 0xa5;

  HostBuffer() = default;

  /// A [rows, cols] view with row stride `cols + rowPad`, starting `offset`
  /// elements into its allocation.
  static HostBuffer matrix(DType type, int64_t rows, int64_t cols,
                           int64_t offset = 0, int64_t rowPad = 0);
  /// A [size] contiguous vector.
  static HostBuffer vector(DType type, int64_t size);

  DType type() const { return elementType; }
  int64_t rows() const { return numRows; }
  int64_t cols() const { return numCols; }
  /// Number of elements in the view.
  int64_t size() const { return numRows * numCols; }

  /// Element (i, j) of the view; vectors have the single row i = 0.
  uint32_t getBits(int64_t i, int64_t j) const;
  void setBits(int64_t i, int64_t j, uint32_t bits);
  double get(int64_t i, int64_t j) const {
    return decode(elementType, getBits(i, j));
  }
  void set(int64_t i, int64_t j, double v) {
    setBits(i, j, encode(elementType, v));
  }

  /// Sets the view from row-major values (rounding them to the type).
  void setValues(const std::vector<double> &v);

  /// Guards everywhere, then NaN (poisonBits) in every view element.
  void poison();
  /// Copies the whole allocation of a buffer of the same geometry.
  void copyFrom(const HostBuffer &other);
  /// True when the whole allocations are bitwise equal.
  bool sameBytes(const HostBuffer &other) const;
  /// True when the view elements are bitwise equal.
  bool sameView(const HostBuffer &other) const;
  /// The first allocation element outside the view that lost its guard
  /// pattern, if any.
  std::optional<int64_t> brokenGuard() const;

  /// Describes the view with its rows split into [batch, rows / batch]
  /// (a rank-3 [B, S, N] matrix, or rank-2 [B, S] statistics for a vector
  /// of M); the elements and their order do not change. Needs contiguous
  /// rows and `batch` dividing the row count.
  void splitRows(int64_t batch);

  /// The StridedMemRefType<T, rank> descriptor of the view (T = float or
  /// uint16_t), valid until the buffer moves or is destroyed.
  void *descriptor();

private:
  int64_t index(int64_t i, int64_t j) const {
    return offset + i * rowStride + j;
  }
  bool inView(int64_t e) const;

  DType elementType = DType::F32;
  int rank = 1;
  int64_t numRows = 0, numCols = 0, rowStride = 0, offset = 0;
  int64_t batch = 0; // splitRows; 0: not split
  std::vector<uint8_t> bytes;
  std::variant<StridedMemRefType<float, 1>, StridedMemRefType<float, 2>,
               StridedMemRefType<float, 3>, StridedMemRefType<uint16_t, 1>,
               StridedMemRefType<uint16_t, 2>, StridedMemRefType<uint16_t, 3>>
      desc;
};

} // namespace norm_exec

#endif // NORM_TEST_EXECUTION_HOSTBUFFER_H
