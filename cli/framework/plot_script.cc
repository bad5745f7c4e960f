#include "cli/framework/plot_script.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace gradsync {
namespace cli {

std::vector<std::string> PlotScriptCandidates(absl::string_view self_exe,
                                              absl::string_view script) {
  const std::filesystem::path dir =
      std::filesystem::path(std::string(self_exe)).parent_path();
  const std::string name(script);
  return {(dir / name).string(), (dir / "../share/gradsync" / name).string(),
          (dir / "../../scripts" / name).string()};
}

absl::Status RunPlotScript(absl::string_view self_exe, absl::string_view script,
                           const std::vector<std::string>& args,
                           absl::Duration deadline) {
  std::string path;
  for (const std::string& candidate : PlotScriptCandidates(self_exe, script)) {
    if (access(candidate.c_str(), R_OK) == 0) {
      path = candidate;
      break;
    }
  }
  if (path.empty()) {
    return absl::NotFoundError(absl::StrCat(
        script, " not found next to ", self_exe,
        " or in ../share/gradsync; install gradsync or run scripts/", script,
        " yourself"));
  }
  // Debian's python3-matplotlib is installed for /usr/bin/python3, which
  // another python3 earlier on $PATH (pyenv, a venv) would not see.
  const std::string python =
      access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
  std::vector<std::string> argv = {python, path};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string command = absl::StrJoin(argv, " ");
  std::vector<char*> raw;
  for (std::string& arg : argv) raw.push_back(arg.data());
  raw.push_back(nullptr);
  const pid_t child = fork();
  if (child < 0) {
    return absl::InternalError(absl::StrCat("cannot start `", command, "`"));
  }
  if (child == 0) {
    execvp(raw[0], raw.data());
    _exit(127);
  }
  const absl::Time end = absl::Now() + deadline;
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0) {
      return absl::InternalError(absl::StrCat("lost `", command, "`"));
    }
    if (absl::Now() >= end) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      return absl::DeadlineExceededError(
          absl::StrCat("`", command, "` ran past ",
                       absl::FormatDuration(deadline), "; killed it"));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat(
        "`", command, "` failed (exit ",
        WIFEXITED(status) ? WEXITSTATUS(status) : -1,
        "); it needs python3-matplotlib (apt-get install python3-matplotlib)"));
  }
  return absl::OkStatus();
}

}  // namespace cli
}  // namespace gradsync
