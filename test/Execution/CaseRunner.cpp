//===- CaseRunner.cpp - run a family of kernels over shapes ---------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "CaseRunner.h"
#include "Compare.h"
#include "Reference.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <map>
#include <unistd.h>

using namespace norm_exec;

namespace {

//===----------------------------------------------------------------------===//
// Seeds and names
//===----------------------------------------------------------------------===//

uint64_t splitMix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t mix(uint64_t a, uint64_t b) { return splitMix(a ^ splitMix(b)); }

uint64_t hashString(llvm::StringRef s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s)
    h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h;
}

std::string paramsName(const KernelSpec &spec) {
  bool bias = spec.isLayerNorm() && spec.bias;
  if (spec.weight && bias)
    return "w+b";
  if (spec.weight)
    return "w";
  return bias ? "b" : "none";
}

bool isOutput(Operand o) { return o >= Operand::Dx; }

/// Where an operand sits in its allocation: the view's offset and the
/// padding after each row. Each rows operand gets its own, so that a kernel
/// mixing up two strides or offsets reads the wrong elements.
struct Placement {
  int64_t offset = 0, rowPad = 0;
};

Placement placement(Operand o, bool strided) {
  if (!strided)
    return {};
  switch (o) {
  case Operand::X:
    return {3, 5};
  case Operand::Dy:
    return {1, 3};
  case Operand::Dresidual:
    return {5, 1};
  case Operand::Dx:
  case Operand::Y:
    return {2, 7};
  case Operand::XhatOut:
    return {4, 2};
  case Operand::Residual:
    return {6, 4};
  case Operand::HOut:
    return {7, 1};
  default:
    return {};
  }
}

//===----------------------------------------------------------------------===//
// Buffers of one shape
//===----------------------------------------------------------------------===//

/// The pristine inputs of one problem, the working copies a run gets, and
/// the outputs. With dx in place of dy, dx is the working dy.
class ShapeBuffers {
public:
  ShapeBuffers(const Family &family, const Problem &p) : family(family) {
    const KernelSpec &spec = family.spec;
    for (Operand o : kernelOperands(spec)) {
      if (o == Operand::Dx && family.inPlace)
        continue;
      HostBuffer b = makeBuffer(o, p.m, p.n);
      if (!isOutput(o)) {
        b.setValues(inputValues(o, p));
        pristine[o] = b;
      }
      (isOutput(o) ? outputs : working)[o] = std::move(b);
    }
  }

  /// Restores the inputs, poisons the outputs, and binds them.
  Bindings prepare() {
    Bindings b{};
    for (auto &[o, buffer] : working) {
      buffer.copyFrom(pristine[o]);
      bound(b, o) = &buffer;
    }
    for (auto &[o, buffer] : outputs) {
      buffer.poison();
      bound(b, o) = &buffer;
    }
    if (family.inPlace)
      bound(b, Operand::Dx) = &working[Operand::Dy];
    return b;
  }

  /// The buffer that holds output `o` after a run.
  HostBuffer &output(Operand o) {
    if (o == Operand::Dx && family.inPlace)
      return working[Operand::Dy];
    return outputs[o];
  }

  /// The name of the first input the run modified, or "".
  std::string modifiedInput() const {
    for (auto &[o, buffer] : working) {
      if (o == Operand::Dy && family.inPlace)
        continue;
      if (!buffer.sameBytes(pristine.at(o)))
        return operandName(o);
    }
    return "";
  }

private:
  HostBuffer makeBuffer(Operand o, int64_t m, int64_t n) const {
    const KernelSpec &spec = family.spec;
    switch (o) {
    case Operand::Weight:
    case Operand::Bias:
    case Operand::Dweight:
    case Operand::Dbias:
      return HostBuffer::vector(spec.paramType, n);
    case Operand::Mean:
    case Operand::Rstd:
    case Operand::MeanOut:
    case Operand::RstdOut:
    {
      HostBuffer b = HostBuffer::vector(DType::F32, m);
      if (spec.batch)
        b.splitRows(spec.batch);
      return b;
    }
    default: {
      Placement pl = placement(o, spec.strided);
      HostBuffer b = HostBuffer::matrix(spec.xType, m, n, pl.offset, pl.rowPad);
      if (spec.batch)
        b.splitRows(spec.batch);
      return b;
    }
    }
  }

  static const std::vector<double> &inputValues(Operand o, const Problem &p) {
    switch (o) {
    case Operand::Dy:
      return p.dy;
    case Operand::Mean:
      return p.mean;
    case Operand::Rstd:
      return p.rstd;
    case Operand::Weight:
      return p.w;
    case Operand::Bias:
      return p.b;
    case Operand::Dresidual:
      return p.dres;
    case Operand::Residual:
      return p.res;
    default:
      return p.x;
    }
  }

  const Family &family;
  std::map<Operand, HostBuffer> pristine, working, outputs;
};

//===----------------------------------------------------------------------===//
// Expected outputs
//===----------------------------------------------------------------------===//

/// The reference of one output and the floor of its error's denominator.
struct Expected {
  std::vector<double> values;
  double floor = 0;
  double f32Bound = kF32Bound;
  /// Bitwise: the output must equal the reference exactly (bound 0).
  bool exact = false;
};

using Expectations = std::map<Operand, Expected>;

/// dx is the projection of rstd * g; when it removes nearly all of it (RMS
/// with N = 1: dx = rstd * g * eps / (x^2 + eps)), f32 rounding of the
/// O(rstd * g) terms is the floor of what any f32 kernel can reach. The
/// floor only acts where ||dx|| < ||rstd * g|| / 16, never for N >= 3.
constexpr double kDxFloorFraction = 1.0 / 16;

/// dweight and dbias sum M terms of random sign per column: a column sum
/// that comes out much smaller than such sums are (N = 1 leaves one column)
/// would turn the f32 rounding of the partial sums into a large relative
/// error. The floor is the typical size of such a sum, sum(|t|) / sqrt(M),
/// against which f32 summation errs by ~ 2^-24 sqrt(M) (1.2e-6 at M = 1000).
double columnSumFloor(const std::vector<double> &absSums, int64_t m) {
  return m > 0 ? norm2(absSums) / std::sqrt(static_cast<double>(m)) : 0;
}

Expectations expectGrad(const KernelSpec &spec, Problem p, SelfTest selfTest) {
  if (selfTest == SelfTest::Reference)
    for (double &r : p.rstd)
      r *= 1 + std::ldexp(1.0, -10);
  GradReference r = referenceGrad(spec, p);
  Expectations e;
  e[Operand::Dx] = {r.dx, kDxFloorFraction * norm2(r.dxScale)};
  e[Operand::Dweight] = {r.dw, columnSumFloor(r.dwAbsSum, p.m)};
  e[Operand::Dbias] = {r.db, columnSumFloor(r.dbAbsSum, p.m)};
  return e;
}

/// The row statistics are f32 sums of N terms of one sign, which err by
/// ~2^-24 sqrt(N) with a long tail: with bf16 inputs (few distinct
/// mantissas) the rounding of a sequential sum is biased on some rows. A
/// correct f32 two-pass kernel, 200000 bf16 rows of N = 4096: rstd errs by
/// 3.7e-7 at the median, 5e-6 at the 99.9th percentile, 1.22e-5 at worst. So
/// the statistics get 1e-5 up to N ~ 1000 and 4 * 2^-24 sqrt(N) above
/// (1.5e-5 at N = 4096).
double statisticBound(int64_t n) {
  return std::max(kF32Bound,
                  4 * std::ldexp(1.0, -24) * std::sqrt(static_cast<double>(n)));
}

/// y = (x - mean) rstd w + b: x - mean rounds at the size of x and of the
/// mean, so a row whose spread is far below its mean (N = 3, x close
/// together) has an xhat no f32 kernel gets to 1e-5 of ||y|| (seen:
/// LayerNorm f32, N = 3, M = 1, y 1.56e-5), and a bias that cancels the
/// scaled row leaves y small against its terms. The floor is the size of
/// what y is computed from, (|x| + |mean|) rstd |w| + |b|; like dx's, it
/// acts only where ||y|| is below a sixteenth of it.
constexpr double kYFloorFraction = 1.0 / 16;

Expectations expectForward(const KernelSpec &spec, const Problem &p,
                           SelfTest selfTest) {
  ForwardReference r = referenceForward(spec, p);
  if (selfTest == SelfTest::Reference)
    for (double &v : r.rstd)
      v *= 1 + std::ldexp(1.0, -10);
  Expectations e;
  e[Operand::Y] = {r.y, kYFloorFraction * norm2(r.yScale)};
  // The mean sums terms of size |x|: its error is measured against mean(|x|)
  // (its condition), not against a mean that may be close to 0.
  e[Operand::MeanOut] = {r.mean, norm2(r.meanScale), statisticBound(p.n)};
  e[Operand::RstdOut] = {r.rstd, 0, statisticBound(p.n)};
  e[Operand::XhatOut] = {r.xhat, 0};
  // h = x + residual is one rounding of an exact sum: bitwise.
  e[Operand::HOut] = {r.h, 0, kF32Bound, /*exact=*/true};
  return e;
}

//===----------------------------------------------------------------------===//
// One run
//===----------------------------------------------------------------------===//

/// The outcome of running one kernel on one shape.
struct RunResult {
  std::vector<OutputCheck> checks;
  std::string problem; ///< a failure not tied to one output
  double seconds = 0;

  bool ok() const {
    return problem.empty() &&
           llvm::all_of(checks, [](const OutputCheck &c) { return c.ok(); });
  }
};

/// Runs one kernel on one problem and checks everything.
class Run {
public:
  Run(const Family &family, Kernel &kernel, ShapeBuffers &buffers,
      const Expectations &expected, const RunOptions &options)
      : kernel(kernel), buffers(buffers), expected(expected),
        selfTest(options.selfTest), roundingSlack(options.roundingSlack),
        outputOrder(outputsOf(family.spec)) {}

  RunResult execute(bool checkDeterminism) {
    RunResult result;
    auto start = std::chrono::steady_clock::now();
    Bindings b = buffers.prepare();
    injectBeforeRun();
    kernel.run(b);
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    injectAfterRun();
    if (std::string input = buffers.modifiedInput(); !input.empty())
      result.problem = "the kernel modified its input " + input;
    for (Operand o : outputOrder) {
      HostBuffer &out = buffers.output(o);
      const Expected &ex = expected.at(o);
      result.checks.push_back(compareOutput(
          operandName(o), out, ex.values, ex.floor,
          ex.exact ? 0.0 : errorBound(out.type(), roundingSlack, ex.f32Bound)));
    }
    if (checkDeterminism && result.ok())
      checkReproducible(result);
    return result;
  }

private:
  static std::vector<Operand> outputsOf(const KernelSpec &spec) {
    std::vector<Operand> outs;
    for (Operand o : kernelOperands(spec))
      if (isOutput(o))
        outs.push_back(o);
    return outs;
  }

  /// The self-test defects that stop the process.
  void injectBeforeRun() {
    if (selfTest == SelfTest::Crash)
      std::raise(SIGSEGV);
    if (selfTest == SelfTest::Hang)
      for (;;)
        ::pause();
  }

  /// The self-test defects that act on the first run's outputs.
  void injectAfterRun() {
    HostBuffer &first = buffers.output(outputOrder.front());
    if (selfTest == SelfTest::Unwritten) {
      first.setBits(first.rows() / 2, first.cols() / 2,
                    poisonBits(first.type()));
    } else if (selfTest == SelfTest::Perturb) {
      const std::vector<double> &ref = expected.at(outputOrder.front()).values;
      size_t k = std::max_element(ref.begin(), ref.end(),
                                  [](double a, double b) {
                                    return std::abs(a) < std::abs(b);
                                  }) -
                 ref.begin();
      int64_t i = k / first.cols(), j = k % first.cols();
      first.set(i, j, first.get(i, j) * (1 + std::ldexp(1.0, -6)));
    } else if (selfTest == SelfTest::HBit &&
               llvm::is_contained(outputOrder, Operand::HOut)) {
      HostBuffer &h = buffers.output(Operand::HOut);
      int64_t i = h.rows() / 2, j = h.cols() / 2;
      h.setBits(i, j, h.getBits(i, j) ^ 1u);
    }
  }

  /// Runs again on the same inputs; every output must be bitwise identical.
  void checkReproducible(RunResult &result) {
    std::map<Operand, HostBuffer> firstRun;
    for (Operand o : outputOrder)
      firstRun[o] = buffers.output(o);
    Bindings b = buffers.prepare();
    kernel.run(b);
    if (selfTest == SelfTest::Nondeterministic) {
      Operand o = llvm::is_contained(outputOrder, Operand::Dweight)
                      ? Operand::Dweight
                      : outputOrder.front();
      HostBuffer &out = buffers.output(o);
      out.setBits(0, 0, out.getBits(0, 0) ^ 1u);
    }
    for (Operand o : outputOrder)
      if (!buffers.output(o).sameView(firstRun[o])) {
        result.problem = std::string("not bitwise reproducible: ") +
                         operandName(o) + " differs between two runs";
        return;
      }
  }

  Kernel &kernel;
  ShapeBuffers &buffers;
  const Expectations &expected;
  SelfTest selfTest;
  double roundingSlack;
  std::vector<Operand> outputOrder;
};

//===----------------------------------------------------------------------===//
// Reporting
//===----------------------------------------------------------------------===//

/// The flags that rerun exactly this case.
std::string reproduceFlags(const Family &family, llvm::StringRef strategy,
                           int64_t m, int64_t n, const RunOptions &options) {
  const KernelSpec &spec = family.spec;
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "norm-exec-test --mode=" << (spec.isGrad() ? "grad" : "forward")
     << " --op=" << (spec.isLayerNorm() ? "layer" : "rms")
     << " --dtype=" << dtypeName(spec.xType);
  if (spec.paramType != spec.xType)
    os << " --weight-dtype=" << dtypeName(spec.paramType);
  os << " --params=" << paramsName(spec);
  if (spec.isGrad())
    os << " --strategy=" << strategy;
  if (spec.groups)
    os << " --groups=" << spec.groups;
  os << " --n=" << n << " --m=" << m;
  if (spec.dresidual)
    os << " --dresidual";
  if (spec.zeroCentered)
    os << " --zero-centered";
  if (family.inPlace)
    os << " --in-place";
  if (spec.strided)
    os << " --strided";
  if (spec.batch)
    os << " --batch=" << spec.batch;
  if (spec.staticN)
    os << " --static-n";
  if (spec.valueForm)
    os << " --value-form";
  if (spec.xhatOut)
    os << " --xhat";
  if (spec.residual)
    os << " --residual";
  switch (options.selfTest) {
  case SelfTest::None:
    break;
  case SelfTest::Unwritten:
    os << " --self-test-corrupt=unwritten";
    break;
  case SelfTest::Perturb:
    os << " --self-test-corrupt=perturb";
    break;
  case SelfTest::Nondeterministic:
    os << " --self-test-corrupt=nondeterministic";
    break;
  case SelfTest::Reference:
    os << " --self-test-corrupt=reference";
    break;
  case SelfTest::Crash:
    os << " --self-test-corrupt=crash";
    break;
  case SelfTest::Hang:
    os << " --self-test-corrupt=hang";
    break;
  case SelfTest::HBit:
    os << " --self-test-corrupt=h-bit";
    break;
  }
  if (options.roundingSlack != 1.5)
    os << " --rounding-slack=" << options.roundingSlack;
  if (options.hostBackend)
    os << " --backend=host";
  else
    os << " '--pipeline=" << options.jit.pipeline << "'";
  os << " --seed=" << options.seed;
  return s;
}

std::string caseName(const Family &family, llvm::StringRef strategy, int64_t m,
                     int64_t n) {
  std::string s = describeFamily(family);
  if (!strategy.empty())
    s += " " + strategy.str();
  return s + " N=" + std::to_string(n) + " M=" + std::to_string(m);
}

void printResult(const std::string &name, const RunResult &r,
                 const std::string &reproduce, bool timing) {
  llvm::raw_ostream &os = llvm::outs();
  os << (r.ok() ? "PASS " : "FAIL ") << name;
  for (const OutputCheck &c : r.checks)
    os << " " << c.name << "=" << llvm::format("%.1e", c.error);
  if (timing)
    os << " t=" << llvm::format("%.1fms", r.seconds * 1e3);
  for (const OutputCheck &c : r.checks) {
    if (!c.problem.empty())
      os << " [" << c.name << ": " << c.problem << "]";
    else if (!c.ok())
      os << " [" << c.name << ": " << llvm::format("%.2e", c.error) << " > "
         << llvm::format("%.2e", c.bound) << "]";
  }
  if (!r.problem.empty())
    os << " [" << r.problem << "]";
  os << "\n";
  if (!r.ok())
    os << "  reproduce: " << reproduce << "\n";
  os.flush();
}

void printCompileFailure(const std::string &name, llvm::Error error,
                         const std::string &reproduce) {
  llvm::raw_ostream &os = llvm::outs();
  os << "FAIL " << name << " [compile: ";
  std::string message = llvm::toString(std::move(error));
  // The first diagnostics are the useful ones; keep reports short.
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(message).split(lines, '\n', /*MaxSplit=*/-1,
                                 /*KeepEmpty=*/false);
  for (size_t k = 0; k < lines.size() && k < 12; ++k)
    os << (k ? "\n    " : "") << lines[k];
  if (lines.size() > 12)
    os << "\n    ... (" << lines.size() - 12 << " more lines)";
  os << "]\n  reproduce: " << reproduce << "\n";
  os.flush();
}

/// The kernels of a family, one per strategy (null where compilation
/// failed, after reporting it).
std::vector<std::unique_ptr<Kernel>>
compileFamily(const Family &family, const RunOptions &options, Tally &tally) {
  std::vector<std::unique_ptr<Kernel>> kernels;
  for (const std::string &strategy : family.strategies) {
    KernelSpec spec = family.spec;
    if (spec.isGrad())
      spec.strategy = strategy;
    if (options.hostBackend) {
      kernels.push_back(makeHostKernel(spec));
      continue;
    }
    auto start = std::chrono::steady_clock::now();
    auto kernel = compileJitKernel(spec, options.jit);
    if (options.timing)
      llvm::outs() << "compiled " << describeFamily(family)
                   << (strategy.empty() ? "" : " ") << strategy << " in "
                   << llvm::format("%.0fms",
                                   std::chrono::duration<double>(
                                       std::chrono::steady_clock::now() - start)
                                           .count() *
                                       1e3)
                   << "\n";
    if (!kernel) {
      int64_t n = family.ns.empty() ? 0 : family.ns.front();
      int64_t m = family.ms.empty() ? 0 : family.ms.front();
      printCompileFailure(
          strategy.empty() ? describeFamily(family)
                           : describeFamily(family) + " " + strategy,
          kernel.takeError(), reproduceFlags(family, strategy, m, n, options));
      ++tally.failed;
      kernels.push_back(nullptr);
      continue;
    }
    kernels.push_back(std::move(*kernel));
  }
  return kernels;
}

} // namespace

std::string norm_exec::describeFamily(const Family &family) {
  const KernelSpec &spec = family.spec;
  std::string s = spec.opName() + " " + dtypeName(spec.xType).str();
  if (spec.paramType != spec.xType && (spec.weight || spec.bias))
    s += " w:" + dtypeName(spec.paramType).str();
  s += " " + paramsName(spec);
  std::vector<std::string> flags;
  if (spec.dresidual)
    flags.push_back("dres");
  if (spec.zeroCentered)
    flags.push_back("zc");
  if (family.inPlace)
    flags.push_back("in-place");
  if (spec.strided)
    flags.push_back("strided");
  if (spec.batch)
    flags.push_back("batch=" + std::to_string(spec.batch));
  if (spec.staticN)
    flags.push_back("static-n");
  if (spec.valueForm)
    flags.push_back("value");
  if (spec.xhatOut)
    flags.push_back("xhat");
  if (spec.residual)
    flags.push_back("res");
  if (spec.groups)
    flags.push_back("groups=" + std::to_string(spec.groups));
  for (size_t k = 0; k < flags.size(); ++k)
    s += (k ? "," : " ") + flags[k];
  return s;
}

Tally norm_exec::runFamily(const Family &family, const RunOptions &options) {
  Tally tally;
  std::vector<std::unique_ptr<Kernel>> kernels =
      compileFamily(family, options, tally);
  uint64_t familySeed = mix(options.seed, hashString(describeFamily(family)));
  const KernelSpec &spec = family.spec;

  for (int64_t n : family.ns) {
    for (int64_t m : family.ms) {
      Problem p = generateProblem(spec, m, n, mix(familySeed, mix(m, n)));
      Expectations expected = spec.isGrad()
                                  ? expectGrad(spec, p, options.selfTest)
                                  : expectForward(spec, p, options.selfTest);
      ShapeBuffers buffers(family, p);
      for (size_t k = 0; k < kernels.size(); ++k) {
        if (!kernels[k])
          continue;
        const std::string &strategy = family.strategies[k];
        std::string name = caseName(family, strategy, m, n);
        std::string reproduce = reproduceFlags(family, strategy, m, n, options);
        if (options.onStart)
          options.onStart(name, reproduce, tally);
        RunResult r = Run(family, *kernels[k], buffers, expected, options)
                          .execute(strategy == "deterministic");
        printResult(name, r, reproduce, options.timing);
        ++(r.ok() ? tally.passed : tally.failed);
      }
    }
  }
  return tally;
}
