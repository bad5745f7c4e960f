// A small JSON reader for the simulator's own files: the calibration file
// (calibration.h) and, in tests, the Chrome trace it writes (trace.h).
// common/json.h has the writers; gradsync reads every other JSON document
// through protobuf's JSON mapping, which study/ (absl and common only)
// does not link.
//
//   ASSIGN_OR_RETURN(JsonValue doc, ParseJson(text));
//   const JsonValue* alpha = doc.Find("alphaS");
//   if (alpha != nullptr && alpha->is_number()) use(alpha->number());
//
// It reads RFC 8259 JSON: objects, arrays, strings (with \uXXXX escapes,
// surrogate pairs included, written out as UTF-8), numbers, true, false
// and null. Objects keep their members in document order; a repeated
// name is an error, since a file that says a parameter twice is
// ambiguous.
//
// Errors: INVALID_ARGUMENT naming the line and column of the first
// problem ("line 3, column 14: expected ',' or '}'").
// Threading: pure functions and values; thread-compatible.
#ifndef GRADSYNC_STUDY_SIM_JSON_READER_H_
#define GRADSYNC_STUDY_SIM_JSON_READER_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {
namespace sim {

class JsonValue {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  JsonValue() = default;
  static JsonValue Bool(bool value);
  static JsonValue Number(double value);
  static JsonValue String(std::string value);
  static JsonValue Array(std::vector<JsonValue> items);
  static JsonValue Object(std::vector<std::pair<std::string, JsonValue>> m);

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_number() const { return type_ == Type::kNumber; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  // The value; each is the zero value for another type.
  bool boolean() const { return bool_; }
  double number() const { return number_; }
  const std::string& string() const { return string_; }
  const std::vector<JsonValue>& items() const { return items_; }
  const std::vector<std::pair<std::string, JsonValue>>& members() const {
    return members_;
  }

  // The member called `name` of an object; nullptr when there is none or
  // this is not an object.
  const JsonValue* Find(absl::string_view name) const;

 private:
  Type type_ = Type::kNull;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

// One JSON document (white space around it allowed, nothing else after
// it). INVALID_ARGUMENT as described at the top.
[[nodiscard]] absl::StatusOr<JsonValue> ParseJson(absl::string_view text);

// "null", "boolean", "number", "string", "array", "object": for messages.
absl::string_view JsonTypeName(JsonValue::Type type);

}  // namespace sim
}  // namespace gradsync

#endif  // GRADSYNC_STUDY_SIM_JSON_READER_H_
