//===- norm-exec-test.cpp - numerics of the norm lowering on the CPU ------===//
//
// Part of mlir-norm.
//
// For each configuration selected on the command line, writes a kernel that
// applies one norm op to memref arguments, lowers it with a textual pass
// pipeline (by default norm-lower-to-loops then norm-cpu-to-llvm), JIT-
// compiles it with mlir::ExecutionEngine and runs it on fresh random inputs
// of every requested shape, comparing each output with a float64 reference.
// One line per (configuration, strategy, shape), then "N passed, N failed";
// the exit status is non-zero on any failure.
//
// Each configuration runs in a child process, so a kernel that crashes or
// hangs is reported as a FAIL of the case it was running, with the flags that
// reproduce it, and the remaining configurations still run.
//
//===----------------------------------------------------------------------===//

#include "CaseRunner.h"
#include "Reference.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <csignal>
#include <cstring>
#include <malloc.h>
#include <random>
#include <sys/wait.h>
#include <unistd.h>

using namespace norm_exec;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory category("norm-exec-test options");

cl::list<std::string> modes("mode", cl::CommaSeparated, cl::cat(category),
                            cl::desc("grad, forward (default: grad)"));
cl::list<std::string> ops("op", cl::CommaSeparated, cl::cat(category),
                          cl::desc("layer, rms (default: both)"));
cl::list<std::string>
    dtypes("dtype", cl::CommaSeparated, cl::cat(category),
           cl::desc("Element types of x: f32, f16, bf16 (default: all)"));
cl::opt<std::string> weightDtype(
    "weight-dtype", cl::init("same"), cl::cat(category),
    cl::desc("Type of weight/bias/dweight/dbias: same (as x), f32, f16, bf16"));
cl::list<std::string> params(
    "params", cl::CommaSeparated, cl::cat(category),
    cl::desc("Which of weight and bias (grad: dbias) are present: w+b, w, b, "
             "none (default: all; RMSNorm skips those with b)"));
cl::list<std::string> strategies(
    "strategy", cl::CommaSeparated, cl::cat(category),
    cl::desc("deterministic, grouped_atomic, atomic, locked (default: all)"));
cl::list<int64_t> nValues("n", cl::CommaSeparated, cl::cat(category),
                          cl::desc("N, the normalised dimension (default: "
                                   "1,3,24,128,1000,4095,4096)"));
cl::list<int64_t> mValues("m", cl::CommaSeparated, cl::cat(category),
                          cl::desc("M, the rows (default: 1,7,1000)"));
cl::opt<int64_t> groups("groups", cl::init(0), cl::cat(category),
                        cl::desc("The grad ops' `groups` attribute (0: none; "
                                 "not used with the atomic strategy)"));
cl::opt<bool> dresidual("dresidual", cl::cat(category),
                        cl::desc("Grad: add a dresidual operand"));
cl::opt<bool> zeroCentered("zero-centered", cl::cat(category),
                           cl::desc("zero_centered_weight (configurations "
                                    "without a weight are skipped)"));
cl::opt<bool> inPlace("in-place", cl::cat(category),
                      cl::desc("Grad: pass the dy buffer as dx too"));
cl::opt<bool> strided("strided", cl::cat(category),
                      cl::desc("Rows with a row stride larger than N and a "
                               "non-zero offset (strided<[?, 1], offset: ?>)"));
cl::opt<int64_t> batch("batch", cl::init(0), cl::cat(category),
                       cl::desc("Rank-3 rows [B, M / B, N] with [B, M / B] "
                                "statistics (B must divide every M)"));
cl::opt<bool> staticN("static-n", cl::cat(category),
                      cl::desc("N static in the types (one kernel per N)"));
cl::opt<bool> valueForm("value-form", cl::cat(category),
                        cl::desc("The tensor op, through bufferization"));
cl::opt<bool> xhat("xhat", cl::cat(category),
                   cl::desc("Forward: also write xhat"));
cl::opt<bool> residual("residual", cl::cat(category),
                       cl::desc("Forward: the fused residual add (a residual "
                                "input; h = x + residual written, bitwise)"));

cl::opt<std::string> pipeline(
    "pipeline", cl::cat(category),
    cl::init("builtin.module(norm-lower-to-loops,norm-cpu-to-llvm)"),
    cl::desc("Textual pass pipeline from the kernel to the LLVM dialect"));
cl::opt<std::string>
    backend("backend", cl::init("jit"), cl::cat(category),
            cl::desc("jit (the lowering under test) or host (a plain f32 C++ "
                     "implementation: the harness's positive control)"));
cl::opt<unsigned> optLevel("opt-level", cl::init(2), cl::cat(category),
                           cl::desc("LLVM optimisation level of the JIT"));
cl::list<std::string> sharedLibs(
    "shared-libs", cl::CommaSeparated, cl::cat(category),
    cl::desc("Libraries the JIT resolves symbols in (default: the MLIR C "
             "runner utils, for memrefCopy)"));
cl::opt<uint64_t> seed("seed", cl::cat(category),
                       cl::desc("Random seed (default: from random_device)"));
cl::opt<std::string>
    selfTest("self-test-corrupt", cl::init("none"), cl::cat(category),
             cl::desc("Inject a defect that must FAIL: unwritten, perturb, "
                      "nondeterministic, reference, crash, hang, h-bit"));
cl::opt<double> roundingSlack(
    "rounding-slack", cl::init(1.5), cl::cat(category),
    cl::desc("f16/bf16 outputs may be off by this many unit roundoffs "
             "(norm-wise relative error)"));
cl::opt<bool> checkReference(
    "check-reference", cl::cat(category),
    cl::desc("Instead of running kernels, check the float64 backward "
             "reference against central differences of the forward one"));
cl::opt<unsigned> timeout("timeout", cl::init(300), cl::cat(category),
                          cl::desc("Seconds one configuration may run"));
cl::opt<bool> noFork("no-fork", cl::cat(category),
                     cl::desc("Run in this process (for debuggers)"));
cl::opt<bool> printSource("print-source", cl::cat(category),
                          cl::desc("Print each kernel's MLIR, do not run"));
cl::opt<bool> printLowered("print-lowered", cl::cat(category),
                           cl::desc("Print each lowered module to stderr"));
cl::opt<bool> timing("time", cl::cat(category),
                     cl::desc("Print compile and run times"));

#ifndef NORM_RUNNER_UTILS_LIB
#define NORM_RUNNER_UTILS_LIB ""
#endif

//===----------------------------------------------------------------------===//
// The matrix
//===----------------------------------------------------------------------===//

template <typename T>
std::vector<T> orDefault(const cl::list<T> &list, std::vector<T> fallback) {
  if (list.empty())
    return fallback;
  return std::vector<T>(list.begin(), list.end());
}

/// Reports a bad command line and exits.
[[noreturn]] void usageError(const llvm::Twine &message) {
  llvm::errs() << "norm-exec-test: " << message << "\n";
  std::exit(2);
}

DType parseDTypeOrExit(llvm::StringRef s) {
  std::optional<DType> t = parseDType(s);
  if (!t)
    usageError("unknown element type '" + s + "'");
  return *t;
}

/// The families (one per kernel configuration) of one op and direction.
void addFamilies(OpKind op, Direction dir, std::vector<Family> &families) {
  std::vector<std::string> grad = orDefault<std::string>(
      strategies, {"deterministic", "grouped_atomic", "atomic", "locked"});
  for (const std::string &dt :
       orDefault<std::string>(dtypes, {"f32", "f16", "bf16"}))
    for (const std::string &pr :
         orDefault<std::string>(params, {"w+b", "w", "b", "none"})) {
      if (pr != "w+b" && pr != "w" && pr != "b" && pr != "none")
        usageError("unknown --params value '" + pr + "'");
      KernelSpec spec;
      spec.op = op;
      spec.dir = dir;
      spec.xType = parseDTypeOrExit(dt);
      spec.paramType =
          weightDtype == "same" ? spec.xType : parseDTypeOrExit(weightDtype);
      spec.weight = pr == "w+b" || pr == "w";
      spec.bias = pr == "w+b" || pr == "b";
      if (op == OpKind::RMSNorm && spec.bias)
        continue;
      if (zeroCentered && !spec.weight)
        continue;
      spec.zeroCentered = zeroCentered;
      spec.strided = strided;
      spec.batch = batch;
      spec.valueForm = valueForm;
      bool isGrad = dir == Direction::Grad;
      spec.dresidual = isGrad && dresidual;
      spec.xhatOut = !isGrad && xhat;
      spec.residual = !isGrad && residual;
      Family f;
      f.spec = spec;
      f.inPlace = isGrad && inPlace;
      f.ms = orDefault<int64_t>(mValues, {1, 7, 1000});
      f.ns = orDefault<int64_t>(nValues, {1, 3, 24, 128, 1000, 4095, 4096});
      f.strategies = {""};
      if (isGrad) {
        f.strategies = grad;
        // `groups` is meaningless with atomic (the verifier rejects it) and
        // without dweight/dbias.
        if (groups && (spec.weight || spec.bias)) {
          f.strategies.erase(
              std::remove(f.strategies.begin(), f.strategies.end(), "atomic"),
              f.strategies.end());
          f.spec.groups = groups;
        }
      }
      if (!staticN) {
        families.push_back(f);
        continue;
      }
      for (int64_t n : f.ns) {
        Family one = f;
        one.spec.staticN = n;
        one.ns = {n};
        families.push_back(one);
      }
    }
}

std::vector<Family> buildFamilies() {
  if (batch < 0 || (batch && strided))
    usageError("--batch wants a positive B, and contiguous rows (not "
               "--strided: the lowering views [B, S] as one row extent)");
  if (batch)
    for (int64_t m : orDefault<int64_t>(mValues, {1, 7, 1000}))
      if (m % batch)
        usageError("--batch=" + std::to_string(batch) + " does not divide "
                   "M = " + std::to_string(m));
  if (valueForm && inPlace)
    usageError("--value-form with --in-place: materialize_in_destination "
               "into a buffer that a restrict to_tensor reads is invalid");
  std::vector<Family> families;
  for (const std::string &mode : orDefault<std::string>(modes, {"grad"}))
    for (const std::string &op :
         orDefault<std::string>(ops, {"layer", "rms"})) {
      if (op != "layer" && op != "rms")
        usageError("unknown --op '" + op + "'");
      if (mode != "grad" && mode != "forward")
        usageError("unknown --mode '" + mode + "'");
      addFamilies(op == "layer" ? OpKind::LayerNorm : OpKind::RMSNorm,
                  mode == "grad" ? Direction::Grad : Direction::Forward,
                  families);
    }
  return families;
}

SelfTest parseSelfTest() {
  if (selfTest == "none")
    return SelfTest::None;
  if (selfTest == "unwritten")
    return SelfTest::Unwritten;
  if (selfTest == "perturb")
    return SelfTest::Perturb;
  if (selfTest == "nondeterministic")
    return SelfTest::Nondeterministic;
  if (selfTest == "reference")
    return SelfTest::Reference;
  if (selfTest == "crash")
    return SelfTest::Crash;
  if (selfTest == "hang")
    return SelfTest::Hang;
  if (selfTest == "h-bit")
    return SelfTest::HBit;
  usageError("unknown --self-test-corrupt '" + selfTest + "'");
}

//===----------------------------------------------------------------------===//
// Running a family in a child process
//===----------------------------------------------------------------------===//

void writeAll(int fd, const std::string &s) {
  const char *p = s.data();
  size_t left = s.size();
  while (left) {
    ssize_t k = ::write(fd, p, left);
    if (k <= 0)
      return;
    p += k;
    left -= k;
  }
}

/// What a child process reported on its pipe.
struct ChildReport {
  bool finished = false;
  Tally final; ///< from "T"
  Tally sofar; ///< from the last "S"
  std::string lastCase, lastReproduce;
};

ChildReport parseChildMessages(llvm::StringRef messages, const Family &family) {
  ChildReport r;
  r.lastCase = describeFamily(family) + " (before the first run)";
  r.lastReproduce = "the configuration's flags";
  llvm::SmallVector<llvm::StringRef> lines;
  messages.split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    auto [tag, rest] = line.split(' ');
    auto [passed, afterPassed] = rest.split(' ');
    auto [failed, text] = afterPassed.split(' ');
    Tally t;
    passed.getAsInteger(10, t.passed);
    failed.getAsInteger(10, t.failed);
    if (tag == "T") {
      r.finished = true;
      r.final = t;
    } else if (tag == "S") {
      r.sofar = t;
      auto [name, reproduce] = text.split('\t');
      r.lastCase = name.str();
      r.lastReproduce = reproduce.str();
    }
  }
  return r;
}

/// Runs the family in a forked child. The child announces each case on a
/// pipe ("S <passed> <failed> <case>\t<reproduce>", with the counts so far)
/// and ends with "T <passed> <failed>"; if it dies instead, the case it
/// announced last is reported as failed.
Tally runIsolated(const Family &family, RunOptions options) {
  llvm::outs().flush();
  int fds[2];
  if (::pipe(fds) != 0 || noFork)
    return runFamily(family, options);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    int fd = fds[1];
    options.onStart = [&](const std::string &name, const std::string &reproduce,
                          const Tally &sofar) {
      writeAll(fd, "S " + std::to_string(sofar.passed) + " " +
                       std::to_string(sofar.failed) + " " + name + "\t" +
                       reproduce + "\n");
    };
    ::alarm(timeout);
    Tally t = runFamily(family, options);
    llvm::outs().flush();
    writeAll(fd, "T " + std::to_string(t.passed) + " " +
                     std::to_string(t.failed) + "\n");
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string messages;
  char chunk[4096];
  for (ssize_t k; (k = ::read(fds[0], chunk, sizeof(chunk))) > 0;)
    messages.append(chunk, k);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);

  ChildReport report = parseChildMessages(messages, family);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && report.finished)
    return report.final;

  // The child died: the PASS/FAIL lines before the crash are on stdout
  // already; count them, plus the case it died in.
  llvm::raw_ostream &os = llvm::outs();
  os << "FAIL " << report.lastCase << " [";
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
    os << "timed out: the configuration ran over " << timeout << " s";
  else if (WIFSIGNALED(status))
    os << "crashed: signal " << WTERMSIG(status) << " ("
       << strsignal(WTERMSIG(status)) << ")";
  else
    os << "exited with status " << WEXITSTATUS(status);
  os << "; the configuration's later cases did not run]\n"
     << "  reproduce: " << report.lastReproduce << "\n";
  os.flush();
  Tally tally = report.sofar;
  ++tally.failed;
  return tally;
}

/// --check-reference: the backward reference is the gradient of the
/// forward reference, for every selected configuration.
Tally runReferenceCheck(const std::vector<Family> &families) {
  Tally tally;
  for (const Family &family : families) {
    if (!family.spec.isGrad())
      continue;
    Problem p = generateProblem(family.spec, 3, 5, seed);
    double deviation = finiteDifferenceDeviation(family.spec, p);
    bool ok = deviation < 1e-6;
    llvm::outs() << (ok ? "PASS" : "FAIL") << " reference-gradient "
                 << describeFamily(family)
                 << " deviation=" << llvm::format("%.1e", deviation) << "\n";
    ++(ok ? tally.passed : tally.failed);
  }
  return tally;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // Every shape allocates and frees buffers of up to tens of MB (ours and
  // the kernels' workspaces); keeping freed memory in the heap instead of
  // unmapping it saves the page faults of mapping it again, a third of the
  // run time on large shapes.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "norm-exec-test: runs norm kernels lowered for the CPU against float64 "
      "references\n");
  if (seed.getNumOccurrences() == 0)
    seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^
           std::random_device{}();

  std::vector<Family> families = buildFamilies();
  RunOptions options;
  options.hostBackend = backend == "host";
  if (!options.hostBackend && backend != "jit")
    usageError("unknown --backend '" + backend + "'");
  options.jit.pipeline = pipeline;
  options.jit.optLevel = optLevel;
  options.jit.sharedLibs =
      orDefault<std::string>(sharedLibs, {std::string(NORM_RUNNER_UTILS_LIB)});
  options.jit.printLowered = printLowered;
  options.seed = seed;
  options.selfTest = parseSelfTest();
  options.roundingSlack = roundingSlack;
  options.timing = timing;

  if (printSource) {
    // Chunks for `norm-opt --split-input-file`.
    const char *separator = "";
    for (const Family &f : families)
      for (const std::string &s : f.strategies) {
        KernelSpec spec = f.spec;
        if (spec.isGrad())
          spec.strategy = s;
        llvm::outs() << separator << "// " << describeFamily(f)
                     << (s.empty() ? "" : " ") << s << "\n"
                     << kernelSource(spec);
        separator = "// -----\n";
      }
    return 0;
  }

  llvm::outs() << "norm-exec-test: seed=" << seed;
  if (!checkReference)
    llvm::outs() << " backend=" << backend;
  if (!checkReference && !options.hostBackend)
    llvm::outs() << " pipeline=" << pipeline;
  llvm::outs() << "\n";

  Tally total;
  if (checkReference) {
    total = runReferenceCheck(families);
  } else {
    initializeJit();
    for (const Family &family : families) {
      Tally t = runIsolated(family, options);
      total.passed += t.passed;
      total.failed += t.failed;
    }
  }
  if (total.failed)
    llvm::outs() << "FAILED; rerun with --seed=" << seed
                 << " to draw the same inputs\n";
  llvm::outs() << total.passed << " passed, " << total.failed << " failed\n";
  llvm::outs().flush();
  return total.failed || total.passed == 0 ? 1 : 0;
}
