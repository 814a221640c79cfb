//===- FieldReader.cpp - manifest fields read against the schema ---------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "FieldReader.h"

#include <type_traits>

using namespace mlir::norm::runtime;
namespace manifest = mlir::norm::manifest;
using manifest::Field;
using manifest::FieldType;
using manifest::GridRule;
using manifest::KernelKind;

bool FieldReader::fail(const std::string &where, const std::string &what) {
  if (error.empty())
    error = "manifest: " + (where.empty() ? "" : where + ": ") + what;
  return false;
}

bool FieldReader::get(const JsonValue &object, const Field &f,
                      const std::string &where, const JsonValue *&out) {
  std::string key = "\"" + std::string(f.key) + "\"";
  out = object.get(f.key);
  // Arrays and objects have one message for absent and mistyped.
  switch (f.type) {
  case FieldType::Array:
    if (out ? out->isArray() : !f.required)
      return true;
    return fail(where, key + " must be an array");
  case FieldType::Object:
    if (!out || out->isObject())
      return out || !f.required ? true : fail(where, "missing " + key);
    return fail(where.empty() ? std::string(f.key)
                              : where + "." + std::string(f.key),
                "must be an object, got " + kindOf(*out));
  default:
    break;
  }
  if (!out)
    return f.required ? fail(where, "missing " + key) : true;
  const char *expected = nullptr;
  switch (f.type) {
  case FieldType::String:
    if (!out->isString())
      expected = "a string";
    break;
  case FieldType::Integer:
    if (!out->isInteger())
      expected = "an integer";
    break;
  case FieldType::Bool:
    if (!out->isBool())
      expected = "a boolean";
    break;
  case FieldType::GridValue:
    if (!out->isInteger() && !out->isString())
      expected = "an integer or a string";
    break;
  default:
    break;
  }
  if (expected)
    return fail(where, key + " must be " + expected + ", got " + kindOf(*out));
  if (out->isInteger())
    if (std::string range = manifest::rangeError(f, out->getInteger(), key);
        !range.empty())
      return fail(where, range);
  return true;
}

bool FieldReader::checkKeys(const JsonValue &object, manifest::Object kind,
                            const std::string &where) {
  std::string name(manifest::toString(kind));
  for (const auto &[key, value] : object.getObject())
    if (!manifest::findField(kind, key))
      return fail(where, "unknown key \"" + key + "\" (" +
                             (name[0] == 'a' ? "an " : "a ") + name + " has " +
                             manifest::listKeys(kind) + ")");
  return true;
}

bool FieldReader::getString(const JsonValue &object, const Field &f,
                            const std::string &where, std::string &out) {
  const JsonValue *v;
  if (!get(object, f, where, v))
    return false;
  if (v)
    out = v->getString();
  return true;
}

bool FieldReader::getInteger(const JsonValue &object, const Field &f,
                             const std::string &where, int64_t &out) {
  const JsonValue *v;
  if (!get(object, f, where, v))
    return false;
  if (v)
    out = v->getInteger();
  return true;
}

bool FieldReader::readKernelRecord(const JsonValue &v, const std::string &where,
                                   manifest::KernelRecord &record,
                                   int64_t &gridConstant) {
  bool ok = true;
  record.forEachField([&](const Field &f, auto &member) {
    using T = std::decay_t<decltype(member)>;
    const JsonValue *value = nullptr;
    if (!ok || !(ok = get(v, f, where, value)) || !value)
      return;
    if constexpr (std::is_same_v<T, std::string>) {
      member = value->getString();
    } else if constexpr (std::is_same_v<T, int64_t>) {
      member = value->getInteger();
    } else if constexpr (std::is_same_v<T, std::optional<bool>>) {
      member = value->getBool();
    } else if constexpr (std::is_same_v<T, KernelKind>) {
      std::optional<KernelKind> kind =
          manifest::parseKernelKind(value->getString());
      if (!kind)
        ok = fail(where,
                  "unknown kind '" + value->getString() + "' (expected " +
                      manifest::listNames(manifest::kKernelKindNames) + ")");
      else
        member = *kind;
    } else if constexpr (std::is_same_v<T, GridRule>) {
      if (value->isInteger()) {
        member = GridRule::Constant;
        gridConstant = value->getInteger();
        return;
      }
      // A constant grid is a number, never the rule's name.
      std::optional<GridRule> rule =
          manifest::parseGridRule(value->getString());
      if (!rule || *rule == GridRule::Constant)
        ok = fail(where, "unknown grid rule '" + value->getString() +
                             "' (expected a number, " +
                             manifest::listNames(manifest::kGridRuleNames, 1) +
                             ")");
      else
        member = *rule;
    } else {
      static_assert(manifest::kUnhandledFieldType<T>,
                    "a kernel field of an unhandled type");
    }
  });
  return ok;
}
