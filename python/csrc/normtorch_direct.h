//===- normtorch_direct.h - op bodies without the dispatcher ----*- C++ -*-===//
//
// Part of mlir-norm. The table libnormtorch.so (torch_ops.cpp) exports as
// normtorch_direct() and norm_mlir.torch hands to libnormtorch_autograd.so
// (torch_autograd.cpp, normtorch_autograd_set_direct): the op bodies the
// dispatcher runs for the CUDA key (the CPU key in the CPU tests), callable
// with borrowed tensor handles, so the autograd kernels reach them without
// the dispatcher's boxed call (an IValue stack, a new at::Tensor per
// argument, a torch::stable::Tensor and its shared_ptr per argument and
// result) where the dispatcher would call exactly these bodies: no dispatch
// mode, Python dispatcher, tensor subclass, fake or meta tensor,
// functionalization, functorch layer, tracer or profiler observer around,
// and libnormtorch's registration for the tensors' device type live
// (`registered`). The autograd kernels decide that; elsewhere they call the
// ops as before.
//
// A handle is an AtenTensorHandle (the stable C shim's: an at::Tensor * of
// the running torch). Inputs are borrowed (NULL: an absent optional
// tensor); outputs are new handles the caller owns (NULL where the body
// makes none). The functions throw what the boxed ops throw (the bodies'
// std::runtime_error "norm_mlir: ..."; the stable ABI's boxed kernels let
// it through to the dispatcher's caller alike), so errors are the same
// either way.
//
//===----------------------------------------------------------------------===//

#ifndef NORMTORCH_DIRECT_H
#define NORMTORCH_DIRECT_H

#include <torch/csrc/inductor/aoti_torch/c/macros.h> // AtenTensorHandle

#include <cstdint>

#define NORMTORCH_DIRECT_VERSION 1u

/// op: a norm (both directions).
enum NormtorchDirectOp : int32_t {
  NORMTORCH_LAYER_NORM = 0,
  NORMTORCH_RMS_NORM = 1,
};

struct NormtorchDirect {
  uint32_t version; // NORMTORCH_DIRECT_VERSION
  uint32_t size;    // sizeof(NormtorchDirect)
  /// 1 where the bodies are the registered kernels of the ops for a device
  /// type (an aoti_torch_device_type_* code, c10::DeviceType's value): CUDA
  /// once norm_mlir.torch registered them, the CPU while a test's CPU
  /// registration is live; else 0.
  int (*registered)(int32_t deviceType);
  /// layer_norm_fwd / rms_norm_fwd (residual NULL) and add_layer_norm_fwd /
  /// add_rms_norm_fwd (residual given; bias ignored for RMSNorm): out[0] y,
  /// out[1] h (the fused add only), out[2] mean (LayerNorm only), out[3]
  /// rstd.
  void (*forward)(int32_t op, AtenTensorHandle x, AtenTensorHandle residual,
                  AtenTensorHandle weight, AtenTensorHandle bias, int64_t n,
                  double eps, bool zeroCentered, AtenTensorHandle out[4]);
  /// layer_norm_bwd / rms_norm_bwd (mean NULL; hasBias ignored), and the
  /// _into_dy ops with intoDy (dx written over dy): out[0] dx (NULL into
  /// dy), out[1] dweight, out[2] dbias (LayerNorm only).
  void (*backward)(int32_t op, AtenTensorHandle dy, AtenTensorHandle x,
                   AtenTensorHandle mean, AtenTensorHandle rstd,
                   AtenTensorHandle weight, bool hasBias, int64_t n,
                   bool zeroCentered, AtenTensorHandle dresidual, bool intoDy,
                   AtenTensorHandle out[3]);
};

#endif // NORMTORCH_DIRECT_H
