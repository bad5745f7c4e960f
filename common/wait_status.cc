#include "common/wait_status.h"

#include <sys/wait.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace gradsync {

std::string DescribeExit(int wait_status) {
  if (WIFEXITED(wait_status)) {
    return absl::StrCat("exited with status ", WEXITSTATUS(wait_status));
  }
  if (WIFSIGNALED(wait_status)) {
    return absl::StrCat("was killed by signal ", WTERMSIG(wait_status), " (",
                        strsignal(WTERMSIG(wait_status)), ")");
  }
  return absl::StrCat("ended with wait status ", wait_status);
}

}  // namespace gradsync
