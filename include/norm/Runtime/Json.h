//===- Json.h - a small JSON reader for launch manifests --------*- C++ -*-===//
//
// Part of mlir-norm.
//
// The runtime reads the manifests norm-compile writes without linking LLVM,
// so it carries its own reader: a recursive-descent parser of RFC 8259 JSON
// into a tree of JsonValue. Integers that fit in int64 keep their exact
// value; other numbers are doubles. Duplicate object keys are an error.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_JSON_H
#define NORM_RUNTIME_JSON_H

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mlir::norm::runtime {

/// One JSON value. Objects keep their keys in document order.
class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Kind getKind() const { return kind; }
  bool isNull() const { return kind == Kind::Null; }
  bool isBool() const { return kind == Kind::Bool; }
  bool isNumber() const { return kind == Kind::Number; }
  /// A number written without fraction or exponent that fits in int64.
  bool isInteger() const { return kind == Kind::Number && exactInteger; }
  bool isString() const { return kind == Kind::String; }
  bool isArray() const { return kind == Kind::Array; }
  bool isObject() const { return kind == Kind::Object; }

  bool getBool() const { return boolean; }
  double getNumber() const { return number; }
  int64_t getInteger() const { return integer; }
  const std::string &getString() const { return string; }
  const std::vector<JsonValue> &getArray() const { return array; }
  const std::vector<std::pair<std::string, JsonValue>> &getObject() const {
    return object;
  }

  /// The member `key` of an object, or null if absent (or not an object).
  const JsonValue *get(std::string_view key) const;

  /// The kind as a word for messages: "null", "a boolean", "a number", ...
  static const char *describe(Kind kind);

private:
  friend class JsonParser;

  Kind kind = Kind::Null;
  bool boolean = false;
  bool exactInteger = false;
  double number = 0;
  int64_t integer = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;
};

/// Parses `text` (one JSON value, optionally surrounded by whitespace) into
/// `result`. On failure returns false and sets `error` to
/// "line L, column C: <what>".
bool parseJson(std::string_view text, JsonValue &result, std::string &error);

} // namespace mlir::norm::runtime

#endif // NORM_RUNTIME_JSON_H
