#include "common/json.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace gradsync {
namespace {

// The protobuf JSON mapping's string for a non-finite `value`.
std::string NonFinite(double value) {
  if (std::isnan(value)) return "\"NaN\"";
  return value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
}

}  // namespace

std::string JsonQuote(absl::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string JsonNumber(double value) {
  if (!std::isfinite(value)) return NonFinite(value);
  for (int precision = 15; precision <= 17; ++precision) {
    std::string text = absl::StrFormat("%.*g", precision, value);
    double back = 0;
    if (absl::SimpleAtod(text, &back) && back == value) return text;
  }
  return absl::StrFormat("%.17g", value);
}

std::string JsonNumber(double value, int significant_digits) {
  if (!std::isfinite(value)) return NonFinite(value);
  return absl::StrFormat("%.*g", significant_digits, value);
}

}  // namespace gradsync
