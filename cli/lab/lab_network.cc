#include "cli/lab/lab_network.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace gradsync {
namespace lab {
namespace {

constexpr char kNetnsDir[] = "/run/netns";
constexpr int kCapNetAdmin = 12;
constexpr int64_t kMinBurstBytes = 128 * 1024;
constexpr int64_t kEgressQueueBytes = int64_t{32} << 20;
constexpr absl::Duration kBurstTime = absl::Milliseconds(1);
constexpr size_t kMaxCapturedBytes = 4096;

// Where iproute2's binaries are: $PATH first, then the sbin directories a
// non-login root shell may lack.
std::string FindTool(absl::string_view name) {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    for (absl::string_view dir : absl::StrSplit(path, ':')) {
      if (!dir.empty()) dirs.emplace_back(dir);
    }
  }
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) {
    dirs.emplace_back(dir);
  }
  for (const std::string& dir : dirs) {
    std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// tc's byte counts are plain numbers. `egress`: the host's own side.
std::vector<std::string> TbfArgs(const LinkSettings& link, bool egress) {
  const double bytes_per_s = link.rate_bps / 8.0;
  const int64_t burst = std::max<int64_t>(
      kMinBurstBytes,
      static_cast<int64_t>(bytes_per_s * absl::ToDoubleSeconds(kBurstTime)));
  int64_t limit = burst + static_cast<int64_t>(
                              bytes_per_s * absl::ToDoubleSeconds(link.queue));
  if (egress) limit = std::max(limit, kEgressQueueBytes);
  return {"tbf",
          "rate",
          absl::StrCat(link.rate_bps, "bit"),
          "burst",
          absl::StrCat(burst),
          "limit",
          absl::StrCat(limit)};
}

// The qdiscs of one end of a link: `tc [-n NS] qdisc replace dev DEV ...`.
void AddShaping(const LinkSettings& link, const std::string& netns,
                const std::string& dev, bool egress,
                std::vector<NetCommand>* out) {
  std::vector<std::string> tc = {"tc"};
  if (!netns.empty()) {
    tc.push_back("-n");
    tc.push_back(netns);
  }
  auto qdisc = [&](std::vector<std::string> tail) {
    NetCommand command{tc};
    for (const char* word : {"qdisc", "replace", "dev"}) {
      command.argv.push_back(word);
    }
    command.argv.push_back(dev);
    command.argv.insert(command.argv.end(), tail.begin(), tail.end());
    out->push_back(std::move(command));
  };
  const std::vector<std::string> tbf = TbfArgs(link, egress);
  if (link.latency <= absl::ZeroDuration()) {
    std::vector<std::string> tail = {"root"};
    tail.insert(tail.end(), tbf.begin(), tbf.end());
    qdisc(tail);
    return;
  }
  // Half the one-way delay on each host's link, each way.
  const int64_t half_us = absl::ToInt64Microseconds(link.latency / 2);
  // A replace cannot change a root's kind: start from none.
  out->push_back(NetCommand{{tc}, true});
  out->back().argv.insert(out->back().argv.end(),
                          {"qdisc", "del", "dev", dev, "root"});
  qdisc({"root", "handle", "1:", "netem", "delay", absl::StrCat(half_us, "us"),
         "limit", "100000"});
  std::vector<std::string> tail = {"parent", "1:1", "handle", "10:"};
  tail.insert(tail.end(), tbf.begin(), tbf.end());
  qdisc(tail);
}

// Reads what the child writes to `fd` until EOF or `deadline`.
bool ReadUntil(int fd, absl::Time deadline, std::string* out) {
  char buffer[512];
  while (true) {
    const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (ms <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready =
        poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, 1000)));
    if (ready < 0 && errno != EINTR) return true;
    if (ready <= 0) continue;
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    if (out->size() < kMaxCapturedBytes) out->append(buffer, n);
  }
}

// Runs one command; its stdout and stderr in *output.
[[nodiscard]] absl::Status RunOne(const NetCommand& command,
                                  absl::Duration timeout, std::string* output) {
  const std::string tool = FindTool(command.argv.front());
  if (tool.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("`", command.argv.front(),
                     "` was not found; the lab needs iproute2 (apt-get "
                     "install iproute2)"));
  }
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return absl::InternalError(
        absl::StrCat("pipe failed: ", std::strerror(errno)));
  }
  std::vector<std::string> argv_strings = command.argv;
  argv_strings.front() = tool;
  std::vector<char*> argv;
  for (std::string& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    const int error = errno;
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return absl::InternalError(
        absl::StrCat("fork failed: ", std::strerror(error)));
  }
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  const absl::Time deadline = absl::Now() + timeout;
  const bool finished = ReadUntil(pipe_fds[0], deadline, output);
  close(pipe_fds[0]);
  if (!finished) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!finished) {
    return absl::DeadlineExceededError(
        absl::StrCat("`", CommandText(command), "` did not finish within ",
                     absl::FormatDuration(timeout)));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(
        absl::StrCat("`", CommandText(command), "` failed: ",
                     absl::StripAsciiWhitespace(*output).empty()
                         ? "(no output)"
                         : std::string(absl::StripAsciiWhitespace(*output))));
  }
  return absl::OkStatus();
}

std::vector<std::string> EntriesWithPrefix(const char* dir,
                                           absl::string_view prefix) {
  std::vector<std::string> names;
  DIR* d = opendir(dir);
  if (d == nullptr) return names;
  const std::string start = absl::StrCat(prefix, "-");
  while (dirent* entry = readdir(d)) {
    if (absl::StartsWith(entry->d_name, start)) {
      names.emplace_back(entry->d_name);
    }
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

std::vector<NetCommand> NetworkUpCommands(const LabConfig& config,
                                          const std::vector<LabHost>& hosts) {
  const std::string bridge = BridgeName(config.prefix);
  std::vector<NetCommand> c = {
      {{"ip", "link", "add", bridge, "type", "bridge"}},
      {{"ip", "addr", "add", absl::StrCat(BridgeAddress(config.subnet), "/24"),
        "dev", bridge}},
      {{"ip", "link", "set", bridge, "up"}},
  };
  for (const LabHost& h : hosts) {
    const std::string peer = absl::StrCat(h.veth, "p");
    c.push_back({{"ip", "netns", "add", h.netns}});
    c.push_back(
        {{"ip", "link", "add", h.veth, "type", "veth", "peer", "name", peer}});
    c.push_back({{"ip", "link", "set", peer, "netns", h.netns}});
    c.push_back({{"ip", "-n", h.netns, "link", "set", peer, "name", "eth0"}});
    c.push_back({{"ip", "link", "set", h.veth, "master", bridge, "up"}});
    c.push_back({{"ip", "-n", h.netns, "addr", "add",
                  absl::StrCat(h.address, "/24"), "dev", "eth0"}});
    c.push_back({{"ip", "-n", h.netns, "link", "set", "lo", "up"}});
    c.push_back({{"ip", "-n", h.netns, "link", "set", "eth0", "up"}});
    c.push_back({{"ip", "-n", h.netns, "route", "add", "default", "via",
                  BridgeAddress(config.subnet)}});
  }
  std::vector<NetCommand> shaping = ShapeCommands(config.link, hosts);
  c.insert(c.end(), shaping.begin(), shaping.end());
  return c;
}

std::vector<NetCommand> ShapeCommands(const LinkSettings& link,
                                      const std::vector<LabHost>& hosts) {
  std::vector<NetCommand> c;
  for (const LabHost& h : hosts) {
    AddShaping(link, h.netns, "eth0", /*egress=*/true, &c);
    AddShaping(link, "", h.veth, /*egress=*/false, &c);  // from the bridge
  }
  return c;
}

std::vector<NetCommand> NetworkDownCommands(
    absl::string_view prefix, const std::vector<std::string>& netns,
    const std::vector<std::string>& links) {
  std::vector<NetCommand> c;
  for (const std::string& ns : netns) {
    c.push_back({{"ip", "netns", "del", ns}, true});
  }
  const std::string bridge = BridgeName(prefix);
  for (const std::string& link : links) {
    if (link != bridge) c.push_back({{"ip", "link", "del", link}, true});
  }
  c.push_back({{"ip", "link", "del", bridge}, true});
  return c;
}

std::string CommandText(const NetCommand& command) {
  return absl::StrJoin(command.argv, " ");
}

absl::Status RunCommands(const std::vector<NetCommand>& commands,
                         absl::Duration timeout) {
  for (const NetCommand& command : commands) {
    std::string output;
    absl::Status status = RunOne(command, timeout, &output);
    if (!status.ok() && !command.may_fail) return status;
  }
  return absl::OkStatus();
}

absl::Status CheckLabPrivileges() {
  std::ifstream in("/proc/self/status");
  uint64_t effective = 0;
  for (std::string line; std::getline(in, line);) {
    absl::string_view rest = line;
    if (absl::ConsumePrefix(&rest, "CapEff:")) {
      absl::SimpleHexAtoi(absl::StripAsciiWhitespace(rest), &effective);
    }
  }
  if ((effective & (uint64_t{1} << kCapNetAdmin)) == 0) {
    return absl::FailedPreconditionError(
        "the lab needs CAP_NET_ADMIN to create network namespaces and shape "
        "links with tc: run it as root (sudo gradsync lab ...)");
  }
  for (const char* tool : {"ip", "tc"}) {
    if (FindTool(tool).empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the lab needs iproute2's `", tool,
                       "`, which is not installed: apt-get install iproute2"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckNetem(absl::string_view prefix, absl::Duration timeout) {
  const std::string scratch = absl::StrCat(prefix, "-netemcheck");
  std::string output;
  RunOne({{"ip", "netns", "del", scratch}, true}, timeout, &output)
      .IgnoreError();
  absl::Status made =
      RunOne({{"ip", "netns", "add", scratch}}, timeout, &output);
  if (!made.ok()) return made;
  output.clear();
  absl::Status netem = RunOne({{"tc", "-n", scratch, "qdisc", "add", "dev",
                                "lo", "root", "netem", "delay", "1ms"}},
                              timeout, &output);
  std::string ignored;
  RunOne({{"ip", "netns", "del", scratch}, true}, timeout, &ignored)
      .IgnoreError();
  if (!netem.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--latency needs the kernel's netem qdisc (sch_netem), which this "
        "kernel does not offer (tc said: ",
        absl::StripAsciiWhitespace(output),
        "); load it (modprobe sch_netem) or leave out --latency"));
  }
  return absl::OkStatus();
}

Leftovers LabLeftovers(absl::string_view prefix) {
  Leftovers left;
  left.netns = EntriesWithPrefix(kNetnsDir, prefix);
  left.links = EntriesWithPrefix("/sys/class/net", prefix);
  return left;
}

std::vector<int> PidsInNamespace(absl::string_view netns) {
  std::vector<int> pids;
  struct stat target;
  if (stat(NamespacePath(netns).c_str(), &target) != 0) return pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (dirent* entry = readdir(proc)) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid) || pid <= 0) continue;
    struct stat ns;
    if (stat(absl::StrCat("/proc/", pid, "/ns/net").c_str(), &ns) != 0) {
      continue;
    }
    if (ns.st_dev == target.st_dev && ns.st_ino == target.st_ino) {
      pids.push_back(pid);
    }
  }
  closedir(proc);
  std::sort(pids.begin(), pids.end());
  return pids;
}

std::string NamespacePath(absl::string_view netns) {
  return absl::StrCat(kNetnsDir, "/", netns);
}

}  // namespace lab
}  // namespace gradsync
