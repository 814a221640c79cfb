//===- KernelSpec.h - what one execution-test kernel computes ---*- C++ -*-===//
//
// Part of mlir-norm.
//
// A KernelSpec fixes everything that changes the MLIR of a test kernel (op,
// types, optional operands, attributes, static N, form); one compiled kernel
// then runs on many shapes. kernelSource() builds the function with the
// shared builder of norm-compile (norm/Dialect/Norm/Utils/NormFunction.h)
// and prints it; kernelOperands() is its argument order, which the runner
// binds buffers to.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TEST_EXECUTION_KERNELSPEC_H
#define NORM_TEST_EXECUTION_KERNELSPEC_H

#include "StorageTypes.h"

#include "norm/Dialect/Norm/Utils/NormFunction.h"

#include <cstdint>
#include <string>
#include <vector>

namespace norm_exec {

/// LayerNorm or RMSNorm.
enum class OpKind { LayerNorm, RMSNorm };

/// The forward op (y, statistics) or the backward one (dx, dweight, dbias).
enum class Direction { Forward, Grad };

/// The arguments a test kernel may take: the roles of the shared builder
/// (norm/Dialect/Norm/Utils/NormFunction.h), which fixes their order.
using Operand = mlir::norm::NormArgRole;

/// The name an operand has in reports ("dx", "mean", ...).
const char *operandName(Operand o);

/// Everything that changes the MLIR text of one kernel.
struct KernelSpec {
  OpKind op = OpKind::LayerNorm;
  Direction dir = Direction::Grad;
  /// Element type of x, dy, dx, dresidual, y, xhat.
  DType xType = DType::F32;
  /// Element type of weight, bias, dweight and dbias.
  DType paramType = DType::F32;
  /// A weight operand (and, for the grad, a dweight output).
  bool weight = true;
  /// LayerNorm only: a bias operand (forward) / a dbias output (grad).
  bool bias = true;
  /// Grad: a dresidual operand added into dx.
  bool dresidual = false;
  /// The `zero_centered_weight` attribute (needs a weight).
  bool zeroCentered = false;
  /// Rows of x, dy, dx, dresidual, y, xhat are `strided<[?, 1], offset: ?>`.
  bool strided = false;
  /// The tensor op between bufferization.to_tensor and
  /// bufferization.materialize_in_destination, instead of the buffer op.
  bool valueForm = false;
  /// Forward: also write the normalised rows (in x's type).
  bool xhatOut = false;
  /// Forward: the fused residual add (a `residual` input, an `h` output).
  bool residual = false;
  /// N in the types (memref<?x24xbf16>); 0: dynamic.
  int64_t staticN = 0;
  /// Grad: the `#norm.strategy` mnemonic.
  std::string strategy = "deterministic";
  /// Grad: the `groups` attribute; 0: absent.
  int64_t groups = 0;
  /// Rows as [batch, M / batch] (rank-3 x, dy, dx, ...; rank-2 statistics);
  /// 0: [M] rows. Contiguous rows only (not with `strided`).
  int64_t batch = 0;

  bool isLayerNorm() const { return op == OpKind::LayerNorm; }
  bool isGrad() const { return dir == Direction::Grad; }
  /// The op mnemonic without the dialect ("layer_norm_grad", ...).
  std::string opName() const;
};

/// The kernel's arguments in order: inputs, then outputs.
std::vector<Operand> kernelOperands(const KernelSpec &spec);

/// A module with one function `@kernel` (with `llvm.emit_c_interface`) that
/// applies the op described by `spec` to its memref arguments.
std::string kernelSource(const KernelSpec &spec);

} // namespace norm_exec

#endif // NORM_TEST_EXECUTION_KERNELSPEC_H
