#include "security/path_roots.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace gradsync {
namespace {

// Absolute, and no ".", ".." or empty component (a trailing slash aside).
bool IsNormalAbsolute(absl::string_view path) {
  if (!absl::StartsWith(path, "/")) return false;
  absl::string_view rest = path.substr(1);
  if (absl::EndsWith(rest, "/")) rest.remove_suffix(1);
  if (rest.empty()) return true;  // "/"
  for (absl::string_view part : absl::StrSplit(rest, '/')) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

bool Within(absl::string_view path, absl::string_view root) {
  if (root == "/") return true;
  return path == root ||
         (absl::StartsWith(path, root) && path.size() > root.size() &&
          path[root.size()] == '/');
}

[[nodiscard]] absl::Status Outside(absl::string_view field,
                                   const std::string& path,
                                   const std::vector<std::string>& roots,
                                   absl::string_view how) {
  return absl::InvalidArgumentError(absl::StrCat(
      "job spec field ", field, " '", path, "' ", how,
      " the checkpoint roots this cluster allows (", absl::StrJoin(roots, ", "),
      "); name a path under one of them (--checkpoint-root of the "
      "coordinator and the workers)"));
}

}  // namespace

absl::StatusOr<std::string> NormalizeRoot(absl::string_view root) {
  if (!IsNormalAbsolute(root)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint root '", root,
        "' must be an absolute path without '.', '..' or empty parts"));
  }
  std::string normal(root);
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  return normal;
}

absl::StatusOr<std::vector<std::string>> ParseRoots(absl::string_view list) {
  std::vector<std::string> roots;
  for (absl::string_view part : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    absl::StatusOr<std::string> root = NormalizeRoot(part);
    if (!root.ok()) return root.status();
    roots.push_back(*std::move(root));
  }
  return roots;
}

absl::Status CheckUnderRoots(absl::string_view field, const std::string& path,
                             const std::vector<std::string>& roots) {
  if (roots.empty() || path.empty()) return absl::OkStatus();
  if (!IsNormalAbsolute(path)) {
    return Outside(field, path, roots,
                   "is not an absolute path without '.', '..' or empty "
                   "parts, so it cannot be checked against");
  }
  for (const std::string& root : roots) {
    if (Within(path, root)) return absl::OkStatus();
  }
  return Outside(field, path, roots, "lies outside");
}

std::string RootHolding(const std::string& path,
                        const std::vector<std::string>& roots) {
  std::string holding;
  if (!IsNormalAbsolute(path)) return holding;
  for (const std::string& root : roots) {
    if (Within(path, root) && root.size() >= holding.size()) holding = root;
  }
  return holding;
}

absl::Status CheckResolvedUnderRoots(absl::string_view field,
                                     const std::string& path,
                                     const std::vector<std::string>& roots) {
  if (absl::Status lexical = CheckUnderRoots(field, path, roots);
      !lexical.ok() || roots.empty() || path.empty()) {
    return lexical;
  }
  // weakly_canonical resolves the links of the part that exists and keeps
  // the rest as written; the error_code overloads never throw.
  std::error_code ec;
  const std::string resolved =
      std::filesystem::weakly_canonical(path, ec).string();
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job spec field ", field, " '", path, "': ", ec.message()));
  }
  for (const std::string& root : roots) {
    const std::string real_root =
        std::filesystem::weakly_canonical(root, ec).string();
    if (!ec && Within(resolved, real_root)) return absl::OkStatus();
  }
  return Outside(
      field, path, roots,
      absl::StrCat("leads through a symbolic link to ", resolved, ", outside"));
}

}  // namespace gradsync
