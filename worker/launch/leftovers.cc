#include "worker/launch/leftovers.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gradsync {
namespace {

constexpr absl::string_view kTagPrefix = "GRADSYNC_AGENT=";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Fields of /proc/PID/stat after the command name (which may hold spaces
// and parentheses): [0] is field 3 (state).
std::vector<std::string> StatFields(pid_t pid) {
  const std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return {};
  return absl::StrSplit(stat.substr(close + 2), ' ', absl::SkipEmpty());
}

}  // namespace

long long ProcessStartTime(pid_t pid) {
  const std::vector<std::string> f = StatFields(pid);
  long long start = -1;
  if (f.size() > 19 && absl::SimpleAtoi(f[19], &start)) return start;
  return -1;
}

std::string AgentTag(absl::string_view coordinator) {
  const pid_t self = getpid();
  return absl::StrCat(self, ":", ProcessStartTime(self), ":", coordinator);
}

int KillLeftovers(absl::string_view coordinator,
                  const std::function<void(absl::string_view)>& log) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return 0;
  const pid_t self = getpid();
  int killed = 0;
  std::set<pid_t> killed_groups;
  while (struct dirent* entry = readdir(proc)) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid) || pid == self) continue;
    const std::string environ =
        ReadFile(absl::StrCat("/proc/", pid, "/environ"));
    for (absl::string_view var : absl::StrSplit(environ, '\0')) {
      if (!absl::ConsumePrefix(&var, kTagPrefix)) continue;
      std::vector<absl::string_view> parts =
          absl::StrSplit(var, absl::MaxSplits(':', 2));
      pid_t agent = 0;
      long long agent_start = 0;
      if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &agent) ||
          !absl::SimpleAtoi(parts[1], &agent_start) ||
          parts[2] != coordinator) {
        break;
      }
      if (ProcessStartTime(agent) == agent_start) break;  // its daemon runs
      const std::vector<std::string> f = StatFields(pid);
      pid_t group = 0;
      const bool own_group = f.size() > 2 && absl::SimpleAtoi(f[2], &group) &&
                             group > 1 && group != getpgrp();
      // A group killed already took this process with it.
      if (own_group && !killed_groups.insert(group).second) break;
      if (own_group) kill(-group, SIGKILL);
      kill(pid, SIGKILL);
      ++killed;
      if (log) {
        log(absl::StrCat(
            "killed process ", pid,
            own_group ? absl::StrCat(" and its group ", group) : std::string(),
            ", left behind by worker daemon ", agent,
            " (no longer running) of coordinator ", coordinator));
      }
      break;
    }
  }
  closedir(proc);
  return killed;
}

}  // namespace gradsync
