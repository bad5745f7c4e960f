#include "worker/launch/python_dir.h"

#include <limits.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace gradsync {

std::string FindGradsyncPythonDir() {
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return "";
  std::string dir(exe, static_cast<size_t>(n));
  dir = dir.substr(0, dir.rfind('/'));
  for (const char* relative : {"/../python", "/../lib/gradsync/python"}) {
    const std::string candidate = absl::StrCat(dir, relative);
    if (access(absl::StrCat(candidate, "/gradsync/__init__.py").c_str(),
               R_OK) == 0) {
      char resolved[PATH_MAX];
      if (realpath(candidate.c_str(), resolved) != nullptr) return resolved;
      return candidate;
    }
  }
  return "";
}

}  // namespace gradsync
