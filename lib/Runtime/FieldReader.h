//===- FieldReader.h - manifest fields read against the schema --*- C++ -*-===//
//
// Part of mlir-norm.
//
// The table-driven half of the manifest reader: a field of a JSON object
// checked against norm/Support/ManifestSchema.def (JSON type, required,
// integer range), the keys of an object against its fields, and a kernel's
// launch record read field by field. lib/Runtime/Manifest.cpp builds the
// manifest's meaning on it.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_LIB_RUNTIME_FIELDREADER_H
#define NORM_LIB_RUNTIME_FIELDREADER_H

#include "norm/Runtime/Json.h"
#include "norm/Support/ManifestSchema.h"

#include <string>

namespace mlir::norm::runtime {

/// Reads schema fields; every failure records the first error, "manifest:
/// <where>: <what>", and returns false.
class FieldReader {
public:
  std::string error;

protected:
  bool fail(const std::string &where, const std::string &what);

  static std::string kindOf(const JsonValue &v) {
    return JsonValue::describe(v.getKind());
  }

  /// `f` of `object`, checked against its schema type (and range); `out` is
  /// null if it is absent and optional.
  bool get(const JsonValue &object, const manifest::Field &f,
           const std::string &where, const JsonValue *&out);
  bool getString(const JsonValue &object, const manifest::Field &f,
                 const std::string &where, std::string &out);
  bool getInteger(const JsonValue &object, const manifest::Field &f,
                  const std::string &where, int64_t &out);
  /// Every key of `object` is a field of `kind` in the schema.
  bool checkKeys(const JsonValue &object, manifest::Object kind,
                 const std::string &where);
  /// The launch record of the kernel object `v`, field by field from the
  /// schema; a numeric "grid" is GridRule::Constant and its number
  /// `gridConstant`.
  bool readKernelRecord(const JsonValue &v, const std::string &where,
                        manifest::KernelRecord &record, int64_t &gridConstant);
};

} // namespace mlir::norm::runtime

#endif // NORM_LIB_RUNTIME_FIELDREADER_H
