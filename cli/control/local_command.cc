#include "cli/control/local_command.h"

#include <unistd.h>

#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/control/local_cluster.h"
#include "cli/framework/format.h"
#include "cli/framework/output_format.h"
#include "common/status_macros.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

constexpr char kLocalUsage[] =
    "usage: gradsync local up --workers N [--ps M] [flags]\n"
    "       gradsync local down [flags]\n\n"
    "up: starts gradsync-coordinator, N gradsync-worker and M gradsync-ps\n"
    "(parameter server) daemons on 127.0.0.1 in the background (logs and\n"
    "cluster.json in the run directory), waits until every worker and\n"
    "parameter server has registered, and prints the line that points the\n"
    "CLI at it. Running it again on a live cluster says so and changes\n"
    "nothing.\n"
    "down: stops the daemons recorded in the run directory (SIGTERM, then\n"
    "SIGKILL after --timeout) and removes cluster.json; logs stay.\n";

struct LocalOptions {
  int64_t workers = 1;
  int64_t ps = 0;
  std::string devices = "cpu:1";
  std::string run_dir;
  int64_t port = 29400;
  absl::Duration timeout;
  bool timeout_set = false;
  std::string coordinator_binary;
  std::string worker_binary;
  std::string ps_binary;
  bool insecure = false;
  std::string ps_transport = kDefaultPsTransport;
  std::string output = "table";  // -o: table or json
  bool json = false;             // output == "json"
  bool help = false;
};

std::vector<FlagSpec> LocalFlags(LocalOptions* o) {
  std::vector<FlagSpec> flags = {
      IntFlag("workers", "up: worker daemons to start (1)", 1, &o->workers)
          .Short('w'),
      IntFlag("ps", "up: parameter servers (gradsync-ps) to start (0)", 0,
              &o->ps),
      StringFlag("devices-per-worker", "LIST",
                 "up: each worker's --devices (cpu:1)", &o->devices),
      StringFlag("run-dir", "DIR",
                 "logs and cluster.json ($GRADSYNC_RUN_DIR, else ./.run)",
                 &o->run_dir),
      IntFlag("port", "up: the coordinator's port (29400; 0: any free)", 0,
              &o->port),
      FlagSpec{"timeout", "SECONDS",
               "up: wait for the daemons (30); down: for them to exit (10)",
               [o](absl::string_view value) {
                 absl::StatusOr<absl::Duration> parsed =
                     ParseSecondsValue("--timeout", value);
                 if (!parsed.ok()) return parsed.status();
                 o->timeout = *parsed;
                 o->timeout_set = true;
                 return absl::OkStatus();
               }},
      StringFlag("coordinator-binary", "PATH",
                 "up: the gradsync-coordinator to run", &o->coordinator_binary),
      StringFlag("worker-binary", "PATH", "up: the gradsync-worker to run",
                 &o->worker_binary),
      StringFlag("ps-binary", "PATH", "up: the gradsync-ps to run",
                 &o->ps_binary),
      SwitchFlag("insecure",
                 "up: run the daemons without TLS (their --insecure); by "
                 "default they use mutual TLS with a fresh CA in RUN_DIR/tls",
                 &o->insecure),
      PsTransportFlag("up: the workers' --ps-transport: plane (the default; "
                      "HMAC-authenticated plain TCP, also beside TLS) or "
                      "grpc (gRPC streams, encrypted under TLS)",
                      &o->ps_transport),
  };
  AddOutputFlags(TableOrJson(), &o->output, &flags);
  flags.push_back(HelpFlag(&o->help));
  return flags;
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

[[nodiscard]] absl::StatusOr<std::string> Binary(
    const std::string& flag, absl::string_view name,
    const std::vector<std::string>& relative, const CommandEnv& env) {
  if (!flag.empty()) return flag;
  return FindDaemonBinary(name,
                          env.self_exe.empty() ? "" : DirName(env.self_exe),
                          relative, env.path_env);
}

int Up(const LocalOptions& o, const std::string& run_dir,
       const CommandEnv& env) {
  LocalUpConfig config;
  config.run_dir = run_dir;
  config.workers = static_cast<int>(o.workers);
  config.devices_per_worker = o.devices;
  config.port = static_cast<int>(o.port);
  config.insecure = o.insecure;
  config.ps_transport = o.ps_transport;
  if (o.timeout_set) config.timeout = o.timeout;
  absl::StatusOr<std::string> coordinator =
      Binary(o.coordinator_binary, kCoordinatorBinary,
             {"../server/coordinator", ""}, env);
  if (!coordinator.ok()) {
    return ReportError(env, "local up", o.json, coordinator.status());
  }
  absl::StatusOr<std::string> worker =
      Binary(o.worker_binary, kWorkerBinary, {"../worker", ""}, env);
  if (!worker.ok())
    return ReportError(env, "local up", o.json, worker.status());
  config.coordinator_binary = *coordinator;
  config.worker_binary = *worker;
  if (o.ps > 1024) {
    return ReportUsageError(
        env, "local up", {},
        absl::InvalidArgumentError("--ps is above 1024 parameter servers"));
  }
  config.parameter_servers = static_cast<int>(o.ps);
  if (config.parameter_servers > 0) {
    absl::StatusOr<std::string> ps =
        Binary(o.ps_binary, kPsBinary, {"../server/ps", ""}, env);
    if (!ps.ok()) return ReportError(env, "local up", o.json, ps.status());
    config.ps_binary = *ps;
  }

  absl::StatusOr<LocalUpResult> up = LocalUp(config);
  if (!up.ok()) return ReportError(env, "local up", o.json, up.status());
  const ClusterRecord& record = up->record;
  if (o.json) {
    *env.out << "{\"alreadyUp\":" << (up->already_up ? "true" : "false")
             << ",\"registeredWorkers\":" << up->registered_workers
             << ",\"registeredParameterServers\":"
             << up->registered_parameter_servers
             << ",\"cluster\":" << ClusterRecordToJson(record) << "}\n";
    env.out->flush();
    return kExitOk;
  }
  int coordinator_pid = 0;
  int workers = 0;
  std::vector<std::string> logs, servers;
  for (const DaemonRecord& d : record.daemons) {
    if (d.name == "coordinator") {
      coordinator_pid = d.pid;
    } else if (absl::StartsWith(d.name, "ps-")) {
      servers.push_back(d.address.empty() ? d.name : d.address);
    } else {
      ++workers;
    }
    logs.push_back(d.log);
  }
  const auto ps_count = [](int n) {
    return absl::StrCat(n, n == 1 ? " parameter server" : " parameter servers");
  };
  if (up->already_up) {
    *env.out << "a local cluster is already up in " << record.run_dir
             << ": coordinator at " << record.coordinator_address << " (pid "
             << coordinator_pid << "), " << up->registered_workers
             << " workers";
    if (up->registered_parameter_servers > 0) {
      *env.out << " and " << ps_count(up->registered_parameter_servers);
    }
    *env.out << " registered; nothing started\n";
  } else {
    *env.out << "local cluster up in " << record.run_dir << ": coordinator at "
             << record.coordinator_address << " (pid " << coordinator_pid
             << "), " << workers << " workers (" << config.devices_per_worker
             << " each)";
    if (!servers.empty()) {
      *env.out << ", " << ps_count(static_cast<int>(servers.size())) << " ("
               << absl::StrJoin(servers, ", ") << ")";
    }
    *env.out << ", all registered\n";
  }
  *env.out << "logs: " << absl::StrJoin(logs, " ") << "\n"
           << "stop it with: gradsync local down --run-dir " << record.run_dir
           << "\n"
           << "export GRADSYNC_COORDINATOR=" << record.coordinator_address
           << "\n";
  const std::string token_file =
      absl::StrCat(record.run_dir, "/", kUserTokenFileName);
  if (access(token_file.c_str(), F_OK) == 0) {
    *env.out << "export GRADSYNC_TOKEN_FILE=" << token_file << "\n";
  }
  if (!record.tls_dir.empty()) {
    *env.out << "export GRADSYNC_TLS_DIR=" << record.tls_dir << "\n";
  }
  env.out->flush();
  return kExitOk;
}

int Down(const LocalOptions& o, const std::string& run_dir,
         const CommandEnv& env) {
  absl::StatusOr<LocalDownResult> down =
      LocalDown(run_dir, o.timeout_set ? o.timeout : absl::Seconds(10));
  if (!down.ok()) return ReportError(env, "local down", o.json, down.status());
  if (o.json) {
    auto list = [](const std::vector<std::string>& names) {
      std::vector<std::string> quoted;
      for (const std::string& name : names) quoted.push_back(JsonQuote(name));
      return absl::StrCat("[", absl::StrJoin(quoted, ","), "]");
    };
    *env.out << "{\"runDir\":" << JsonQuote(run_dir)
             << ",\"wasUp\":" << (down->was_up ? "true" : "false")
             << ",\"stopped\":" << list(down->stopped)
             << ",\"killed\":" << list(down->killed) << "}\n";
  } else if (!down->was_up) {
    *env.out << "no local cluster in " << run_dir << " (no " << kClusterFile
             << "); nothing to stop\n";
  } else {
    *env.out << "local cluster in " << run_dir << " stopped"
             << (down->stopped.empty()
                     ? std::string(" (its daemons had already exited)")
                     : absl::StrCat(": ", absl::StrJoin(down->stopped, ", ")))
             << "\n";
    if (!down->killed.empty()) {
      *env.out << "did not exit on SIGTERM, killed: "
               << absl::StrJoin(down->killed, ", ") << "\n";
    }
  }
  env.out->flush();
  return kExitOk;
}

}  // namespace

absl::StatusOr<DaemonBinaries> FindDaemonBinaries(const DaemonBinaries& flags,
                                                  bool need_ps,
                                                  const CommandEnv& env) {
  DaemonBinaries found;
  ASSIGN_OR_RETURN(found.coordinator,
                   Binary(flags.coordinator, kCoordinatorBinary,
                          {"../server/coordinator", ""}, env));
  ASSIGN_OR_RETURN(found.worker,
                   Binary(flags.worker, kWorkerBinary, {"../worker", ""}, env));
  if (need_ps) {
    ASSIGN_OR_RETURN(found.ps,
                     Binary(flags.ps, kPsBinary, {"../server/ps", ""}, env));
  }
  return found;
}

std::string ResolveRunDir(const std::string& flag, const std::string& env_value,
                          const std::string& cwd) {
  std::string dir = !flag.empty()        ? flag
                    : !env_value.empty() ? env_value
                                         : ".run";
  if (!dir.empty() && dir.front() != '/') dir = absl::StrCat(cwd, "/", dir);
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

int RunLocal(const std::vector<std::string>& args, const CommandEnv& env) {
  LocalOptions options;
  std::vector<FlagSpec> flags = LocalFlags(&options);
  if (env.flag_table != nullptr) {
    *env.flag_table = std::move(flags);
    return kExitOk;
  }
  absl::StatusOr<std::vector<std::string>> positional =
      ParseFlags(args, flags, /*env=*/nullptr);
  if (!positional.ok()) {
    return ReportUsageError(env, "local", args, positional.status());
  }
  options.json = options.output == "json";
  if (options.help) {
    *env.out << kLocalUsage << "\nflags:\n"
             << FlagsHelp(flags, env.terminal_width);
    return kExitOk;
  }
  if (positional->size() != 1 ||
      ((*positional)[0] != "up" && (*positional)[0] != "down")) {
    return ReportUsageError(
        env, "local", args,
        absl::InvalidArgumentError(
            positional->empty()
                ? "say `gradsync local up` or `gradsync local down`"
                : absl::StrCat("unexpected '", absl::StrJoin(*positional, " "),
                               "'; say up or down")));
  }
  const std::string run_dir =
      ResolveRunDir(options.run_dir, env.run_dir_env, env.cwd);
  return (*positional)[0] == "up" ? Up(options, run_dir, env)
                                  : Down(options, run_dir, env);
}

int LocalMain(const std::vector<std::string>& args) {
  return RunLocal(args, ProcessCommandEnv());
}

}  // namespace control
}  // namespace cli
}  // namespace gradsync
