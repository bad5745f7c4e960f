// cluster.json, binary lookup and daemon processes; LocalUp and LocalDown
// are in local_up.cc.
#include "cli/control/local_cluster.h"

#include <fcntl.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cli/control/job_spec_builder.h"
#include "cli/framework/format.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

constexpr absl::Duration kStopPoll = absl::Milliseconds(20);
// After SIGKILL, how long to wait for the kernel to take a process away.
constexpr absl::Duration kKillWait = absl::Seconds(2);

std::string StringField(const Struct& object, const std::string& key) {
  auto it = object.fields().find(key);
  if (it == object.fields().end()) return "";
  return it->second.string_value();
}

double NumberField(const Struct& object, const std::string& key) {
  auto it = object.fields().find(key);
  if (it == object.fields().end()) return 0;
  return it->second.number_value();
}

std::string DaemonToJson(const DaemonRecord& d) {
  return absl::StrCat(
      "{\"name\":", JsonQuote(d.name), ",\"binary\":", JsonQuote(d.binary),
      ",\"pid\":", d.pid, ",\"log\":", JsonQuote(d.log),
      ",\"address\":", JsonQuote(d.address),
      ",\"devices\":", JsonQuote(d.devices), ",\"netns\":", JsonQuote(d.netns),
      ",\"host\":", JsonQuote(d.host), "}");
}

// The program named by /proc/<pid>/cmdline (its argv[0]), or "".
std::string ProgramOf(int pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/cmdline"), std::ios::binary);
  std::string argv0;
  if (!in || !std::getline(in, argv0, '\0')) return "";
  return argv0;
}

// Whether /proc/<pid>/stat says the process is a zombie (dead, not yet
// reaped by its parent, which is not us once `local up` has exited).
bool IsZombie(int pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat;
  if (!in || !std::getline(in, stat)) return true;
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ||
         stat[paren + 2] == 'Z' || stat[paren + 2] == 'X';
}

// Whether `pid` is gone; reaps it when it is our child.
bool IsGone(int pid) {
  int status = 0;
  const pid_t reaped = waitpid(pid, &status, WNOHANG);
  if (reaped == pid) return true;
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  return IsZombie(pid);
}

void SignalAll(const std::vector<DaemonRecord>& daemons,
               const std::vector<bool>& alive, int signal_number) {
  for (size_t i = 0; i < daemons.size(); ++i) {
    if (alive[i]) kill(daemons[i].pid, signal_number);
  }
}

// Waits until every daemon marked alive is gone or `deadline` passes;
// clears `alive` for those that went.
bool WaitGone(const std::vector<DaemonRecord>& daemons,
              std::vector<bool>* alive, absl::Time deadline) {
  while (true) {
    bool any = false;
    for (size_t i = 0; i < daemons.size(); ++i) {
      if ((*alive)[i] && IsGone(daemons[i].pid)) (*alive)[i] = false;
      any |= (*alive)[i];
    }
    if (!any) return true;
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(kStopPoll);
  }
}

}  // namespace

std::vector<int> ProcessesWithFlag(absl::string_view flag,
                                   absl::string_view value) {
  std::vector<int> found;
  std::error_code error;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc", error)) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &pid) ||
        pid == getpid()) {
      continue;
    }
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::vector<std::string> args;
    for (std::string arg; std::getline(in, arg, '\0');) args.push_back(arg);
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == flag && args[i + 1] == value) {
        found.push_back(pid);
        break;
      }
    }
  }
  return found;
}

std::string ClusterRecordToJson(const ClusterRecord& record) {
  std::vector<std::string> daemons;
  for (const DaemonRecord& d : record.daemons)
    daemons.push_back(DaemonToJson(d));
  return absl::StrCat(
      "{\"runDir\":", JsonQuote(record.run_dir),
      ",\"coordinator\":", JsonQuote(record.coordinator_address),
      ",\"startedAt\":", JsonNumber(record.started_at),
      record.tls_dir.empty()
          ? ""
          : absl::StrCat(",\"tlsDir\":", JsonQuote(record.tls_dir)),
      ",\"daemons\":[", absl::StrJoin(daemons, ","), "]}");
}

absl::StatusOr<ClusterRecord> ClusterRecordFromJson(absl::string_view json,
                                                    absl::string_view source) {
  Struct root;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &root);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, " is not valid JSON: ", std::string(status.message()),
        "; remove it if no local cluster runs there"));
  }
  ClusterRecord record;
  record.run_dir = StringField(root, "runDir");
  record.coordinator_address = StringField(root, "coordinator");
  record.started_at = NumberField(root, "startedAt");
  record.tls_dir = StringField(root, "tlsDir");
  auto daemons = root.fields().find("daemons");
  if (daemons != root.fields().end()) {
    for (const Value& value : daemons->second.list_value().values()) {
      const Struct& d = value.struct_value();
      DaemonRecord daemon;
      daemon.name = StringField(d, "name");
      daemon.binary = StringField(d, "binary");
      const double pid = NumberField(d, "pid");
      daemon.pid = pid >= 1 && pid < 1e9 ? static_cast<int>(pid) : 0;
      daemon.log = StringField(d, "log");
      daemon.address = StringField(d, "address");
      daemon.devices = StringField(d, "devices");
      daemon.netns = StringField(d, "netns");
      daemon.host = StringField(d, "host");
      if (daemon.name.empty() || daemon.pid == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            source,
            " lists a daemon without a name or pid; remove the file "
            "if no local cluster runs there"));
      }
      record.daemons.push_back(std::move(daemon));
    }
  }
  return record;
}

absl::StatusOr<std::optional<ClusterRecord>> ReadClusterRecord(
    const std::string& run_dir) {
  const std::string path = absl::StrCat(run_dir, "/", kClusterFile);
  struct stat info;
  if (stat(path.c_str(), &info) != 0 && errno == ENOENT) return std::nullopt;
  absl::StatusOr<std::string> text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<ClusterRecord> record = ClusterRecordFromJson(*text, path);
  if (!record.ok()) return record.status();
  return std::optional<ClusterRecord>(std::move(*record));
}

absl::StatusOr<std::string> FindDaemonBinary(
    absl::string_view name, const std::string& exe_dir,
    const std::vector<std::string>& relative_dirs, absl::string_view path_env) {
  std::vector<std::string> candidates;
  if (!exe_dir.empty()) {
    for (const std::string& dir : relative_dirs) {
      candidates.push_back(dir.empty()
                               ? absl::StrCat(exe_dir, "/", name)
                               : absl::StrCat(exe_dir, "/", dir, "/", name));
    }
  }
  for (absl::string_view dir : absl::StrSplit(path_env, ':')) {
    if (!dir.empty()) candidates.push_back(absl::StrCat(dir, "/", name));
  }
  for (const std::string& candidate : candidates) {
    struct stat info;
    if (stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  std::vector<std::string> looked;
  for (const std::string& dir : relative_dirs) {
    looked.push_back(dir.empty() ? exe_dir : absl::StrCat(exe_dir, "/", dir));
  }
  return absl::NotFoundError(
      absl::StrCat("cannot find ", name, " (looked in ",
                   absl::StrJoin(looked, ", "), " and $PATH); build it (ninja ",
                   name, ") or put it next to the gradsync binary"));
}

bool IsDaemonAlive(int pid, absl::string_view binary_name) {
  if (pid <= 0 || IsGone(pid)) return false;
  const std::string program = ProgramOf(pid);
  const size_t slash = program.rfind('/');
  const absl::string_view base =
      slash == std::string::npos ? absl::string_view(program)
                                 : absl::string_view(program).substr(slash + 1);
  return base == binary_name;
}

bool IsRecordedDaemonAlive(const DaemonRecord& record) {
  if (record.pid <= 0) return false;
  int status = 0;
  const pid_t child = waitpid(record.pid, &status, WNOHANG);
  if (child == 0) return true;            // our child, still running
  if (child == record.pid) return false;  // our child, just reaped
  const size_t slash = record.binary.rfind('/');
  return IsDaemonAlive(record.pid, slash == std::string::npos
                                       ? record.binary
                                       : record.binary.substr(slash + 1));
}

absl::StatusOr<pid_t> SpawnDaemon(const std::string& binary,
                                  const std::vector<std::string>& args,
                                  const std::string& log_path,
                                  const SpawnPlace& place) {
  int netns_fd = -1;
  if (!place.netns_path.empty()) {
    netns_fd = open(place.netns_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (netns_fd < 0) {
      return absl::InternalError(absl::StrCat("cannot open the namespace ",
                                              place.netns_path, ": ",
                                              std::strerror(errno)));
    }
  }
  const int log_fd =
      open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    const int error = errno;
    if (netns_fd >= 0) close(netns_fd);
    return absl::InternalError(
        absl::StrCat("cannot open log ", log_path, ": ", std::strerror(error)));
  }
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  // argv is built before fork: only async-signal-safe calls in the child.
  std::vector<std::string> argv_strings = {binary};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    const int error = errno;
    close(log_fd);
    if (null_fd >= 0) close(null_fd);
    if (netns_fd >= 0) close(netns_fd);
    return absl::InternalError(
        absl::StrCat("fork failed: ", std::strerror(error)));
  }
  if (pid == 0) {
    setsid();
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    if (netns_fd >= 0 && setns(netns_fd, CLONE_NEWNET) != 0) {
      static const char kNs[] = "gradsync: cannot enter the namespace\n";
      ssize_t ignored = write(STDERR_FILENO, kNs, sizeof(kNs) - 1);
      (void)ignored;
      _exit(127);
    }
    if (!place.hostname.empty() &&
        (unshare(CLONE_NEWUTS) != 0 ||
         sethostname(place.hostname.data(), place.hostname.size()) != 0)) {
      static const char kUts[] = "gradsync: cannot set the host name\n";
      ssize_t ignored = write(STDERR_FILENO, kUts, sizeof(kUts) - 1);
      (void)ignored;
      _exit(127);
    }
    execv(binary.c_str(), argv.data());
    static const char kMessage[] = "gradsync local up: exec failed\n";
    ssize_t ignored = write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
    (void)ignored;
    _exit(127);
  }
  close(log_fd);
  if (null_fd >= 0) close(null_fd);
  if (netns_fd >= 0) close(netns_fd);
  return pid;
}

std::vector<std::string> StopDaemons(const std::vector<DaemonRecord>& daemons,
                                     absl::Duration grace) {
  std::vector<bool> alive(daemons.size());
  for (size_t i = 0; i < daemons.size(); ++i) {
    alive[i] = IsRecordedDaemonAlive(daemons[i]);
  }
  SignalAll(daemons, alive, SIGTERM);
  std::vector<std::string> killed;
  if (WaitGone(daemons, &alive, absl::Now() + grace)) return killed;
  for (size_t i = 0; i < daemons.size(); ++i) {
    if (alive[i]) killed.push_back(daemons[i].name);
  }
  SignalAll(daemons, alive, SIGKILL);
  WaitGone(daemons, &alive, absl::Now() + kKillWait);
  return killed;
}

}  // namespace control
}  // namespace cli
}  // namespace gradsync
