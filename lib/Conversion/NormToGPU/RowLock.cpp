//===- RowLock.cpp - the lock protocol of the `locked` strategy -----------===//
//
// Part of mlir-norm.
//
// `locked`: the whole block takes a row (S = 1), and its read-modify-write
// of the group's partial row is bracketed by the group's lock. The row
// body's lock acquire (an scf.while spinning on an atomic exchange) runs on
// thread 0, followed by a device-scope fence and a barrier; the release (an
// atomic_rmw assign) waits for the block's writes (a barrier), then thread
// 0 fences and releases. The fence is the chip's (TargetCodegen).
//
//===----------------------------------------------------------------------===//

#include "RowStrategies.h"

#include "norm/Conversion/NormToGPU/TargetCodegen.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::norm;

namespace {

class LockedProtocol final : public LockProtocol {
public:
  explicit LockedProtocol(RowContext &ctx) : ctx(ctx) {}

  bool emit(Operation &op, Value rowActive) override;

private:
  /// `if (row active && thread 0) { body }`: the block's one lock holder.
  void onLeader(Value rowActive,
                function_ref<void(OpBuilder &, IRMapping &)> body);

  RowContext &ctx;
};

} // namespace

void LockedProtocol::onLeader(
    Value rowActive, function_ref<void(OpBuilder &, IRMapping &)> body) {
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, ctx.tid,
                                      ctx.c(0));
  scf::IfOp::create(b, loc, arith::AndIOp::create(b, loc, rowActive, first),
                    [&](OpBuilder &ib, Location) {
                      IRMapping m = ctx.base;
                      body(ib, m);
                      scf::YieldOp::create(ib, loc);
                    });
}

bool LockedProtocol::emit(Operation &op, Value rowActive) {
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  if (isa<scf::WhileOp>(op)) {
    // Lock acquire: one thread spins, then the block may proceed.
    onLeader(rowActive, [&](OpBuilder &ib, IRMapping &m) {
      op.walk([&](Operation *inner) {
        for (Value operand : inner->getOperands())
          if (!op.isAncestor(operand.getParentRegion()->getParentOp()))
            ctx.materialize(ib, operand, m);
      });
      ib.clone(op, m);
      ctx.codegen.deviceFence(ib, loc);
    });
    gpu::BarrierOp::create(b, loc);
    return true;
  }
  if (auto rmw = dyn_cast<memref::AtomicRMWOp>(op);
      rmw && rmw.getKind() == arith::AtomicRMWKind::assign) {
    // Lock release: the block's writes first, then one thread releases.
    gpu::BarrierOp::create(b, loc);
    onLeader(rowActive, [&](OpBuilder &ib, IRMapping &m) {
      ctx.codegen.deviceFence(ib, loc);
      for (Value operand : op.getOperands())
        ctx.materialize(ib, operand, m);
      ib.clone(op, m);
    });
    return true;
  }
  return false;
}

std::unique_ptr<LockProtocol> norm::makeLockedProtocol(RowContext &ctx) {
  return std::make_unique<LockedProtocol>(ctx);
}
