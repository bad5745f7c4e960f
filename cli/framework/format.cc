#include "cli/framework/format.h"

#include <google/protobuf/reflection.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/code_points.h"

namespace gradsync {
namespace cli {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// One value of `field` (index < 0: a singular field) as JSON.
std::string FieldValueToJson(const Message& message,
                             const FieldDescriptor& field, int index) {
  const Reflection& r = *message.GetReflection();
  const bool rep = index >= 0;
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(rep ? r.GetRepeatedInt32(message, &field, index)
                              : r.GetInt32(message, &field));
    case FieldDescriptor::CPPTYPE_INT64:
      return absl::StrCat(rep ? r.GetRepeatedInt64(message, &field, index)
                              : r.GetInt64(message, &field));
    case FieldDescriptor::CPPTYPE_UINT32:
      return absl::StrCat(rep ? r.GetRepeatedUInt32(message, &field, index)
                              : r.GetUInt32(message, &field));
    case FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(rep ? r.GetRepeatedUInt64(message, &field, index)
                              : r.GetUInt64(message, &field));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return JsonNumber(rep ? r.GetRepeatedDouble(message, &field, index)
                            : r.GetDouble(message, &field));
    case FieldDescriptor::CPPTYPE_FLOAT:
      return JsonNumber(rep ? r.GetRepeatedFloat(message, &field, index)
                            : r.GetFloat(message, &field));
    case FieldDescriptor::CPPTYPE_BOOL:
      return (rep ? r.GetRepeatedBool(message, &field, index)
                  : r.GetBool(message, &field))
                 ? "true"
                 : "false";
    case FieldDescriptor::CPPTYPE_ENUM: {
      const int number = rep ? r.GetRepeatedEnumValue(message, &field, index)
                             : r.GetEnumValue(message, &field);
      const auto* value = field.enum_type()->FindValueByNumber(number);
      return value != nullptr ? JsonQuote(value->name()) : absl::StrCat(number);
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string scratch;
      const std::string& text =
          rep ? r.GetRepeatedStringReference(message, &field, index, &scratch)
              : r.GetStringReference(message, &field, &scratch);
      if (field.type() == FieldDescriptor::TYPE_BYTES) {
        return JsonQuote(absl::Base64Escape(text));  // protobuf's mapping
      }
      return JsonQuote(text);
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return MessageToJson(rep ? r.GetRepeatedMessage(message, &field, index)
                               : r.GetMessage(message, &field));
  }
  return "null";
}

// One scalar value for CSV; strings quoted when they hold , " or newline.
std::string FieldValueToCsv(const Message& message,
                            const FieldDescriptor& field) {
  if (field.cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
    return CsvCell(message.GetReflection()->GetString(message, &field));
  }
  if (field.cpp_type() == FieldDescriptor::CPPTYPE_ENUM) {
    const auto* value = field.enum_type()->FindValueByNumber(
        message.GetReflection()->GetEnumValue(message, &field));
    return value != nullptr ? value->name() : "";
  }
  std::string value = FieldValueToJson(message, field, -1);
  if (!value.empty() && value.front() == '"') {
    value = value.substr(1, value.size() - 2);  // "NaN"
  }
  return value;
}

bool IsCsvField(const FieldDescriptor& field) {
  return !field.is_repeated() &&
         field.cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE;
}

}  // namespace

std::string CsvCell(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string TerminalSafe(absl::string_view text, size_t max_bytes,
                         bool keep_newlines) {
  std::string out;
  bool cut = false;
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    std::optional<DecodedCodePoint> cp = DecodeUtf8(text.substr(i));
    std::string piece;
    if (!cp.has_value()) {  // not UTF-8: the byte, visibly
      piece = absl::StrFormat("\\x%02x", c);
      i += 1;
    } else if (IsUnsafeCodePoint(cp->value) &&
               !(keep_newlines && (c == '\n' || c == '\t'))) {
      piece = cp->value < 0x80 ? absl::StrFormat("\\x%02x", cp->value)
                               : absl::StrFormat("\\u%04x", cp->value);
      i += cp->length;
    } else {
      piece.assign(text.data() + i, cp->length);
      i += cp->length;
    }
    if (out.size() + piece.size() > max_bytes) {
      cut = true;
      break;
    }
    out += piece;
  }
  if (!cut) return out;
  // Room for "...", and no UTF-8 character split in two.
  out.resize(max_bytes >= 3 ? std::min(out.size(), max_bytes - 3) : 0);
  size_t lead = out.size();
  while (lead > 0 &&
         (static_cast<unsigned char>(out[lead - 1]) & 0xc0) == 0x80) {
    --lead;
  }
  if (lead > 0) {
    const unsigned char c = static_cast<unsigned char>(out[lead - 1]);
    const size_t length = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    if (out.size() - (lead - 1) < length) out.resize(lead - 1);
  }
  return out + "...";
}

std::string FormatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& raw_rows) {
  std::vector<std::vector<std::string>> rows;
  rows.reserve(raw_rows.size());
  for (const std::vector<std::string>& raw : raw_rows) {
    std::vector<std::string>& row = rows.emplace_back();
    for (const std::string& cell : raw) {
      row.push_back(TerminalSafe(cell, kMaxTableCellBytes));
    }
  }
  std::vector<size_t> widths(header.size(), 0);
  for (size_t c = 0; c < header.size(); ++c) widths[c] = header[c].size();
  for (const std::vector<std::string>& row : rows) {
    for (size_t c = 0; c < row.size() && c < widths.size(); ++c) {
      widths[c] = std::max(widths[c], row[c].size());
    }
  }
  std::string out;
  auto append_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < widths.size(); ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      absl::StrAppend(&line, cell);
      if (c + 1 < widths.size()) {
        line.append(widths[c] - cell.size() + 2, ' ');
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    absl::StrAppend(&out, line, "\n");
  };
  append_row(header);
  for (const std::vector<std::string>& row : rows) append_row(row);
  return out;
}

std::string MessageToJson(const Message& message) {
  const Descriptor& descriptor = *message.GetDescriptor();
  const Reflection& r = *message.GetReflection();
  std::vector<std::string> members;
  for (int i = 0; i < descriptor.field_count(); ++i) {
    const FieldDescriptor& field = *descriptor.field(i);
    std::string value;
    if (field.is_map()) {
      // Maps print as objects keyed by the entry's key.
      std::vector<std::string> entries;
      for (int j = 0; j < r.FieldSize(message, &field); ++j) {
        const Message& entry = r.GetRepeatedMessage(message, &field, j);
        const FieldDescriptor& key = *entry.GetDescriptor()->field(0);
        const FieldDescriptor& val = *entry.GetDescriptor()->field(1);
        std::string key_text = FieldValueToJson(entry, key, -1);
        if (key_text.front() != '"') key_text = JsonQuote(key_text);
        entries.push_back(
            absl::StrCat(key_text, ":", FieldValueToJson(entry, val, -1)));
      }
      value = absl::StrCat("{", absl::StrJoin(entries, ","), "}");
    } else if (field.is_repeated()) {
      std::vector<std::string> items;
      for (int j = 0; j < r.FieldSize(message, &field); ++j) {
        items.push_back(FieldValueToJson(message, field, j));
      }
      value = absl::StrCat("[", absl::StrJoin(items, ","), "]");
    } else if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
               !r.HasField(message, &field)) {
      // An unset sub-message prints with its defaults, like every scalar.
      value = MessageToJson(r.GetMessage(message, &field));
    } else {
      value = FieldValueToJson(message, field, -1);
    }
    members.push_back(absl::StrCat(JsonQuote(field.json_name()), ":", value));
  }
  return absl::StrCat("{", absl::StrJoin(members, ","), "}");
}

std::string CsvHeader(const Descriptor& descriptor) {
  std::vector<std::string> names;
  for (int i = 0; i < descriptor.field_count(); ++i) {
    if (IsCsvField(*descriptor.field(i))) {
      names.push_back(descriptor.field(i)->name());
    }
  }
  return absl::StrJoin(names, ",");
}

std::string CsvRow(const Message& message) {
  const Descriptor& descriptor = *message.GetDescriptor();
  std::vector<std::string> values;
  for (int i = 0; i < descriptor.field_count(); ++i) {
    if (IsCsvField(*descriptor.field(i))) {
      values.push_back(FieldValueToCsv(message, *descriptor.field(i)));
    }
  }
  return absl::StrJoin(values, ",");
}

std::string StatusToJson(const absl::Status& status) {
  return absl::StrCat("{\"error\":{\"code\":",
                      JsonQuote(absl::StatusCodeToString(status.code())),
                      ",\"message\":", JsonQuote(status.message()), "}}");
}

std::string FormatMillis(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  return absl::StrFormat("%.2f", seconds * 1000);
}

std::string FormatElapsed(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  const int64_t total = static_cast<int64_t>(std::llround(seconds));
  if (total < 60) {
    return seconds < 10 ? absl::StrFormat("%.1f s", seconds)
                        : absl::StrFormat("%d s", total);
  }
  if (total < 3600) {
    return absl::StrFormat("%d min %d s", total / 60, total % 60);
  }
  return absl::StrFormat("%d h %d min", total / 3600, (total % 3600) / 60);
}

std::string FormatPercent(double share) {
  if (!std::isfinite(share)) return "-";
  return absl::StrFormat("%.1f%%", share * 100);
}

}  // namespace cli
}  // namespace gradsync
