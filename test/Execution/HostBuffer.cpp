//===- HostBuffer.cpp - host arrays passed to test kernels ----------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "HostBuffer.h"

#include <cassert>

#include <cstring>

using namespace norm_exec;

HostBuffer HostBuffer::matrix(DType type, int64_t rows, int64_t cols,
                              int64_t offset, int64_t rowPad) {
  HostBuffer b;
  b.elementType = type;
  b.rank = 2;
  b.numRows = rows;
  b.numCols = cols;
  b.rowStride = cols + rowPad;
  b.offset = offset;
  int64_t elements = offset + rows * b.rowStride + kTailGuard;
  b.bytes.assign(elements * dtypeBytes(type), kGuardByte);
  return b;
}

HostBuffer HostBuffer::vector(DType type, int64_t size) {
  HostBuffer b = matrix(type, 1, size);
  b.rank = 1;
  return b;
}

uint32_t HostBuffer::getBits(int64_t i, int64_t j) const {
  const uint8_t *p = bytes.data() + index(i, j) * dtypeBytes(elementType);
  if (elementType == DType::F32) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

void HostBuffer::setBits(int64_t i, int64_t j, uint32_t bits) {
  uint8_t *p = bytes.data() + index(i, j) * dtypeBytes(elementType);
  if (elementType == DType::F32) {
    std::memcpy(p, &bits, 4);
    return;
  }
  uint16_t v = static_cast<uint16_t>(bits);
  std::memcpy(p, &v, 2);
}

void HostBuffer::setValues(const std::vector<double> &v) {
  for (int64_t i = 0; i < numRows; ++i)
    for (int64_t j = 0; j < numCols; ++j)
      set(i, j, v[i * numCols + j]);
}

void HostBuffer::poison() {
  if (bytes.empty()) // M = 0: nothing to poison (memset of null is undefined)
    return;
  unsigned width = dtypeBytes(elementType);
  if (rowStride != numCols || offset != 0)
    std::memset(bytes.data(), kGuardByte, bytes.size());
  else // only the tail is outside the view
    std::memset(bytes.data() + size() * width, kGuardByte,
                bytes.size() - size() * width);
  // One poisoned row, copied into each row of the view.
  uint32_t nan = poisonBits(elementType);
  std::vector<uint8_t> row(numCols * width);
  for (int64_t j = 0; j < numCols; ++j)
    std::memcpy(row.data() + j * width, &nan, width); // little endian
  // memcpy from an empty vector's null data() is undefined even for 0
  // bytes (UBSan): M = 0 or N = 0 has no row to poison.
  if (row.empty())
    return;
  for (int64_t i = 0; i < numRows; ++i)
    std::memcpy(bytes.data() + index(i, 0) * width, row.data(), row.size());
}

void HostBuffer::copyFrom(const HostBuffer &other) {
  if (!bytes.empty())
    std::memcpy(bytes.data(), other.bytes.data(), bytes.size());
}

bool HostBuffer::sameBytes(const HostBuffer &other) const {
  return bytes.size() == other.bytes.size() &&
         std::memcmp(bytes.data(), other.bytes.data(), bytes.size()) == 0;
}

bool HostBuffer::sameView(const HostBuffer &other) const {
  size_t rowBytes = numCols * dtypeBytes(elementType);
  for (int64_t i = 0; i < numRows; ++i) {
    size_t at = index(i, 0) * dtypeBytes(elementType);
    if (std::memcmp(bytes.data() + at, other.bytes.data() + at, rowBytes))
      return false;
  }
  return true;
}

bool HostBuffer::inView(int64_t e) const {
  int64_t rel = e - offset;
  if (rel < 0 || rel >= numRows * rowStride)
    return false;
  return rel % rowStride < numCols;
}

std::optional<int64_t> HostBuffer::brokenGuard() const {
  unsigned width = dtypeBytes(elementType);
  int64_t elements = bytes.size() / width;
  for (int64_t e = 0; e < elements; ++e) {
    // Skip whole rows of the view quickly.
    if (inView(e)) {
      e = offset + ((e - offset) / rowStride) * rowStride + numCols - 1;
      continue;
    }
    for (unsigned k = 0; k < width; ++k)
      if (bytes[e * width + k] != kGuardByte)
        return e;
  }
  return std::nullopt;
}

namespace {
template <typename T, int Rank>
StridedMemRefType<T, Rank> makeDescriptor(uint8_t *base, int64_t offset,
                                          int64_t rows, int64_t cols,
                                          int64_t rowStride) {
  StridedMemRefType<T, Rank> d;
  d.basePtr = reinterpret_cast<T *>(base);
  d.data = reinterpret_cast<T *>(base);
  d.offset = offset;
  if constexpr (Rank == 1) {
    d.sizes[0] = cols;
    d.strides[0] = 1;
  } else {
    d.sizes[0] = rows;
    d.sizes[1] = cols;
    d.strides[0] = rowStride;
    d.strides[1] = 1;
  }
  return d;
}
} // namespace

void HostBuffer::splitRows(int64_t b) {
  [[maybe_unused]] int64_t rows = rank == 1 ? numCols : numRows;
  assert(b > 0 && rows % b == 0 && "the batch must divide the rows");
  assert((rank == 1 || rowStride == numCols) && "split rows are contiguous");
  batch = b;
}

void *HostBuffer::descriptor() {
  uint8_t *base = bytes.data();
  // The descriptor's element type only sizes its pointers: f32 or 16 bits.
  auto make = [&](auto element) {
    using T = decltype(element);
    if (batch && rank == 1) {
      // [M] statistics as [B, M / B].
      StridedMemRefType<T, 2> d = makeDescriptor<T, 2>(
          base, offset, batch, numCols / batch, numCols / batch);
      desc = d;
    } else if (batch) {
      // [M, N] rows as [B, M / B, N].
      StridedMemRefType<T, 3> d;
      d.basePtr = d.data = reinterpret_cast<T *>(base);
      d.offset = offset;
      d.sizes[0] = batch;
      d.sizes[1] = numRows / batch;
      d.sizes[2] = numCols;
      d.strides[0] = (numRows / batch) * rowStride;
      d.strides[1] = rowStride;
      d.strides[2] = 1;
      desc = d;
    } else if (rank == 1) {
      desc = makeDescriptor<T, 1>(base, offset, numRows, numCols, rowStride);
    } else {
      desc = makeDescriptor<T, 2>(base, offset, numRows, numCols, rowStride);
    }
  };
  if (elementType == DType::F32)
    make(float());
  else
    make(uint16_t());
  return std::visit([](auto &d) -> void * { return &d; }, desc);
}
