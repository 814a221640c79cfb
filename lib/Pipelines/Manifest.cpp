//===- Manifest.cpp - the launch manifest of a compiled function ---------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Pipelines/Manifest.h"
#include "norm/Dialect/Norm/IR/NormDialect.h"
#include "norm/Dialect/Norm/IR/NormOps.h"
#include "norm/Dialect/Norm/IR/StageContract.h"
#include "norm/Dialect/Norm/Utils/NormFunction.h"
#include "norm/Support/ManifestSchema.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace {
namespace manifest = norm::manifest;
namespace field = norm::manifest::field;

/// The JSON key of a schema field.
llvm::StringRef key(const manifest::Field &f) {
  return llvm::StringRef(f.key.data(), f.key.size());
}
std::string str(std::string_view s) { return std::string(s); }

/// A launch record's field as JSON.
template <typename T>
llvm::json::Value toJson(const T &value) {
  if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, int64_t>)
    return value;
  else if constexpr (std::is_same_v<T, std::optional<bool>>)
    return *value;
  else if constexpr (std::is_same_v<T, manifest::KernelKind> ||
                     std::is_same_v<T, manifest::GridRule>)
    return str(manifest::toString(value));
  else
    static_assert(manifest::kUnhandledFieldType<T>,
                  "a kernel field of an unhandled type");
}

/// What a norm op's operand of `role` is, in the manifest's terms.
manifest::ArgumentKind argumentKindOf(norm::NormArgRole role) {
  using manifest::ArgumentKind;
  using norm::NormArgRole;
  switch (role) {
  case NormArgRole::Dy:
    return ArgumentKind::Dy;
  case NormArgRole::X:
    return ArgumentKind::X;
  case NormArgRole::Mean:
  case NormArgRole::MeanOut:
    return ArgumentKind::Mean;
  case NormArgRole::Rstd:
  case NormArgRole::RstdOut:
    return ArgumentKind::Rstd;
  case NormArgRole::Weight:
    return ArgumentKind::Weight;
  case NormArgRole::Bias:
    return ArgumentKind::Bias;
  case NormArgRole::Dresidual:
    return ArgumentKind::Dresidual;
  case NormArgRole::Dx:
    return ArgumentKind::Dx;
  case NormArgRole::Dweight:
    return ArgumentKind::Dweight;
  case NormArgRole::Dbias:
    return ArgumentKind::Dbias;
  case NormArgRole::Y:
    return ArgumentKind::Y;
  case NormArgRole::XhatOut:
    return ArgumentKind::Xhat;
  case NormArgRole::Residual:
    return ArgumentKind::Residual;
  case NormArgRole::HOut:
    return ArgumentKind::H;
  }
  llvm_unreachable("unknown NormArgRole");
}
} // namespace

norm::ManifestArgument norm::manifestArgumentOf(NormArgRole role) {
  manifest::Role io =
      isOutputRole(role) ? manifest::Role::Output : manifest::Role::Input;
  return {normArgKeyword(role).str(), str(manifest::toString(io)),
          argumentKindOf(role)};
}

llvm::json::Object
norm::buildManifest(func::FuncOp func, const NormToGPUBinaryOptions &options,
                    ArrayRef<ManifestArgument> argsFromSpec,
                    const std::optional<ManifestSpec> &specIn) {
  llvm::json::Object m;
  m[key(field::kManifestFormatVersion)] = manifest::kFormatVersion;
  m[key(field::kManifestFunction)] = func.getName().str();
  m[key(field::kManifestChip)] = options.chip.getValue();
  m[key(field::kManifestFormat)] = options.format.getValue();
  m[key(field::kManifestThreads)] = options.threads.getValue();
  if (specIn) {
    llvm::json::Object spec;
    spec[key(field::kSpecOp)] = specIn->op;
    spec[key(field::kSpecN)] = specIn->n;
    spec[key(field::kSpecDtype)] = specIn->dtype;
    spec[key(field::kSpecWeightDtype)] =
        specIn->weightDtype.empty() ? specIn->dtype : specIn->weightDtype;
    std::optional<norm::ReductionStrategy> strategy =
        norm::toReductionStrategy(options.strategy);
    spec[key(field::kSpecStrategy)] =
        norm::stringifyReductionStrategy(
            strategy.value_or(norm::ReductionStrategy::Deterministic))
            .str();
    spec[key(field::kSpecGroups)] = options.groups.getValue();
    m[key(field::kManifestSpec)] = std::move(spec);
  }

  auto dtypeOf = [](Type t) -> std::string {
    if (t.isF32())
      return str(manifest::toString(manifest::Dtype::F32));
    if (t.isF16())
      return str(manifest::toString(manifest::Dtype::F16));
    if (t.isBF16())
      return str(manifest::toString(manifest::Dtype::BF16));
    if (t.isInteger(32))
      return str(manifest::toString(manifest::Dtype::I32));
    return "unknown";
  };
  auto shapeOf = [](MemRefType t) {
    llvm::json::Array shape;
    for (int64_t d : t.getShape())
      shape.push_back(ShapedType::isDynamic(d)
                          ? llvm::json::Value(str(manifest::kRowsExtentName))
                          : llvm::json::Value(d));
    return shape;
  };

  // The arguments the kernels take, in the function's order (an argument
  // only the author's own code uses is no business of the runtime's); a
  // kernel parameter names its argument by its index in this list.
  SmallVector<bool> launched(func.getNumArguments(), false);
  llvm::SetVector<Value> launchedAllocs;
  func.walk([&](gpu::LaunchFuncOp launch) {
    for (Value v : launch.getKernelOperands()) {
      if (auto arg = dyn_cast<BlockArgument>(v);
          arg && arg.getOwner() == &func.getBody().front())
        launched[arg.getArgNumber()] = true;
      else if (v.getDefiningOp<memref::AllocOp>())
        launchedAllocs.insert(v);
    }
  });
  DenseMap<Value, int64_t> argumentIndex;
  llvm::json::Array arguments;
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    if (!launched[i])
      continue;
    argumentIndex[arg] = arguments.size();
    llvm::json::Object a;
    ManifestArgument given =
        i < argsFromSpec.size()
            ? argsFromSpec[i]
            : ManifestArgument{("arg" + Twine(i)).str(), "",
                               manifest::ArgumentKind::Other};
    a[key(field::kArgumentName)] = given.name;
    a[key(field::kArgumentKind)] = str(manifest::toString(given.kind));
    if (!given.role.empty())
      a[key(field::kArgumentRole)] = given.role;
    auto t = cast<MemRefType>(arg.getType());
    a[key(field::kArgumentDtype)] = dtypeOf(t.getElementType());
    a[key(field::kArgumentShape)] = shapeOf(t);
    // The strides the kernels compute with: none for an identity layout
    // (they assume contiguous rows and ignore the tensor's strides).
    if (!t.getLayout().isIdentity()) {
      SmallVector<int64_t> strides;
      int64_t offset = 0;
      if (succeeded(t.getStridesAndOffset(strides, offset))) {
        llvm::json::Array list;
        for (int64_t s : strides)
          list.push_back(ShapedType::isDynamic(s)
                             ? llvm::json::Value(
                                   str(manifest::kRowsExtentName))
                             : llvm::json::Value(s));
        a[key(field::kArgumentStrides)] = std::move(list);
      }
    }
    arguments.push_back(std::move(a));
  }
  m[key(field::kManifestArguments)] = std::move(arguments);

  // Workspaces: the host allocations, in order. Which ones the runtime
  // clears follows from the kernels (those no `zero` kernel takes) and from
  // `written` (norm-map-to-gpu's `norm.written`: a kernel writes it whole).
  DenseMap<Value, int64_t> workspaceIndex;
  llvm::json::Array workspaces;
  func.walk([&](memref::AllocOp alloc) {
    if (!launchedAllocs.contains(alloc))
      return;
    llvm::json::Object w;
    auto t = alloc.getType();
    w[key(field::kWorkspaceDtype)] = dtypeOf(t.getElementType());
    llvm::json::Array shape;
    for (int64_t d : t.getShape()) {
      // The only run-time workspace extent is the number of groups.
      shape.push_back(ShapedType::isDynamic(d)
                          ? llvm::json::Value(str(manifest::kGroupsExtentName))
                          : llvm::json::Value(d));
    }
    w[key(field::kWorkspaceShape)] = std::move(shape);
    if (norm::isWrittenWhole(alloc))
      w[key(field::kWorkspaceWritten)] = true;
    workspaceIndex[alloc] = workspaces.size();
    workspaces.push_back(std::move(w));
  });
  m[key(field::kManifestWorkspaces)] = std::move(workspaces);

  // Kernels, in launch order, with their parameters.
  DenseMap<StringRef, norm::KernelAttr> records;
  if (auto list = func->getAttrOfType<ArrayAttr>("norm.kernels"))
    for (Attribute r : list)
      if (auto k = dyn_cast<norm::KernelAttr>(r))
        records[k.getRecord().name] = k;
  llvm::json::Array kernels;
  func.walk([&](gpu::LaunchFuncOp launch) {
    llvm::json::Object k;
    // The record's fields, each written when present (an optional integer
    // when not 0: `cluster` only above 1, as the mapping records it).
    norm::KernelAttr r = records.lookup(launch.getKernelName());
    if (r)
      r.getRecord().forEachField(
          [&](const manifest::Field &f, const auto &value) {
            if (manifest::isPresent(f, value))
              k[key(f)] = toJson(value);
          });
    k[key(field::kKernelName)] = launch.getKernelName().str();
    // The grid: a constant, or the rule the record names. For a clustered
    // kernel both count programs (clusters): where G * cluster folded to a
    // constant (a fixed G), the constant written is G, and the runtime
    // launches G * cluster blocks.
    int64_t cluster =
        r && r.getRecord().cluster > 1 ? r.getRecord().cluster : 1;
    if (auto c = getConstantIntValue(launch.getGridSizeX()))
      k[key(field::kKernelGrid)] = *c / cluster;
    llvm::json::Array params;
    for (Value v : launch.getKernelOperands()) {
      llvm::json::Object p;
      if (argumentIndex.count(v)) {
        p[key(field::kParamArgument)] = argumentIndex[v];
      } else if (workspaceIndex.count(v)) {
        p[key(field::kParamWorkspace)] = workspaceIndex[v];
      } else {
        p[key(field::kParamUnsupported)] = true;
      }
      if (auto t = dyn_cast<MemRefType>(v.getType()))
        p[key(field::kParamRank)] = t.getRank();
      params.push_back(std::move(p));
    }
    k[key(field::kKernelParams)] = std::move(params);
    kernels.push_back(std::move(k));
  });
  m[key(field::kManifestKernels)] = std::move(kernels);
  return m;
}

llvm::StringMap<SmallVector<norm::ManifestArgument>>
norm::manifestArgumentsFromOps(ModuleOp module) {
  llvm::StringMap<SmallVector<ManifestArgument>> result;
  module.walk([&](func::FuncOp f) {
    SmallVector<Operation *> normOps;
    f.walk([&](Operation *o) {
      if (isa<NormDialect>(o->getDialect()))
        normOps.push_back(o);
    });
    if (normOps.size() != 1)
      return;
    auto roles = normOperandRoles(normOps.front());
    SmallVector<ManifestArgument> args;
    for (BlockArgument a : f.getArguments()) {
      auto it = llvm::find_if(roles, [&](auto &r) { return r.first == a; });
      // An argument of the author's own code keeps the position name.
      if (it == roles.end())
        args.push_back({("arg" + Twine(a.getArgNumber())).str(), "",
                        manifest::ArgumentKind::Other});
      else
        args.push_back(manifestArgumentOf(it->second));
    }
    result[f.getName()] = std::move(args);
  });
  return result;
}

gpu::BinaryOp norm::kernelBinaryOf(ModuleOp module, func::FuncOp func) {
  gpu::BinaryOp binary;
  func.walk([&](gpu::LaunchFuncOp launch) {
    if (!binary)
      binary = module.lookupSymbol<gpu::BinaryOp>(launch.getKernelModuleName());
  });
  return binary;
}
