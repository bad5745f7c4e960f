#include "worker/launch/entrypoint_runner.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/wait_status.h"
#include "security/path_roots.h"
#include "worker/daemon/rank_report.h"
#include "worker/launch/rank_env.h"
#include "worker/launch/rank_process.h"
#include "worker/launch/report_wire.h"

namespace gradsync {
namespace {

constexpr absl::Duration kDefaultStepDeadline = absl::Seconds(600);
constexpr absl::Duration kDefaultTermGrace = absl::Seconds(10);
constexpr absl::Duration kPollInterval = absl::Milliseconds(100);
// Stderr lines kept per rank for its failure message and the log.
constexpr size_t kKeptStderrLines = 20;
// A line longer than this is cut (and its rest dropped).
constexpr size_t kMaxLineBytes = 4096;

absl::Duration DurationOr(int64_t ms, absl::Duration fallback) {
  return ms == 0 ? fallback : absl::Milliseconds(ms);
}

// Where the rank files go.
std::string RankFileDir(const EntrypointConfig& config) {
  if (!config.rank_file_dir.empty()) return config.rank_file_dir;
  const char* tmp = getenv("TMPDIR");
  return tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp";
}

}  // namespace

// One local rank: its process, its pipes' partial lines, what it said.
struct EntrypointRunner::Rank {
  int index = 0;
  int rank = 0;
  std::unique_ptr<RankProcess> process;
  std::string rank_file;
  std::string out_partial, err_partial;
  std::deque<std::string> last_stderr;
  ReportReader reports;
  bool report_failed = false;
  absl::Time last_progress;
  int64_t last_step = -1;
  bool finished = false;
  std::string killed_because;  // set when the daemon killed it
};

absl::StatusOr<std::unique_ptr<EntrypointRunner>> EntrypointRunner::Start(
    const Assignment& assignment, JobRunnerConfig config,
    EntrypointConfig entrypoint, std::shared_ptr<CoordinatorClient> client) {
  const EntrypointSpec& spec = assignment.spec().model().entrypoint();
  if (!entrypoint.allow) {
    return absl::PermissionDeniedError(absl::StrCat(
        "worker ", config.worker_id, " on host ", config.host,
        " does not run entrypoint jobs (the user's own program): start "
        "gradsync-worker with --allow-entrypoints to let holders of the "
        "user token run code on it (docs/security.md)"));
  }
  if (spec.argv_size() == 0 || spec.workdir().empty()) {
    return absl::InvalidArgumentError(
        "an entrypoint job without a program or a workdir");
  }
  if (absl::Status s = CheckResolvedUnderRoots(
          "model.entrypoint.workdir", spec.workdir(), entrypoint.workdir_roots);
      !s.ok()) {
    return absl::PermissionDeniedError(
        absl::StrCat(s.message(), " (the worker's --workdir-root on host ",
                     config.host, ")"));
  }
  if (assignment.ranks_size() == 0 ||
      assignment.ranks_size() != assignment.devices_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("assignment of job ", assignment.job_id(), " has ",
                     assignment.ranks_size(), " ranks and ",
                     assignment.devices_size(), " devices"));
  }
  for (int r : assignment.ranks()) {
    if (r < 0 || r >= assignment.world_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("assignment of job ", assignment.job_id(), ": rank ", r,
                       " outside [0, ", assignment.world_size(), ")"));
    }
  }
  std::unique_ptr<EntrypointRunner> runner(new EntrypointRunner(
      assignment, std::move(config), std::move(entrypoint), std::move(client)));
  absl::MutexLock lock(&runner->join_mu_);
  runner->main_ = std::thread([r = runner.get()] { r->Main(); });
  return runner;
}

EntrypointRunner::EntrypointRunner(const Assignment& assignment,
                                   JobRunnerConfig config,
                                   EntrypointConfig entrypoint,
                                   std::shared_ptr<CoordinatorClient> client)
    : assignment_(assignment),
      config_(std::move(config)),
      entrypoint_(std::move(entrypoint)),
      client_(std::move(client)),
      reporter_(client_, config_.worker_id, assignment_.job_id(),
                JobReporterOptions(config_), config_.log) {}

EntrypointRunner::~EntrypointRunner() {
  Cancel(absl::CancelledError("the job runner was destroyed"));
  Join();
}

void EntrypointRunner::Cancel(const absl::Status& reason) {
  absl::MutexLock lock(&mu_);
  if (cancel_reason_.ok()) cancel_reason_ = reason;
  cancelled_.store(true);
}

void EntrypointRunner::Join() {
  absl::MutexLock lock(&join_mu_);
  if (main_.joinable()) main_.join();
}

std::string EntrypointRunner::CancelMessage() {
  absl::MutexLock lock(&mu_);
  return absl::StrCat("the rank was cancelled: ", cancel_reason_.message());
}

void EntrypointRunner::Log(absl::string_view line) const {
  LogJobLine(config_, assignment_.job_id(), reporter_, line);
}

absl::Status EntrypointRunner::StartRank(Rank& rank, int index) {
  RankLaunch launch;
  *launch.mutable_assignment() = assignment_;
  launch.set_rank(rank.rank);
  launch.set_local_rank(index);
  launch.set_worker_id(config_.worker_id);
  launch.set_credential(config_.credential);
  launch.set_coordinator(config_.coordinator);
  launch.set_tls_dir(entrypoint_.tls_dir);
  launch.set_listen_host(config_.listen_host);
  launch.set_host(config_.host);
  launch.set_transport(config_.transport);
  launch.set_collective_timeout_ms(
      absl::ToInt64Milliseconds(config_.collective_timeout));
  launch.set_rendezvous_timeout_ms(
      absl::ToInt64Milliseconds(config_.rendezvous_timeout));
  launch.set_tcp_congestion_control(config_.tcp_congestion_control);
  launch.set_ps_tensor_plane(PsTransportOf(assignment_.spec(), config_) ==
                             kPsTransportPlane);
  launch.set_restart_count(assignment_.spec().restart_count());

  // mkstemp creates the file 0600, so the credentials are never readable
  // by others, not even for a moment.
  std::string path =
      absl::StrCat(RankFileDir(entrypoint_), "/gradsync-", assignment_.job_id(),
                   "-rank", rank.rank, "-XXXXXX");
  const int fd = mkstemp(path.data());
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot create the rank file ",
                                            path, ": ", strerror(errno)));
  }
  rank.rank_file = path;
  const std::string bytes = launch.SerializeAsString();
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      close(fd);
      return absl::InternalError(absl::StrCat("cannot write the rank file ",
                                              path, ": ", strerror(error)));
    }
    written += static_cast<size_t>(n);
  }
  close(fd);

  RankEnvInputs env;
  env.assignment = &assignment_;
  env.index = index;
  env.coordinator = config_.coordinator;
  env.tls_dir = entrypoint_.tls_dir;
  env.rank_file = path;
  env.agent_tag = entrypoint_.agent_tag;
  env.python_dir = entrypoint_.python_dir;
  env.base = ProcessEnvironment();
  SpawnOptions options;
  const EntrypointSpec& spec = assignment_.spec().model().entrypoint();
  options.argv.assign(spec.argv().begin(), spec.argv().end());
  options.workdir = spec.workdir();
  options.env = BuildRankEnvironment(env);
  absl::StatusOr<std::unique_ptr<RankProcess>> process =
      RankProcess::Spawn(options);
  if (!process.ok()) return process.status();
  rank.process = std::move(*process);
  rank.last_progress = absl::Now();
  Log(absl::StrCat("rank ", rank.rank, ": started process ",
                   rank.process->pid(), " (", spec.argv(0), ") in ",
                   spec.workdir()));
  return absl::OkStatus();
}

void EntrypointRunner::PollOutput(std::vector<std::unique_ptr<Rank>>& ranks,
                                  absl::Duration wait) {
  std::vector<pollfd> fds;
  std::vector<Rank*> owners;
  for (auto& r : ranks) {
    if (r->process == nullptr) continue;
    for (int fd : {r->process->stdout_fd(), r->process->stderr_fd(),
                   r->process->report_fd()}) {
      if (fd < 0) continue;
      fds.push_back({fd, POLLIN, 0});
      owners.push_back(r.get());
    }
  }
  if (fds.empty()) {
    absl::SleepFor(wait);
    return;
  }
  if (poll(fds.data(), fds.size(),
           static_cast<int>(absl::ToInt64Milliseconds(wait))) <= 0) {
    return;
  }
  char buffer[65536];
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    Rank& r = *owners[i];
    const int fd = fds[i].fd;
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) {  // EOF: the process (and its group) closed it
      r.process->CloseOutput(fd);
      continue;
    }
    const absl::string_view got(buffer, static_cast<size_t>(n));
    if (fd == r.process->report_fd()) {
      r.reports.Append(got);
      while (true) {
        absl::StatusOr<std::optional<StepMetrics>> m = r.reports.Next();
        if (!m.ok()) {
          if (!r.report_failed) {
            Log(absl::StrCat("rank ", r.rank, ": ", m.status().message(),
                             "; its step reports are ignored from here"));
          }
          r.report_failed = true;
          break;
        }
        if (!m->has_value()) break;
        StepMetrics& metrics = **m;
        metrics.set_rank(r.rank);  // a process speaks for its own rank only
        r.last_step = std::max(r.last_step, metrics.step());
        r.last_progress = absl::Now();
        reporter_.Add(metrics);
      }
      continue;
    }
    const bool is_err = fd == r.process->stderr_fd();
    std::string& partial = is_err ? r.err_partial : r.out_partial;
    partial.append(got.data(), got.size());
    size_t start = 0;
    for (size_t nl; (nl = partial.find('\n', start)) != std::string::npos;
         start = nl + 1) {
      std::string line = partial.substr(start, nl - start);
      if (line.size() > kMaxLineBytes) line.resize(kMaxLineBytes);
      if (is_err && !line.empty()) {
        r.last_stderr.push_back(line);
        if (r.last_stderr.size() > kKeptStderrLines) r.last_stderr.pop_front();
      }
      reporter_.AddLogLine(r.rank, absl::StrCat("rank ", r.rank, ": ", line));
    }
    partial.erase(0, start);
    if (partial.size() > kMaxLineBytes) {  // a line without an end
      reporter_.AddLogLine(r.rank,
                           absl::StrCat("rank ", r.rank, ": ",
                                        partial.substr(0, kMaxLineBytes)));
      partial.clear();
    }
  }
}

void EntrypointRunner::Finish(Rank& r, int status) {
  r.finished = true;
  // Nothing the rank started outlives it.
  r.process->SignalGroup(SIGKILL);
  for (std::string* partial : {&r.out_partial, &r.err_partial}) {
    if (partial->empty()) continue;
    if (partial == &r.err_partial) r.last_stderr.push_back(*partial);
    reporter_.AddLogLine(r.rank, absl::StrCat("rank ", r.rank, ": ", *partial));
    partial->clear();
  }
  const std::string how = DescribeExit(status);
  const bool exited_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  const int64_t step = std::max<int64_t>(r.last_step, 0);
  if (!r.killed_because.empty()) {
    Log(absl::StrCat("rank ", r.rank, ": ", r.killed_because));
    Report(r.rank, RANK_STATE_FAILED, step, "entrypoint", r.killed_because);
  } else if (cancelled()) {
    Log(absl::StrCat("rank ", r.rank, ": process ", how, " after cancel"));
    Report(r.rank, RANK_STATE_FAILED, step, "entrypoint", CancelMessage());
  } else if (exited_ok) {
    Log(absl::StrCat("rank ", r.rank, ": process exited with status 0"));
    if (absl::Status s = reporter_.Flush(absl::Now() + config_.rpc_timeout);
        !s.ok()) {
      Log(absl::StrCat("rank ", r.rank,
                       ": metrics not all sent: ", s.message()));
    }
    Report(r.rank, RANK_STATE_SUCCEEDED, step, "", "");
  } else {
    std::string message = absl::StrCat("process ", r.process->pid(), " ", how);
    if (!r.last_stderr.empty()) {
      absl::StrAppend(&message,
                      "; its last error line: ", r.last_stderr.back());
    } else {
      absl::StrAppend(&message, "; it wrote nothing on stderr");
    }
    absl::StrAppend(&message, " (`gradsync logs ", assignment_.job_id(),
                    " --rank ", r.rank, "` has its output)");
    Log(absl::StrCat("rank ", r.rank, ": ", message));
    Report(r.rank, RANK_STATE_FAILED, step, "entrypoint", message);
  }
  if (unlink(r.rank_file.c_str()) == 0) r.rank_file.clear();
}

void EntrypointRunner::Main() {
  const EntrypointSpec& spec = assignment_.spec().model().entrypoint();
  const absl::Duration grace =
      DurationOr(spec.term_grace_ms(), kDefaultTermGrace);
  const bool has_deadline = spec.step_deadline_ms() >= 0;
  const absl::Duration step_deadline = DurationOr(
      std::max<int64_t>(spec.step_deadline_ms(), 0), kDefaultStepDeadline);

  std::vector<std::unique_ptr<Rank>> ranks;
  bool failing = false;  // a rank failed: stop the others
  for (int i = 0; i < assignment_.ranks_size(); ++i) {
    auto r = std::make_unique<Rank>();
    r->index = i;
    r->rank = assignment_.ranks(i);
    if (!failing && !cancelled()) {
      if (absl::Status s = StartRank(*r, i); !s.ok()) {
        Log(absl::StrCat("rank ", r->rank, ": cannot start: ", s.message()));
        Report(r->rank, RANK_STATE_FAILED, 0, "entrypoint start", s.message());
        failing = true;
        r->finished = true;
      } else {
        Report(r->rank, RANK_STATE_READY, 0, "", "");
      }
    } else {
      Report(r->rank, RANK_STATE_FAILED, 0, "entrypoint start",
             cancelled() ? CancelMessage()
                         : "not started: another rank of the job failed");
      r->finished = true;
    }
    ranks.push_back(std::move(r));
  }

  bool term_sent = false;
  absl::Time kill_at = absl::InfiniteFuture();
  while (true) {
    PollOutput(ranks, kPollInterval);
    bool all_finished = true;
    for (auto& r : ranks) {
      if (r->finished) continue;
      if (std::optional<int> status = r->process->TryReap()) {
        PollOutput(ranks, absl::ZeroDuration());  // what it said last
        Finish(*r, *status);
        if (!(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)) failing = true;
        continue;
      }
      all_finished = false;
      const absl::Time now = absl::Now();
      if (has_deadline && r->killed_because.empty() &&
          now - r->last_progress > step_deadline) {
        r->killed_because = absl::StrCat(
            "reported no step for ", absl::FormatDuration(step_deadline),
            " (the job's step deadline, model.entrypoint.stepDeadlineMs)",
            r->last_step < 0
                ? ", and none since it started"
                : absl::StrCat(", the last was step ", r->last_step),
            ": killed. A script that never calls gradsync.torch.report() "
            "needs stepDeadlineMs -1");
        r->process->SignalGroup(SIGKILL);
      }
    }
    if (all_finished) break;
    if ((cancelled() || failing) && !term_sent) {
      term_sent = true;
      kill_at = absl::Now() + grace;
      for (auto& r : ranks) {
        if (!r->finished) r->process->SignalGroup(SIGTERM);
      }
    }
    if (term_sent && absl::Now() >= kill_at) {
      for (auto& r : ranks) {
        if (!r->finished) r->process->SignalGroup(SIGKILL);
      }
      kill_at = absl::InfiniteFuture();
    }
  }
  for (auto& r : ranks) {
    if (!r->rank_file.empty()) unlink(r->rank_file.c_str());
  }
  if (absl::Status s = reporter_.Flush(absl::Now() + config_.rpc_timeout);
      !s.ok()) {
    Log(absl::StrCat("job log not all sent: ", s.message()));
  }
  done_.store(true);
}

void EntrypointRunner::Report(int rank, RankState state, int64_t step,
                              absl::string_view operation,
                              absl::string_view message) {
  ReportRankRequest request;
  request.set_worker_id(config_.worker_id);
  request.set_credential(config_.credential);
  request.set_job_id(assignment_.job_id());
  request.set_rank(rank);
  request.set_state(state);
  request.set_step(step);
  request.set_operation(std::string(operation));
  request.set_message(std::string(message));
  ReportRankState(*client_, request, config_.rpc_timeout, config_.coordinator,
                  cancelled_, [this](absl::string_view line) { Log(line); });
}

}  // namespace gradsync
