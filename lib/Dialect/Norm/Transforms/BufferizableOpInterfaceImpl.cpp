//===- BufferizableOpInterfaceImpl.cpp - bufferization of norm ops --------===//
//
// Part of mlir-norm.
//
// External BufferizableOpInterface models that let One-Shot Bufferize turn
// the value form of every norm op into its buffer form: each tensor operand
// is read in place (never written, aliasing no result), and each tensor
// result gets a fresh, identity-layout buffer that becomes the matching
// `*_out` operand. One model serves all four ops.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/Transforms/BufferizableOpInterfaceImpl.h"

#include "norm/Dialect/Norm/IR/NormDialect.h"
#include "norm/Dialect/Norm/IR/NormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"

#include <type_traits>

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::norm;

namespace {

/// The activation every output's shape is derived from: `x` for a forward
/// op, `x` or the stored `xhat` for a grad op.
template <typename OpTy>
Value getReferenceInput(OpTy op) {
  if constexpr (isGrad<OpTy>())
    return op.getInput();
  else
    return op.getX();
}

/// For dimension `dim` of an output of rank `rank`, the dimension of the
/// reference activation (of rank `refRank`) it equals. An output of the
/// reference's rank (y, xhat, dx) is shaped like it; a forward op's other
/// outputs are row statistics (mean, rstd: the leading dims); a grad op's
/// other outputs are per-feature vectors (dweight, dbias: `[N]`).
template <typename OpTy>
int64_t getReferenceDim(int64_t rank, int64_t refRank, int64_t dim) {
  if (rank == refRank)
    return dim;
  if constexpr (isGrad<OpTy>())
    return refRank - 1;
  else
    return dim;
}

/// Bufferization of a norm op (forward or grad, LayerNorm or RMSNorm).
///
/// The value form lists the inputs first and has no `*_out` operands; the
/// last operand segments are the `*_out` buffers, in the order of the result
/// segments. Bufferizing keeps the input segments, moves each result segment
/// to its `*_out` operand segment, and copies every attribute, so the same
/// code serves all four ops.
template <typename OpTy>
struct NormOpInterface
    : public BufferizableOpInterface::ExternalModel<NormOpInterface<OpTy>,
                                                    OpTy> {
  bool bufferizesToMemoryRead(Operation *op, OpOperand &opOperand,
                              const AnalysisState &state) const {
    return true;
  }

  bool bufferizesToMemoryWrite(Operation *op, OpOperand &opOperand,
                               const AnalysisState &state) const {
    return false;
  }

  AliasingValueList getAliasingValues(Operation *op, OpOperand &opOperand,
                                      const AnalysisState &state) const {
    return {};
  }

  /// Every result is written to a buffer of its own.
  bool bufferizesToAllocation(Operation *op, Value value) const { return true; }

  /// A result bufferizes to a fresh buffer with the identity layout in the
  /// default memory space.
  FailureOr<BufferLikeType>
  getBufferType(Operation *op, Value value, const BufferizationOptions &options,
                const BufferizationState &state,
                SmallVector<Value> &invocationStack) const {
    auto tensorType = cast<TensorType>(value.getType());
    std::optional<Attribute> memorySpace =
        options.defaultMemorySpaceFn(tensorType);
    if (!memorySpace)
      return op->emitError("could not infer memory space");
    return cast<BufferLikeType>(
        getMemRefTypeWithStaticIdentityLayout(tensorType, *memorySpace));
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto normOp = cast<OpTy>(op);
    Location loc = op->getLoc();

    // Inputs: the buffers of the tensor operands, read in place.
    Value refInput = getReferenceInput(normOp);
    Value refBuffer;
    SmallVector<Value> operands;
    for (Value operand : op->getOperands()) {
      FailureOr<Value> buffer = getBuffer(rewriter, operand, options, state);
      if (failed(buffer))
        return failure();
      operands.push_back(*buffer);
      if (operand == refInput)
        refBuffer = *buffer;
    }

    // Outputs: a fresh buffer per result, its dynamic sizes read off the
    // reference activation's buffer (each dim read once).
    int64_t refRank = cast<MemRefType>(refBuffer.getType()).getRank();
    SmallVector<Value> refSizes(refRank);
    SmallVector<Value> results;
    for (OpResult result : op->getResults()) {
      FailureOr<BufferLikeType> bufferType =
          bufferization::getBufferType(result, options, state);
      if (failed(bufferType))
        return failure();
      auto memrefType = cast<MemRefType>(*bufferType);
      SmallVector<Value> dynamicSizes;
      for (auto [dim, size] : llvm::enumerate(memrefType.getShape())) {
        if (!ShapedType::isDynamic(size))
          continue;
        int64_t refDim =
            getReferenceDim<OpTy>(memrefType.getRank(), refRank, dim);
        if (!refSizes[refDim])
          refSizes[refDim] =
              memref::DimOp::create(rewriter, loc, refBuffer, refDim);
        dynamicSizes.push_back(refSizes[refDim]);
      }
      FailureOr<Value> alloc =
          options.createAlloc(rewriter, loc, memrefType, dynamicSizes);
      if (failed(alloc))
        return failure();
      results.push_back(*alloc);
    }

    // Buffer form: the result segments become the trailing `*_out` operand
    // segments; no results remain.
    typename OpTy::Properties properties = normOp.getProperties();
    auto &operandSegments = properties.operandSegmentSizes;
    auto &resultSegments = properties.resultSegmentSizes;
    size_t firstOut = operandSegments.size() - resultSegments.size();
    for (size_t i = 0, e = resultSegments.size(); i < e; ++i) {
      operandSegments[firstOut + i] = resultSegments[i];
      resultSegments[i] = 0;
    }
    operands.append(results);
    OpTy::create(rewriter, loc, TypeRange(), operands, properties,
                 llvm::to_vector(op->getDiscardableAttrs()));
    replaceOpWithBufferizedValues(rewriter, op, results);
    return success();
  }
};

/// Attaches the model to each op in `OpTys`.
template <typename... OpTys>
void attachNormOpInterfaces(MLIRContext *ctx) {
  (OpTys::template attachInterface<NormOpInterface<OpTys>>(*ctx), ...);
}

} // namespace

void mlir::norm::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, NormDialect *dialect) {
    attachNormOpInterfaces<LayerNormOp, RMSNormOp, LayerNormGradOp,
                           RMSNormGradOp>(ctx);
    // Bufferizing creates memref.alloc / memref.dim (and arith.constant
    // indices for the latter).
    ctx->loadDialect<arith::ArithDialect, memref::MemRefDialect>();
  });
}
