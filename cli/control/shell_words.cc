#include "cli/control/shell_words.h"

#include "absl/strings/str_cat.h"

namespace gradsync {
namespace cli {
namespace control {

absl::StatusOr<std::vector<std::string>> SplitShellWords(
    absl::string_view line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\\') {
      if (++i == line.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", line, "' ends with a lone backslash"));
      }
      word.push_back(line[i]);
    } else if (c == '\'') {
      const size_t end = line.find('\'', i + 1);
      if (end == absl::string_view::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", line, "' has an unterminated ' quote"));
      }
      word.append(line.data() + i + 1, end - i - 1);
      i = end;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\' && j + 1 < line.size() &&
            (line[j + 1] == '"' || line[j + 1] == '\\' || line[j + 1] == '$' ||
             line[j + 1] == '`')) {
          ++j;
        }
        word.push_back(line[j]);
      }
      if (j == line.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", line, "' has an unterminated \" quote"));
      }
      i = j;
    } else {
      word.push_back(c);
    }
  }
  if (in_word) words.push_back(std::move(word));
  if (words.empty()) {
    return absl::InvalidArgumentError("the command line has no words");
  }
  return words;
}

}  // namespace control
}  // namespace cli
}  // namespace gradsync
