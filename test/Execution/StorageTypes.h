//===- StorageTypes.h - f32/f16/bf16 storage for execution tests -*- C++
//-*-===//
//
// Part of mlir-norm.
//
// The element types the norm ops store activations and weights in, and exact
// conversions between their bit patterns and double. The execution tests
// round every input to its storage type before computing the float64
// reference, so only decoding has to be exact; encoding rounds to nearest
// even.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TEST_EXECUTION_STORAGETYPES_H
#define NORM_TEST_EXECUTION_STORAGETYPES_H

#include "llvm/ADT/StringRef.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>

namespace norm_exec {

/// A storage element type of the norm ops.
enum class DType { F32, F16, BF16 };

/// The MLIR spelling of `t` ("f32", "f16", "bf16").
inline llvm::StringRef dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  }
  return "?";
}

/// Parses an MLIR spelling; nullopt for anything else.
inline std::optional<DType> parseDType(llvm::StringRef s) {
  if (s == "f32")
    return DType::F32;
  if (s == "f16")
    return DType::F16;
  if (s == "bf16")
    return DType::BF16;
  return std::nullopt;
}

/// Bytes per element.
inline unsigned dtypeBytes(DType t) { return t == DType::F32 ? 4 : 2; }

/// The unit roundoff of `t`: the largest relative error of rounding a normal
/// number to nearest (2^-24, 2^-11, 2^-8).
inline double unitRoundoff(DType t) {
  switch (t) {
  case DType::F32:
    return std::ldexp(1.0, -24);
  case DType::F16:
    return std::ldexp(1.0, -11);
  case DType::BF16:
    return std::ldexp(1.0, -8);
  }
  return 0;
}

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

/// float -> bf16 bits, round to nearest even; NaN stays a quiet NaN.
inline uint16_t floatToBF16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float bf16ToFloat(uint16_t h) {
  return bitsFloat(static_cast<uint32_t>(h) << 16);
}

/// float -> IEEE half bits, round to nearest even, with subnormals and
/// overflow to infinity.
inline uint16_t floatToF16(float f) {
  uint32_t u = floatBits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) // inf or NaN
    return sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u);
  if (a >= 0x477ff000u) // >= 65520 rounds to infinity
    return sign | 0x7c00u;
  if (a < 0x38800000u) { // below 2^-14: a subnormal half (or zero)
    // a * 2^24 is exact and < 2^10; nearbyint rounds to nearest even. A
    // result of 0x400 is the smallest normal, which is also correct.
    float scaled = bitsFloat(a) * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  uint32_t h = ((((a >> 23) - 127 + 15) << 10) | ((a & 0x7fffffu) >> 13));
  uint32_t rest = a & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h; // may carry into the exponent: still correct
  return sign | static_cast<uint16_t>(h);
}

inline float f16ToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  if (e == 0) {
    float v = std::ldexp(static_cast<float>(m), -24);
    return sign ? -v : v;
  }
  if (e == 31)
    return bitsFloat(sign | 0x7f800000u | (m << 13));
  return bitsFloat(sign | ((e - 15 + 127) << 23) | (m << 13));
}

/// Bit pattern of `v` rounded to `t` (in the low bits).
inline uint32_t encode(DType t, double v) {
  float f = static_cast<float>(v);
  switch (t) {
  case DType::F32:
    return floatBits(f);
  case DType::F16:
    return floatToF16(f);
  case DType::BF16:
    return floatToBF16(f);
  }
  return 0;
}

/// The exact value of the bit pattern `bits` of type `t`.
inline double decode(DType t, uint32_t bits) {
  switch (t) {
  case DType::F32:
    return bitsFloat(bits);
  case DType::F16:
    return f16ToFloat(static_cast<uint16_t>(bits));
  case DType::BF16:
    return bf16ToFloat(static_cast<uint16_t>(bits));
  }
  return 0;
}

/// `v` rounded to `t`, as a double.
inline double roundTo(DType t, double v) { return decode(t, encode(t, v)); }

/// A quiet NaN with a recognisable payload: what outputs are filled with
/// before a run, so that an element the kernel does not write fails.
inline uint32_t poisonBits(DType t) {
  switch (t) {
  case DType::F32:
    return 0x7fc0deadu;
  case DType::F16:
    return 0x7e5au;
  case DType::BF16:
    return 0x7fdau;
  }
  return 0;
}

} // namespace norm_exec

#endif // NORM_TEST_EXECUTION_STORAGETYPES_H
