#include "common/code_points.h"

#include "absl/strings/str_format.h"

namespace gradsync {

std::optional<DecodedCodePoint> DecodeUtf8(absl::string_view text) {
  if (text.empty()) return std::nullopt;
  const unsigned char lead = static_cast<unsigned char>(text[0]);
  if (lead < 0x80) return DecodedCodePoint{lead, 1};
  size_t length = 0;
  uint32_t value = 0;
  uint32_t minimum = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2, value = lead & 0x1f, minimum = 0x80;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3, value = lead & 0x0f, minimum = 0x800;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4, value = lead & 0x07, minimum = 0x10000;
  } else {
    return std::nullopt;
  }
  if (text.size() < length) return std::nullopt;
  for (size_t i = 1; i < length; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c & 0xc0) != 0x80) return std::nullopt;
    value = (value << 6) | (c & 0x3f);
  }
  if (value < minimum || value > 0x10ffff ||
      (value >= 0xd800 && value <= 0xdfff)) {
    return std::nullopt;
  }
  return DecodedCodePoint{value, length};
}

bool IsUnsafeCodePoint(uint32_t c) {
  return c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f) || c == 0x061c ||
         c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e) ||
         (c >= 0x2066 && c <= 0x2069) || c == 0x2028 || c == 0x2029;
}

std::optional<std::string> UnsafeTextProblem(absl::string_view text) {
  for (size_t i = 0; i < text.size();) {
    std::optional<DecodedCodePoint> cp = DecodeUtf8(text.substr(i));
    if (!cp.has_value()) {
      return absl::StrFormat("is not valid UTF-8 at byte %d (0x%02x)", i,
                             static_cast<unsigned char>(text[i]));
    }
    if (IsUnsafeCodePoint(cp->value)) {
      const char* kind = cp->value < 0x20 || cp->value == 0x7f
                             ? "a control character"
                         : cp->value <= 0x9f ? "a C1 control character"
                         : cp->value >= 0x2028 && cp->value <= 0x2029
                             ? "a line or paragraph separator"
                             : "a bidirectional control";
      return absl::StrFormat("holds U+%04X (%s) at byte %d", cp->value, kind,
                             i);
    }
    i += cp->length;
  }
  return std::nullopt;
}

}  // namespace gradsync
