//===- BufferizableOpInterfaceImpl.h - bufferization of norm ops -*- C++ -*-===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECT_NORM_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
#define NORM_DIALECT_NORM_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;

namespace norm {
/// Lets One-Shot Bufferize turn value-form norm ops into buffer-form ones:
/// inputs are read in place, each output gets a fresh buffer.
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);
} // namespace norm
} // namespace mlir

#endif // NORM_DIALECT_NORM_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
