#include "study/sim/json_reader.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace gradsync {
namespace sim {
namespace {

// Deeper documents are refused rather than recursed into: the reader's
// recursion is bounded by this, not by the input.
constexpr int kMaxDepth = 64;

// A recursive-descent parser over one document; `pos_` only moves forward.
class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  [[nodiscard]] absl::StatusOr<JsonValue> Document() {
    ASSIGN_OR_RETURN(JsonValue value, Value(0));
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after the value");
    return value;
  }

 private:
  // INVALID_ARGUMENT at the current position, as "line L, column C: ...".
  [[nodiscard]] absl::Status Error(absl::string_view what) const {
    int line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return absl::InvalidArgumentError(
        absl::StrCat("line ", line, ", column ", column, ": ", what));
  }

  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Consume(absl::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  [[nodiscard]] absl::StatusOr<JsonValue> Value(int depth) {
    if (depth > kMaxDepth) return Error("nested too deeply");
    SkipSpace();
    if (pos_ >= text_.size()) return Error("expected a value");
    const char c = text_[pos_];
    if (c == '{') return ObjectValue(depth);
    if (c == '[') return ArrayValue(depth);
    if (c == '"') {
      ASSIGN_OR_RETURN(std::string s, StringBody());
      return JsonValue::String(std::move(s));
    }
    if (Consume("true")) return JsonValue::Bool(true);
    if (Consume("false")) return JsonValue::Bool(false);
    if (Consume("null")) return JsonValue();
    return NumberValue();
  }

  [[nodiscard]] absl::StatusOr<JsonValue> ObjectValue(int depth) {
    ++pos_;  // '{'
    std::vector<std::pair<std::string, JsonValue>> members;
    SkipSpace();
    if (Consume("}")) return JsonValue::Object(std::move(members));
    while (true) {
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"') {
        return Error("expected a member name in double quotes");
      }
      ASSIGN_OR_RETURN(std::string name, StringBody());
      for (const auto& member : members) {
        if (member.first == name) {
          return Error(absl::StrCat("member \"", name, "\" given twice"));
        }
      }
      SkipSpace();
      if (!Consume(":")) return Error("expected ':' after a member name");
      ASSIGN_OR_RETURN(JsonValue value, Value(depth + 1));
      members.emplace_back(std::move(name), std::move(value));
      SkipSpace();
      if (Consume("}")) return JsonValue::Object(std::move(members));
      if (!Consume(",")) return Error("expected ',' or '}'");
    }
  }

  [[nodiscard]] absl::StatusOr<JsonValue> ArrayValue(int depth) {
    ++pos_;  // '['
    std::vector<JsonValue> items;
    SkipSpace();
    if (Consume("]")) return JsonValue::Array(std::move(items));
    while (true) {
      ASSIGN_OR_RETURN(JsonValue item, Value(depth + 1));
      items.push_back(std::move(item));
      SkipSpace();
      if (Consume("]")) return JsonValue::Array(std::move(items));
      if (!Consume(",")) return Error("expected ',' or ']'");
    }
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  [[nodiscard]] absl::StatusOr<JsonValue> NumberValue() {
    const size_t start = pos_;
    auto digits = [this] {
      const size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        ++pos_;
      }
      return pos_ - from;
    };
    Consume("-");
    if (pos_ < text_.size() && text_[pos_] == '0') {
      ++pos_;
    } else if (digits() == 0) {
      pos_ = start;
      return Error("expected a value");
    }
    if (Consume(".") && digits() == 0) return Error("expected a digit");
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (!Consume("+")) Consume("-");
      if (digits() == 0) return Error("expected a digit in the exponent");
    }
    double value = 0;
    if (!absl::SimpleAtod(text_.substr(start, pos_ - start), &value) ||
        !std::isfinite(value)) {
      return Error("a number out of range");
    }
    return JsonValue::Number(value);
  }

  // Four hex digits of a \u escape.
  [[nodiscard]] absl::StatusOr<uint32_t> Hex4() {
    if (pos_ + 4 > text_.size()) return Error("a \\u escape needs 4 digits");
    uint32_t code = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[pos_++];
      code <<= 4;
      if (h >= '0' && h <= '9') {
        code |= h - '0';
      } else if (h >= 'a' && h <= 'f') {
        code |= h - 'a' + 10;
      } else if (h >= 'A' && h <= 'F') {
        code |= h - 'A' + 10;
      } else {
        return Error("a \\u escape needs 4 hex digits");
      }
    }
    return code;
  }

  static void AppendUtf8(uint32_t code, std::string* out) {
    if (code < 0x80) {
      out->push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (code >> 6)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else if (code < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (code >> 12)));
      out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (code >> 18)));
      out->push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
  }

  // A string starting at the opening quote; returns its decoded text.
  [[nodiscard]] absl::StatusOr<std::string> StringBody() {
    ++pos_;  // '"'
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) return Error("a string is not closed");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) {
        return Error("a control character inside a string");
      }
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) return Error("a string is not closed");
      const char e = text_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out.push_back(e);
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          ASSIGN_OR_RETURN(uint32_t code, Hex4());
          if (code >= 0xD800 && code < 0xDC00) {
            if (!Consume("\\u")) return Error("a lone high surrogate");
            ASSIGN_OR_RETURN(const uint32_t low, Hex4());
            if (low < 0xDC00 || low >= 0xE000) {
              return Error("a high surrogate without its low half");
            }
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          } else if (code >= 0xDC00 && code < 0xE000) {
            return Error("a lone low surrogate");
          }
          AppendUtf8(code, &out);
          break;
        }
        default:
          return Error(absl::StrCat("unknown escape '\\", std::string(1, e),
                                    "' in a string"));
      }
    }
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

JsonValue JsonValue::Bool(bool value) {
  JsonValue v;
  v.type_ = Type::kBool;
  v.bool_ = value;
  return v;
}

JsonValue JsonValue::Number(double value) {
  JsonValue v;
  v.type_ = Type::kNumber;
  v.number_ = value;
  return v;
}

JsonValue JsonValue::String(std::string value) {
  JsonValue v;
  v.type_ = Type::kString;
  v.string_ = std::move(value);
  return v;
}

JsonValue JsonValue::Array(std::vector<JsonValue> items) {
  JsonValue v;
  v.type_ = Type::kArray;
  v.items_ = std::move(items);
  return v;
}

JsonValue JsonValue::Object(
    std::vector<std::pair<std::string, JsonValue>> members) {
  JsonValue v;
  v.type_ = Type::kObject;
  v.members_ = std::move(members);
  return v;
}

const JsonValue* JsonValue::Find(absl::string_view name) const {
  for (const auto& member : members_) {
    if (member.first == name) return &member.second;
  }
  return nullptr;
}

absl::StatusOr<JsonValue> ParseJson(absl::string_view text) {
  return Parser(text).Document();
}

absl::string_view JsonTypeName(JsonValue::Type type) {
  switch (type) {
    case JsonValue::Type::kNull:
      return "null";
    case JsonValue::Type::kBool:
      return "boolean";
    case JsonValue::Type::kNumber:
      return "number";
    case JsonValue::Type::kString:
      return "string";
    case JsonValue::Type::kArray:
      return "array";
    case JsonValue::Type::kObject:
      return "object";
  }
  return "?";
}

}  // namespace sim
}  // namespace gradsync
