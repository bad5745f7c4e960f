#include "cli/control/command_common.h"

#include <unistd.h>

#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli/control/job_format.h"
#include "cli/control/local_cluster.h"
#include "cli/control/local_command.h"
#include "cli/control/progress.h"
#include "cli/framework/format.h"
#include "security/secret.h"

namespace gradsync {
namespace cli {
namespace control {

void AddFollowFlags(FollowOptions* options, std::vector<FlagSpec>* flags) {
  flags->push_back(IntFlag(
      "every", "not a terminal: a progress line every N steps (total/20)", 1,
      &options->every));
  flags->push_back(SecondsFlag(
      "deadline", "stop following after this long (the job keeps running)",
      &options->deadline));
}

void AddCoordinatorFlags(CommonOptions* options, std::vector<FlagSpec>* flags) {
  flags->push_back(
      StringFlag(
          "coordinator", "HOST:PORT",
          "the coordinator ($GRADSYNC_COORDINATOR, else 127.0.0.1:29400)",
          &options->coordinator)
          .Short('c'));
  flags->push_back(StringFlag(
      "token-file", "FILE",
      "the users' token, if the coordinator asks for one "
      "($GRADSYNC_TOKEN_FILE, else the user-token of the local cluster in "
      "$GRADSYNC_RUN_DIR or .run when it runs that coordinator)",
      &options->token_file));
  flags->push_back(StringFlag(
      "tls-dir", "DIR",
      "mutual TLS with the cluster CA and the users' certificate in DIR "
      "(`gradsync certs init DIR`; $GRADSYNC_TLS_DIR, else the local "
      "cluster's when it runs the coordinator; else plaintext)",
      &options->tls.dir));
  flags->push_back(SwitchFlag(
      "insecure", "plaintext gRPC even where a TLS directory is known",
      &options->tls.insecure));
  flags->push_back(SecondsFlag("timeout",
                               "deadline of each call to the coordinator (10)",
                               &options->timeout));
}

std::optional<int> ParseCommand(const std::vector<std::string>& args,
                                std::vector<FlagSpec> flags,
                                absl::string_view command,
                                absl::string_view usage, const CommandEnv& env,
                                CommonOptions* common,
                                std::vector<std::string>* positional) {
  AddCoordinatorFlags(common, &flags);
  return cli::ParseCommand(args, std::move(flags), command, usage, env,
                           static_cast<CommandOptions*>(common), positional);
}

namespace {

// The run directory and record of the local cluster when its coordinator is
// the one at `address`; nullopt otherwise.
std::optional<std::pair<std::string, ClusterRecord>> LocalClusterAt(
    const CommandEnv& env, const std::string& address) {
  std::string run_dir = ResolveRunDir("", env.run_dir_env, env.cwd);
  absl::StatusOr<std::optional<ClusterRecord>> record =
      ReadClusterRecord(run_dir);
  if (!record.ok() || !record->has_value() ||
      (*record)->coordinator_address != address) {
    return std::nullopt;
  }
  return std::make_pair(std::move(run_dir), **std::move(record));
}

}  // namespace

std::string ResolveTokenFile(const std::string& flag, const CommandEnv& env,
                             const std::string& address) {
  if (!flag.empty()) return flag;
  if (!env.token_file_env.empty()) return env.token_file_env;
  const auto local = LocalClusterAt(env, address);
  if (!local.has_value()) return "";
  const std::string path = absl::StrCat(local->first, "/", kUserTokenFileName);
  return access(path.c_str(), F_OK) == 0 ? path : "";
}

std::string ResolveTlsDir(const std::string& flag, const CommandEnv& env,
                          const std::string& address) {
  if (!flag.empty()) return flag;
  if (!env.tls_dir_env.empty()) return env.tls_dir_env;
  const auto local = LocalClusterAt(env, address);
  return local.has_value() ? local->second.tls_dir : "";
}

std::unique_ptr<ControlClient> MakeClient(const CommonOptions& common,
                                          const CommandEnv& env) {
  ClientConfig config;
  config.address =
      ResolveCoordinatorAddress(common.coordinator, env.coordinator_env);
  config.rpc_timeout = common.timeout;
  if (common.tls.insecure) {
    *env.err << "gradsync: " << PlaintextWarning(common.tls) << "\n";
  } else {
    TlsOptions tls;
    tls.dir = ResolveTlsDir(common.tls.dir, env, config.address);
    absl::StatusOr<GrpcSecurity> security =
        SecurityFromOptions(tls, TlsRole::kUser);
    if (security.ok()) {
      config.security = *std::move(security);
    } else {
      config.setup_error = security.status();
    }
  }
  const std::string token_file =
      ResolveTokenFile(common.token_file, env, config.address);
  if (!token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(token_file);
    if (token.ok()) {
      config.token = *std::move(token);
    } else if (config.setup_error.ok()) {
      config.setup_error = token.status();
    }
  }
  return std::make_unique<ControlClient>(std::move(config));
}

double NowSeconds(const CommandEnv& env) {
  return absl::ToDoubleSeconds(env.now() - absl::UnixEpoch());
}

namespace {

// How long `watch` and `submit --follow` try to watch again after the
// coordinator went away (a restart on its --state-db takes well under it),
// and how often.
constexpr absl::Duration kWatchReconnectWindow = absl::Seconds(60);
constexpr absl::Duration kWatchReconnectDelay = absl::Milliseconds(500);

// Follows one job to its end; exit 0 only if it SUCCEEDED. Sets
// *restarted_as to the job that restarts it (JobSpec.max_restarts).
int FollowOne(ControlClient& client, const std::string& job_id,
              const FollowOptions& follow, bool json, absl::string_view command,
              const CommandEnv& env, std::string* restarted_as) {
  ProgressOptions options;
  options.tty = env.out_is_tty;
  options.width = env.out_is_tty ? env.terminal_width : 0;
  if (env.out_is_tty) options.current_width = env.live_width;
  options.every_steps = follow.every;
  std::optional<ProgressTracker> progress;
  if (!json) {
    *env.out << "following job " << job_id
             << " (Ctrl-C stops following; the job keeps running)\n"
             << std::flush;
  }
  // A coordinator that restarts (on its --state-db) ends the watch with
  // UNAVAILABLE: watch again, with a fresh tracker (the new watch sends
  // every step again), and print each step's JSON once.
  const absl::Time end = follow.deadline == absl::InfiniteDuration()
                             ? absl::InfiniteFuture()
                             : env.now() + follow.deadline;
  absl::flat_hash_set<std::pair<int, int64_t>> printed;
  absl::Time unreachable_since = absl::InfiniteFuture();
  absl::Status status;
  for (;;) {
    progress.emplace(options, json ? nullptr : env.out);
    bool heard = false;
    status = client.WatchJob(
        job_id,
        end == absl::InfiniteFuture() ? absl::InfiniteDuration()
                                      : end - env.now(),
        [&](const JobEvent& event) {
          heard = true;
          progress->OnEvent(event);
          if (json) {
            JobEvent fresh = event;
            fresh.clear_steps();
            for (const StepMetrics& m : event.steps()) {
              if (printed.insert({m.rank(), m.step()}).second) {
                *fresh.add_steps() = m;
              }
            }
            *env.out << MessageToJson(fresh) << "\n" << std::flush;
          }
          return absl::OkStatus();
        });
    if (status.code() != absl::StatusCode::kUnavailable) break;
    const absl::Time now = env.now();
    if (heard || unreachable_since == absl::InfiniteFuture()) {
      unreachable_since = now;
      progress->Finish();
      *env.err << "lost the coordinator while following job " << job_id << " ("
               << status.message() << "); reconnecting for up to "
               << absl::FormatDuration(kWatchReconnectWindow) << "\n"
               << std::flush;
    }
    if (now - unreachable_since >= kWatchReconnectWindow || now >= end) break;
    absl::SleepFor(kWatchReconnectDelay);
  }
  ProgressTracker& tracker = *progress;
  tracker.Finish();
  if (!status.ok()) return ReportError(env, command, json, status);
  if (!tracker.has_status() || !IsTerminal(tracker.status().state())) {
    return ReportError(env, command, json,
                       absl::UnavailableError(absl::StrCat(
                           "the coordinator closed the watch of job ", job_id,
                           " before the job ended; `gradsync status ", job_id,
                           "` shows where it is")));
  }
  const std::vector<StepMetrics>& metrics = tracker.metrics();
  if (json) {
    *env.out << "{\"final\":" << MessageToJson(tracker.status())
             << ",\"breakdown\":" << BreakdownToJson(ComputeBreakdown(metrics))
             << "}\n";
  } else {
    *env.out << FormatFinalReport(tracker.status(), metrics);
  }
  env.out->flush();
  *restarted_as = tracker.status().restarted_as();
  return tracker.status().state() == JOB_STATE_SUCCEEDED ? kExitOk
                                                         : kExitFailure;
}

}  // namespace

int Follow(ControlClient& client, const std::string& job_id,
           const FollowOptions& follow, bool json, absl::string_view command,
           const CommandEnv& env) {
  std::string current = job_id;
  for (;;) {
    std::string restarted_as;
    const int exit =
        FollowOne(client, current, follow, json, command, env, &restarted_as);
    if (restarted_as.empty()) return exit;
    if (!json) {
      *env.out << "job " << current << " was restarted as " << restarted_as
               << "\n";
    }
    current = restarted_as;
  }
}

}  // namespace control
}  // namespace cli
}  // namespace gradsync
