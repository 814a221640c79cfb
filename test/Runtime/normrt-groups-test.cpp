//===- normrt-groups-test.cpp - the runtime's G against the compiler's ----===//
//
// Part of mlir-norm.
//
// The runtime sizes workspaces and grids with defaultGroups of
// norm/Support/Groups.h; the dx kernels recompute G from the IR that
// norm::emitDefaultGroups builds. A mismatch would launch too few programs
// and skip rows, so this evaluates the emitted IR (an interpreter of the
// arith ops it may contain; any other op fails the test) and compares it
// with normrt_default_groups (libnormrt's C API) over a grid of (M, N) that
// covers every branch: M around multiples of 16 and every cap boundary and
// up to 2^62, N around the powers of two and the caps' boundaries (6144,
// 12288), where 3 x 2^20 / N crosses 512 and 256.
//
//===----------------------------------------------------------------------===//

#include "norm-c/Runtime.h"
#include "norm/Dialect/Norm/Transforms/Groups.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/DenseMap.h"

#include <cinttypes>
#include <cstdio>
#include <set>
#include <vector>

using namespace mlir;

namespace {

/// emitDefaultGroups as a straight-line program over unsigned 64-bit slots;
/// slot 0 is M and slot 1 is N.
struct Program {
  enum class Kind {
    Constant,
    MaxUI,
    MinUI,
    DivUI,
    CeilDivUI,
    MulI,
    CmpI,
    AndI,
    Select
  };
  struct Instr {
    Kind kind;
    int a = 0, b = 0, c = 0;
    uint64_t constant = 0;
    arith::CmpIPredicate predicate = arith::CmpIPredicate::eq;
  };
  std::vector<Instr> instrs;
  int result = 0;

  uint64_t run(uint64_t m, uint64_t n) const {
    std::vector<uint64_t> slots(instrs.size() + 2);
    slots[0] = m;
    slots[1] = n;
    for (size_t i = 0; i < instrs.size(); ++i) {
      const Instr &in = instrs[i];
      uint64_t a = slots[in.a], b = slots[in.b], c = slots[in.c],
               &out = slots[i + 2];
      switch (in.kind) {
      case Kind::Constant:
        out = in.constant;
        break;
      case Kind::MaxUI:
        out = a > b ? a : b;
        break;
      case Kind::MinUI:
        out = a < b ? a : b;
        break;
      case Kind::DivUI:
        out = a / b;
        break;
      case Kind::CeilDivUI:
        out = a == 0 ? 0 : (a - 1) / b + 1;
        break;
      case Kind::MulI:
        out = a * b;
        break;
      case Kind::CmpI:
        out = arith::applyCmpPredicate(in.predicate, llvm::APInt(64, a),
                                       llvm::APInt(64, b));
        break;
      case Kind::AndI:
        out = a & b;
        break;
      case Kind::Select:
        out = a ? b : c;
        break;
      }
    }
    return slots[result];
  }
};

/// Builds the IR and translates it; false if it has an op the interpreter
/// does not know.
bool compile(Program &program) {
  MLIRContext context;
  context.loadDialect<arith::ArithDialect, func::FuncDialect>();
  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  auto module = ModuleOp::create(b, loc);
  b.setInsertionPointToEnd(module.getBody());
  Type index = b.getIndexType();
  auto func = func::FuncOp::create(b, loc, "groups",
                                   b.getFunctionType({index, index}, {index}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  Value g = norm::emitDefaultGroups(b, loc, entry->getArgument(0),
                                    entry->getArgument(1));
  llvm::DenseMap<Value, int> slot;
  slot[entry->getArgument(0)] = 0;
  slot[entry->getArgument(1)] = 1;
  bool ok = true;
  for (Operation &op : entry->getOperations()) {
    Program::Instr in;
    if (auto c = dyn_cast<arith::ConstantIndexOp>(op)) {
      in.kind = Program::Kind::Constant;
      in.constant = uint64_t(c.value());
    } else if (isa<arith::MaxUIOp>(op)) {
      in.kind = Program::Kind::MaxUI;
    } else if (isa<arith::MinUIOp>(op)) {
      in.kind = Program::Kind::MinUI;
    } else if (isa<arith::DivUIOp>(op)) {
      in.kind = Program::Kind::DivUI;
    } else if (isa<arith::CeilDivUIOp>(op)) {
      in.kind = Program::Kind::CeilDivUI;
    } else if (isa<arith::MulIOp>(op)) {
      in.kind = Program::Kind::MulI;
    } else if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
      in.kind = Program::Kind::CmpI;
      in.predicate = cmp.getPredicate();
    } else if (isa<arith::AndIOp>(op)) {
      in.kind = Program::Kind::AndI;
    } else if (isa<arith::SelectOp>(op)) {
      in.kind = Program::Kind::Select;
    } else {
      std::printf("cannot evaluate %s\n",
                  op.getName().getStringRef().str().c_str());
      ok = false;
      break;
    }
    if (op.getNumOperands() >= 2) {
      in.a = slot.at(op.getOperand(0));
      in.b = slot.at(op.getOperand(1));
    }
    if (op.getNumOperands() == 3)
      in.c = slot.at(op.getOperand(2));
    int index = int(program.instrs.size()) + 2;
    program.instrs.push_back(in);
    slot[op.getResult(0)] = index;
  }
  if (ok)
    program.result = slot.at(g);
  module->erase();
  return ok;
}

} // namespace

int main() {
  Program program;
  if (!compile(program))
    return 1;

  std::set<int64_t> ms, ns;
  for (int64_t m = 0; m <= 4096; ++m)
    ms.insert(m);
  for (int shift = 12; shift < 63; ++shift)
    for (int64_t d = -17; d <= 17; ++d)
      if (shift < 62 || d < 0)
        ms.insert((int64_t(1) << shift) + d);
  ms.insert(INT64_MAX);
  for (int64_t n = 1; n <= 20000; n += (n < 1100 ? 1 : 7))
    ns.insert(n);
  for (int64_t edge : {int64_t(6144), int64_t(12288), int64_t(24386),
                       int64_t(49152)})
    for (int64_t d = -3; d <= 3; ++d)
      ns.insert(edge + d);
  for (int shift = 0; shift < 40; ++shift)
    for (int64_t d = -3; d <= 3; ++d)
      if ((int64_t(1) << shift) + d > 0)
        ns.insert((int64_t(1) << shift) + d);

  uint64_t checked = 0, mismatches = 0;
  std::set<int64_t> seen;
  for (int64_t n : ns)
    for (int64_t m : ms) {
      int64_t expected = int64_t(program.run(uint64_t(m), uint64_t(n)));
      int64_t got = normrt_default_groups(m, n);
      ++checked;
      seen.insert(got);
      if (got != expected && ++mismatches <= 20)
        std::printf("mismatch: M = %" PRId64 ", N = %" PRId64
                    ": runtime %" PRId64 ", emitted IR %" PRId64 "\n",
                    m, n, got, expected);
    }
  // The grid reaches both caps and the M-bound branch.
  std::printf("checked %" PRIu64 " (M, N) pairs, %" PRIu64
              " mismatches; G from %" PRId64 " to %" PRId64 "\n",
              checked, mismatches, *seen.begin(), *seen.rbegin());
  return mismatches ? 1 : 0;
}
