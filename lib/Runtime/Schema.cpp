//===- Schema.cpp - the manifest schema as JSON, for bindings -------------===//
//
// Part of mlir-norm.
//
// normrt_manifest_schema: the tables of norm/Support/ManifestSchema.h (the
// fields of ManifestSchema.def, the enums, the argument kinds) and the C
// header's constants (dtype and status codes, NORMRT_MAX_RANK, the layout
// of NormrtTensor) as one JSON object, so that a binding in another
// language checks its own view against the library it loaded
// (python/norm_mlir/_runtime.py does, at load).
//
//===----------------------------------------------------------------------===//

#include "norm-c/Runtime.h"

#include "norm/Support/ManifestSchema.h"

#include <cstddef>
#include <string>
#include <utility>

namespace manifest = mlir::norm::manifest;

static_assert(int(manifest::Dtype::F32) == NORMRT_F32 &&
                  int(manifest::Dtype::F16) == NORMRT_F16 &&
                  int(manifest::Dtype::BF16) == NORMRT_BF16,
              "the manifest's dtypes and the C API's NormrtDtype");

namespace {

/// A JSON string of `s` (the schema's names are plain ASCII).
std::string quote(std::string_view s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      q += '\\';
    q += c;
  }
  return q + "\"";
}

/// `"key": value` pairs joined into an object.
class ObjectWriter {
public:
  ObjectWriter &add(std::string_view key, const std::string &value) {
    text += (text.empty() ? "{" : ", ") + quote(key) + ": " + value;
    return *this;
  }
  std::string str() const { return text.empty() ? "{}" : text + "}"; }

private:
  std::string text;
};

template <size_t Size>
std::string nameList(const std::string_view (&names)[Size]) {
  std::string s = "[";
  for (size_t i = 0; i < Size; ++i)
    s += (i ? ", " : "") + quote(names[i]);
  return s + "]";
}

std::string boolean(bool b) { return b ? "true" : "false"; }

/// One field: its JSON type, whether it is required, an integer's range and
/// the `#norm.kernel` key of a record field.
std::string describeField(const manifest::Field &f) {
  ObjectWriter o;
  o.add("type", quote(manifest::toString(f.type)))
      .add("required", boolean(f.required));
  if (f.type == manifest::FieldType::Integer ||
      f.type == manifest::FieldType::GridValue)
    o.add("min", std::to_string(f.min)).add("max", std::to_string(f.max));
  if (!f.attrKey.empty())
    o.add("attribute", quote(f.attrKey));
  return o.str();
}

std::string describeSchema() {
  // The fields, object by object, in table order.
  ObjectWriter objects;
  for (size_t i = 0; i < std::size(manifest::kObjectNames); ++i) {
    ObjectWriter fields;
    for (const manifest::Field *f : manifest::kFields)
      if (size_t(f->object) == i)
        fields.add(f->key, describeField(*f));
    objects.add(manifest::kObjectNames[i], fields.str());
  }
  ObjectWriter kinds;
  for (const manifest::ArgumentKindInfo &k : manifest::kArgumentKinds) {
    std::string roles = "[";
    if (k.input)
      roles += quote(manifest::toString(manifest::Role::Input));
    if (k.output)
      roles += std::string(k.input ? ", " : "") +
               quote(manifest::toString(manifest::Role::Output));
    kinds.add(k.name, ObjectWriter()
                          .add("shape", quote(manifest::toString(k.shape)))
                          .add("roles", roles + "]")
                          .str());
  }
  ObjectWriter enums;
  enums.add("dtype", nameList(manifest::kDtypeNames))
      .add("kernel_kind", nameList(manifest::kKernelKindNames))
      .add("grid_rule", nameList(manifest::kGridRuleNames))
      .add("role", nameList(manifest::kRoleNames))
      .add("argument_shape", nameList(manifest::kArgumentShapeNames));

  // The C header's constants.
  ObjectWriter dtypes, status, tensor;
  dtypes.add("f32", std::to_string(NORMRT_F32))
      .add("f16", std::to_string(NORMRT_F16))
      .add("bf16", std::to_string(NORMRT_BF16));
  status.add("OK", std::to_string(NORMRT_OK))
      .add("INVALID_ARGUMENT", std::to_string(NORMRT_ERROR_INVALID_ARGUMENT))
      .add("MANIFEST", std::to_string(NORMRT_ERROR_MANIFEST))
      .add("DRIVER", std::to_string(NORMRT_ERROR_DRIVER))
      .add("WORKSPACE", std::to_string(NORMRT_ERROR_WORKSPACE));
  tensor.add("size", std::to_string(sizeof(NormrtTensor)))
      .add("name", std::to_string(offsetof(NormrtTensor, name)))
      .add("data", std::to_string(offsetof(NormrtTensor, data)))
      .add("dtype", std::to_string(offsetof(NormrtTensor, dtype)))
      .add("rank", std::to_string(offsetof(NormrtTensor, rank)))
      .add("sizes", std::to_string(offsetof(NormrtTensor, sizes)))
      .add("strides", std::to_string(offsetof(NormrtTensor, strides)));
  ObjectWriter capi;
  capi.add("max_rank", std::to_string(NORMRT_MAX_RANK))
      .add("dtype", dtypes.str())
      .add("status", status.str())
      .add("tensor", tensor.str());

  return ObjectWriter()
      .add("format_version", std::to_string(manifest::kFormatVersion))
      .add("objects", objects.str())
      .add("argument_kinds", kinds.str())
      .add("enums", enums.str())
      .add("c_api", capi.str())
      .str();
}

} // namespace

extern "C" const char *normrt_manifest_schema(void) {
  static const std::string schema = describeSchema();
  return schema.c_str();
}
