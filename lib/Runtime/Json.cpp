//===- Json.cpp - a small JSON reader for launch manifests ----------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Runtime/Json.h"

#include <charconv>

using namespace mlir::norm::runtime;

const JsonValue *JsonValue::get(std::string_view key) const {
  if (kind != Kind::Object)
    return nullptr;
  for (const auto &[k, v] : object)
    if (k == key)
      return &v;
  return nullptr;
}

const char *JsonValue::describe(Kind kind) {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "a boolean";
  case Kind::Number:
    return "a number";
  case Kind::String:
    return "a string";
  case Kind::Array:
    return "an array";
  case Kind::Object:
    return "an object";
  }
  return "a value";
}

namespace mlir::norm::runtime {

/// Recursive descent over the text; the first error stops the parse.
class JsonParser {
public:
  explicit JsonParser(std::string_view text) : text(text) {}

  bool parseDocument(JsonValue &result, std::string &error) {
    skipSpace();
    if (parseValue(result, 0)) {
      skipSpace();
      if (pos != text.size())
        fail("unexpected text after the JSON value");
    }
    if (message.empty())
      return true;
    // Line and column (1-based, in bytes) of the failure.
    size_t line = 1, column = 1;
    for (size_t i = 0; i < errorPos && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    error = "line " + std::to_string(line) + ", column " +
            std::to_string(column) + ": " + message;
    return false;
  }

private:
  /// Nesting deeper than this is refused, so the recursion stays bounded.
  static constexpr int kMaxDepth = 64;

  bool fail(std::string what) {
    if (message.empty()) {
      message = std::move(what);
      errorPos = pos;
    }
    return false;
  }

  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }

  bool consumeWord(std::string_view word) {
    if (text.substr(pos, word.size()) != word)
      return fail("invalid literal");
    pos += word.size();
    return true;
  }

  bool parseValue(JsonValue &v, int depth) {
    if (pos >= text.size())
      return fail("unexpected end of input, expected a value");
    switch (text[pos]) {
    case '{':
      return parseObject(v, depth);
    case '[':
      return parseArray(v, depth);
    case '"':
      v.kind = JsonValue::Kind::String;
      return parseString(v.string);
    case 't':
      v.kind = JsonValue::Kind::Bool;
      v.boolean = true;
      return consumeWord("true");
    case 'f':
      v.kind = JsonValue::Kind::Bool;
      v.boolean = false;
      return consumeWord("false");
    case 'n':
      v.kind = JsonValue::Kind::Null;
      return consumeWord("null");
    default:
      if (text[pos] == '-' || (text[pos] >= '0' && text[pos] <= '9'))
        return parseNumber(v);
      return fail(std::string("unexpected character '") + text[pos] +
                  "', expected a value");
    }
  }

  bool parseObject(JsonValue &v, int depth) {
    if (depth >= kMaxDepth)
      return fail("nesting deeper than " + std::to_string(kMaxDepth));
    v.kind = JsonValue::Kind::Object;
    ++pos; // '{'
    skipSpace();
    if (pos < text.size() && text[pos] == '}') {
      ++pos;
      return true;
    }
    while (true) {
      skipSpace();
      if (pos >= text.size() || text[pos] != '"')
        return fail("expected a string key");
      size_t keyPos = pos;
      std::string key;
      if (!parseString(key))
        return false;
      if (v.get(key)) {
        pos = keyPos;
        return fail("duplicate key \"" + key + "\"");
      }
      skipSpace();
      if (pos >= text.size() || text[pos] != ':')
        return fail("expected ':' after an object key");
      ++pos;
      skipSpace();
      JsonValue member;
      if (!parseValue(member, depth + 1))
        return false;
      v.object.emplace_back(std::move(key), std::move(member));
      skipSpace();
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < text.size() && text[pos] == '}') {
        ++pos;
        return true;
      }
      return fail("expected ',' or '}' in an object");
    }
  }

  bool parseArray(JsonValue &v, int depth) {
    if (depth >= kMaxDepth)
      return fail("nesting deeper than " + std::to_string(kMaxDepth));
    v.kind = JsonValue::Kind::Array;
    ++pos; // '['
    skipSpace();
    if (pos < text.size() && text[pos] == ']') {
      ++pos;
      return true;
    }
    while (true) {
      skipSpace();
      JsonValue element;
      if (!parseValue(element, depth + 1))
        return false;
      v.array.push_back(std::move(element));
      skipSpace();
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < text.size() && text[pos] == ']') {
        ++pos;
        return true;
      }
      return fail("expected ',' or ']' in an array");
    }
  }

  static void appendUtf8(std::string &out, uint32_t c) {
    if (c < 0x80) {
      out += char(c);
    } else if (c < 0x800) {
      out += char(0xC0 | (c >> 6));
      out += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += char(0xE0 | (c >> 12));
      out += char(0x80 | ((c >> 6) & 0x3F));
      out += char(0x80 | (c & 0x3F));
    } else {
      out += char(0xF0 | (c >> 18));
      out += char(0x80 | ((c >> 12) & 0x3F));
      out += char(0x80 | ((c >> 6) & 0x3F));
      out += char(0x80 | (c & 0x3F));
    }
  }

  bool parseHex4(uint32_t &c) {
    if (pos + 4 > text.size())
      return fail("truncated \\u escape");
    c = 0;
    for (int i = 0; i < 4; ++i) {
      char h = text[pos++];
      c <<= 4;
      if (h >= '0' && h <= '9')
        c |= uint32_t(h - '0');
      else if (h >= 'a' && h <= 'f')
        c |= uint32_t(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        c |= uint32_t(h - 'A' + 10);
      else
        return fail("invalid hex digit in a \\u escape");
    }
    return true;
  }

  bool parseString(std::string &out) {
    ++pos; // '"'
    while (true) {
      if (pos >= text.size())
        return fail("unterminated string");
      char c = text[pos];
      if (c == '"') {
        ++pos;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("control character in a string");
      if (c != '\\') {
        out += c;
        ++pos;
        continue;
      }
      if (++pos >= text.size())
        return fail("unterminated string");
      char e = text[pos++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp;
        if (!parseHex4(cp))
          return false;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t low;
          if (text.substr(pos, 2) != "\\u")
            return fail("unpaired surrogate in a \\u escape");
          pos += 2;
          if (!parseHex4(low))
            return false;
          if (low < 0xDC00 || low > 0xDFFF)
            return fail("unpaired surrogate in a \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return fail("unpaired surrogate in a \\u escape");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        pos -= 2; // Point at the backslash.
        return fail(std::string("invalid escape '\\") + e + "'");
      }
    }
  }

  bool parseNumber(JsonValue &v) {
    size_t start = pos;
    bool integral = true;
    if (text[pos] == '-')
      ++pos;
    auto digits = [&] {
      size_t first = pos;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9')
        ++pos;
      return pos - first;
    };
    if (pos < text.size() && text[pos] == '0') {
      ++pos;
    } else if (digits() == 0) {
      return fail("expected a digit");
    }
    if (pos < text.size() && text[pos] == '.') {
      integral = false;
      ++pos;
      if (digits() == 0)
        return fail("expected a digit after '.'");
    }
    if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
      integral = false;
      ++pos;
      if (pos < text.size() && (text[pos] == '+' || text[pos] == '-'))
        ++pos;
      if (digits() == 0)
        return fail("expected a digit in the exponent");
    }
    std::string_view token = text.substr(start, pos - start);
    v.kind = JsonValue::Kind::Number;
    if (integral) {
      int64_t i = 0;
      auto [end, ec] =
          std::from_chars(token.data(), token.data() + token.size(), i);
      if (ec == std::errc() && end == token.data() + token.size()) {
        v.exactInteger = true;
        v.integer = i;
        v.number = double(i);
        return true;
      }
    }
    // Not an exact int64: a double (from_chars, unlike strtod, ignores the
    // locale).
    auto [end, ec] =
        std::from_chars(token.data(), token.data() + token.size(), v.number);
    if (ec != std::errc() || end != token.data() + token.size()) {
      pos = start;
      return fail("number out of range");
    }
    return true;
  }

  std::string_view text;
  size_t pos = 0;
  std::string message;
  size_t errorPos = 0;
};

} // namespace mlir::norm::runtime

bool mlir::norm::runtime::parseJson(std::string_view text, JsonValue &result,
                                    std::string &error) {
  result = JsonValue();
  return JsonParser(text).parseDocument(result, error);
}
