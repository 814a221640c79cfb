//===- KernelSpec.cpp - MLIR text of execution-test kernels ---------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "KernelSpec.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace norm_exec;

const char *norm_exec::operandName(Operand o) {
  switch (o) {
  case Operand::Dy:
    return "dy";
  case Operand::X:
    return "x";
  case Operand::Mean:
    return "mean";
  case Operand::Rstd:
    return "rstd";
  case Operand::Weight:
    return "w";
  case Operand::Bias:
    return "b";
  case Operand::Dresidual:
    return "dres";
  case Operand::Dx:
    return "dx";
  case Operand::Dweight:
    return "dw";
  case Operand::Dbias:
    return "db";
  case Operand::Y:
    return "y";
  case Operand::MeanOut:
    return "mean";
  case Operand::RstdOut:
    return "rstd";
  case Operand::XhatOut:
    return "xhat";
  }
  return "?";
}

std::string KernelSpec::opName() const {
  std::string name = isLayerNorm() ? "layer_norm" : "rms_norm";
  return isGrad() ? name + "_grad" : name;
}

std::vector<Operand> norm_exec::kernelOperands(const KernelSpec &spec) {
  std::vector<Operand> ops;
  bool bias = spec.isLayerNorm() && spec.bias;
  if (spec.isGrad()) {
    ops = {Operand::Dy, Operand::X};
    if (spec.isLayerNorm())
      ops.push_back(Operand::Mean);
    ops.push_back(Operand::Rstd);
    if (spec.weight)
      ops.push_back(Operand::Weight);
    if (spec.dresidual)
      ops.push_back(Operand::Dresidual);
    ops.push_back(Operand::Dx);
    if (spec.weight)
      ops.push_back(Operand::Dweight);
    if (bias)
      ops.push_back(Operand::Dbias);
    return ops;
  }
  ops = {Operand::X};
  if (spec.weight)
    ops.push_back(Operand::Weight);
  if (bias)
    ops.push_back(Operand::Bias);
  ops.push_back(Operand::Y);
  if (spec.isLayerNorm())
    ops.push_back(Operand::MeanOut);
  ops.push_back(Operand::RstdOut);
  if (spec.xhatOut)
    ops.push_back(Operand::XhatOut);
  return ops;
}

namespace {

/// The three shapes of operand: [M, N] rows, [N] features, [M] statistics.
enum class Kind { Rows, Feature, Stat };

Kind kindOf(Operand o) {
  switch (o) {
  case Operand::Weight:
  case Operand::Bias:
  case Operand::Dweight:
  case Operand::Dbias:
    return Kind::Feature;
  case Operand::Mean:
  case Operand::Rstd:
  case Operand::MeanOut:
  case Operand::RstdOut:
    return Kind::Stat;
  default:
    return Kind::Rows;
  }
}

bool isOutput(Operand o) {
  switch (o) {
  case Operand::Dx:
  case Operand::Dweight:
  case Operand::Dbias:
  case Operand::Y:
  case Operand::MeanOut:
  case Operand::RstdOut:
  case Operand::XhatOut:
    return true;
  default:
    return false;
  }
}

/// Writes the function for one spec; one method per piece of syntax.
class SourceWriter {
public:
  explicit SourceWriter(const KernelSpec &spec)
      : spec(spec), operands(kernelOperands(spec)), os(text) {}

  std::string write() {
    writeSignature();
    if (spec.valueForm)
      writeValueBody();
    else
      writeBufferBody();
    os << "  return\n}\n";
    return text;
  }

private:
  std::string nDim() const {
    return spec.staticN ? std::to_string(spec.staticN) : std::string("?");
  }

  std::string elementType(Operand o) const {
    switch (kindOf(o)) {
    case Kind::Rows:
      return dtypeName(spec.xType).str();
    case Kind::Feature:
      return dtypeName(spec.paramType).str();
    case Kind::Stat:
      return "f32";
    }
    return "";
  }

  std::string shape(Operand o) const {
    switch (kindOf(o)) {
    case Kind::Rows:
      return "?x" + nDim() + "x";
    case Kind::Feature:
      return nDim() + "x";
    case Kind::Stat:
      return "?x";
    }
    return "";
  }

  std::string memrefType(Operand o) const {
    std::string layout;
    if (kindOf(o) == Kind::Rows && spec.strided)
      layout = ", strided<[?, 1], offset: ?>";
    return "memref<" + shape(o) + elementType(o) + layout + ">";
  }

  std::string tensorType(Operand o) const {
    return "tensor<" + shape(o) + elementType(o) + ">";
  }

  /// The SSA name of an operand in the body: the argument itself (buffer
  /// form) or its tensor (value form).
  std::string use(Operand o) const {
    return spec.valueForm ? std::string("%") + operandName(o) + "_t"
                          : std::string("%") + operandName(o);
  }

  std::string useType(Operand o) const {
    return spec.valueForm ? tensorType(o) : memrefType(o);
  }

  void writeSignature() {
    os << "func.func @kernel(";
    bool first = true;
    for (Operand o : operands) {
      os << (first ? "" : ", ") << "%" << operandName(o) << ": "
         << memrefType(o);
      first = false;
    }
    os << ") attributes {llvm.emit_c_interface} {\n";
  }

  /// `keyword(%v : type)` when `o` is an operand of the kernel.
  void writeKeyword(const char *keyword, Operand o) {
    if (llvm::is_contained(operands, o))
      os << " " << keyword << "(" << use(o) << " : " << useType(o) << ")";
  }

  void writeInputs() {
    if (spec.isGrad()) {
      writeKeyword("dy", Operand::Dy);
      writeKeyword("x", Operand::X);
      writeKeyword("mean", Operand::Mean);
      writeKeyword("rstd", Operand::Rstd);
      writeKeyword("weight", Operand::Weight);
      writeKeyword("dresidual", Operand::Dresidual);
      return;
    }
    writeKeyword("x", Operand::X);
    writeKeyword("weight", Operand::Weight);
    writeKeyword("bias", Operand::Bias);
  }

  /// (keyword, operand) of each output the kernel has, in syntax order.
  std::vector<std::pair<const char *, Operand>> outputs() const {
    std::vector<std::pair<const char *, Operand>> all;
    if (spec.isGrad())
      all = {{"dx", Operand::Dx},
             {"dweight", Operand::Dweight},
             {"dbias", Operand::Dbias}};
    else
      all = {{"y", Operand::Y},
             {"mean", Operand::MeanOut},
             {"rstd", Operand::RstdOut},
             {"xhat", Operand::XhatOut}};
    std::vector<std::pair<const char *, Operand>> present;
    for (auto &p : all)
      if (llvm::is_contained(operands, p.second))
        present.push_back(p);
    return present;
  }

  void writeAttributes() {
    std::vector<std::string> attrs;
    if (spec.isGrad()) {
      attrs.push_back("strategy = #norm.strategy<" + spec.strategy + ">");
      if (spec.groups)
        attrs.push_back("groups = " + std::to_string(spec.groups) + " : i64");
    }
    if (spec.zeroCentered)
      attrs.push_back("zero_centered_weight");
    if (attrs.empty())
      return;
    os << " {";
    llvm::interleaveComma(attrs, os);
    os << "}";
  }

  void writeBufferBody() {
    os << "  norm." << spec.opName();
    writeInputs();
    os << " outs";
    for (auto &[keyword, o] : outputs())
      os << " " << keyword << "(%" << operandName(o) << " : " << memrefType(o)
         << ")";
    writeAttributes();
    os << "\n";
  }

  void writeValueBody() {
    for (Operand o : operands)
      if (!isOutput(o))
        os << "  " << use(o) << " = bufferization.to_tensor %" << operandName(o)
           << " restrict : " << memrefType(o) << " to " << tensorType(o)
           << "\n";
    auto outs = outputs();
    os << "  ";
    bool first = true;
    for (auto &p : outs) {
      os << (first ? "" : ", ") << use(p.second);
      first = false;
    }
    os << " = norm." << spec.opName();
    writeInputs();
    writeAttributes();
    os << " ->";
    for (auto &[keyword, o] : outs)
      os << " " << keyword << "(" << tensorType(o) << ")";
    os << "\n";
    for (auto &p : outs)
      os << "  bufferization.materialize_in_destination " << use(p.second)
         << " in restrict writable %" << operandName(p.second) << " : ("
         << tensorType(p.second) << ", " << memrefType(p.second) << ") -> ()\n";
  }

  const KernelSpec &spec;
  std::vector<Operand> operands;
  std::string text;
  llvm::raw_string_ostream os;
};

} // namespace

std::string norm_exec::kernelSource(const KernelSpec &spec) {
  return SourceWriter(spec).write();
}
