#include "cli/lab/lab_command.h"

#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "cli/control/command_common.h"
#include "cli/control/local_cluster.h"
#include "cli/control/local_command.h"
#include "cli/framework/format.h"
#include "cli/framework/output_format.h"
#include "cli/lab/lab_calibrate_command.h"
#include "cli/lab/lab_probe.h"
#include "cli/lab/lab_state.h"
#include "cli/lab/lab_sweep_command.h"
#include "cli/lab/lab_up.h"
#include "common/flags.h"

namespace gradsync {
namespace lab {
namespace {

using cli::CommandEnv;
using cli::kExitFailure;
using cli::kExitOk;

constexpr char kUsage[] =
    "usage: gradsync lab up --hosts H [--ps-hosts P] [--colocate-ps]\n"
    "                       [--link RATE] [--latency D] [flags]\n"
    "       gradsync lab down | status | probe [flags]\n"
    "       gradsync lab set-link --link RATE [--latency D]\n"
    "       gradsync lab sweep [flags]   (gradsync lab sweep --help)\n"
    "       gradsync lab calibrate --sweep DIR/sweep.json [flags]\n\n"
    "The bottleneck lab: emulated hosts (network namespaces on one bridge,\n"
    "every link shaped with tc) running the real daemons, so that the PS-\n"
    "vs-ring study is bound by links, not by this machine's CPUs. Needs\n"
    "root (CAP_NET_ADMIN) and iproute2. See docs/lab.md.\n\n"
    "up: the head host runs the coordinator, H worker hosts run W workers\n"
    "each, P server hosts a gradsync-ps each (--colocate-ps: also one per\n"
    "worker host); then it probes the links. down: stops everything and\n"
    "removes every namespace, veth, bridge and qdisc (idempotent; cleans\n"
    "up after a crashed up too). status: hosts, addresses, links, daemons.\n"
    "probe: measures every host's link (rate and round trip) against the\n"
    "settings. set-link: reshapes every link in place.\n";

struct LabOptions {
  int64_t hosts = 2;
  int64_t ps_hosts = 0;
  bool colocate_ps = false;
  int64_t workers_per_host = 1;
  std::string devices = "cpu:1";
  std::string link = "1gbit";
  absl::Duration latency = absl::ZeroDuration();
  absl::Duration queue = absl::Milliseconds(50);
  std::string prefix;
  std::string subnet = std::string(kDefaultSubnet);
  std::string run_dir;
  absl::Duration timeout = absl::Seconds(60);
  cli::control::DaemonBinaries binaries;
  std::string tcp_congestion = "default";
  std::string ps_transport = kDefaultPsTransport;
  bool allow_entrypoints = false;
  std::string pairs = "ring";
  absl::Duration duration = absl::Milliseconds(600);
  double tolerance = 0.10;
  bool no_probe = false;
  std::string output = "table";  // -o: table, json or csv
  bool json = false;             // output == "json"
  bool help = false;
};

// The formats of -o: csv only where there is one row per item (status's
// hosts, probe's pairs).
const std::vector<std::string>& LabFormats() {
  static const auto* const kFormats =
      new std::vector<std::string>{"table", "json", "csv"};
  return *kFormats;
}

std::vector<FlagSpec> Flags(LabOptions* o) {
  std::vector<FlagSpec> flags = {
      IntFlag("hosts", "up: worker hosts (2)", 1, &o->hosts),
      IntFlag("ps-hosts", "up: parameter-server hosts (0)", 0, &o->ps_hosts),
      SwitchFlag("colocate-ps", "up: a gradsync-ps on every worker host too",
                 &o->colocate_ps),
      IntFlag("workers-per-host", "up: worker daemons per host (1)", 1,
              &o->workers_per_host),
      StringFlag("devices-per-worker", "LIST",
                 "up: each worker's --devices (cpu:1)", &o->devices),
      StringFlag("link", "RATE",
                 "up, set-link: every link's rate each way, as tc "
                 "writes it (1gbit, 500mbit)",
                 &o->link),
      FlagSpec{"latency", "DURATION",
               "up, set-link: one-way delay between hosts (1ms; needs "
               "netem)",
               [o](absl::string_view v) {
                 if (!absl::ParseDuration(v, &o->latency) ||
                     o->latency < absl::ZeroDuration()) {
                   return absl::InvalidArgumentError(absl::StrCat(
                       "--latency '", v, "': give a duration like 1ms"));
                 }
                 return absl::OkStatus();
               }},
      FlagSpec{"queue", "DURATION",
               "up, set-link: the switch port's buffer toward each host, in "
               "time at the link rate (50ms; short ones study incast loss)",
               [o](absl::string_view v) {
                 if (!absl::ParseDuration(v, &o->queue) ||
                     o->queue <= absl::ZeroDuration()) {
                   return absl::InvalidArgumentError(absl::StrCat(
                       "--queue '", v, "': give a duration like 50ms"));
                 }
                 return absl::OkStatus();
               }},
      StringFlag("prefix", "NAME", "names of namespaces and interfaces (gsl)",
                 &o->prefix),
      StringFlag("subnet", "A.B.C", "up: the lab's /24 (10.77.0)", &o->subnet),
      StringFlag("tcp-congestion", "NAME",
                 "up: the daemons' TCP congestion control (default: "
                 "the machine's)",
                 &o->tcp_congestion),
      PsTransportFlag("up: the workers' --ps-transport: plane (the default, "
                      "HMAC-authenticated plain TCP) or grpc (gRPC streams)",
                      &o->ps_transport),
      SwitchFlag("allow-entrypoints",
                 "up: entrypoint jobs (your PyTorch script) may run; the "
                 "coordinator then wants the users' token it prints",
                 &o->allow_entrypoints),
      StringFlag("run-dir", "DIR",
                 "lab.json, cluster.json and logs ($GRADSYNC_LAB_DIR, "
                 "else ./.lab)",
                 &o->run_dir),
      SecondsFlag("timeout", "up: wait for the daemons (60)", &o->timeout),
      StringFlag("coordinator-binary", "PATH",
                 "up: the gradsync-coordinator to run",
                 &o->binaries.coordinator),
      StringFlag("worker-binary", "PATH", "up: the gradsync-worker to run",
                 &o->binaries.worker),
      StringFlag("ps-binary", "PATH", "up: the gradsync-ps to run",
                 &o->binaries.ps),
      StringFlag("pairs", "ring|all", "probe: host pairs to measure (ring)",
                 &o->pairs),
      SecondsFlag("duration", "probe: seconds per stream (0.6)", &o->duration),
      FlagSpec{"tolerance", "SHARE",
               "probe: largest relative miss that passes (0.1)",
               [o](absl::string_view v) {
                 absl::StatusOr<double> t =
                     ParseDoubleValue("--tolerance", v, 0);
                 if (!t.ok()) return t.status();
                 o->tolerance = *t;
                 return absl::OkStatus();
               }},
      SwitchFlag("no-probe", "up: skip the link probe", &o->no_probe),
  };
  cli::AddOutputFlags(LabFormats(), &o->output, &flags);
  flags.push_back(HelpFlag(&o->help));
  return flags;
}

std::string RoleText(const LabHost& host) {
  switch (host.role) {
    case HostRole::kHead:
      return "coordinator";
    case HostRole::kWorker:
      return absl::StrCat(host.workers,
                          host.workers == 1 ? " worker" : " workers",
                          host.servers > 0 ? " + gradsync-ps" : "");
    case HostRole::kServer:
      return "gradsync-ps";
  }
  return "";
}

// "; PS steps over gRPC streams" where the lab chose them; nothing for the
// tensor plane, the default.
std::string PsTransportText(const LabSpec& spec) {
  return spec.ps_transport() == kPsTransportGrpc
             ? "; PS steps over gRPC streams"
             : "";
}

std::string LinkText(const LabLink& link) {
  return absl::StrCat(
      DescribeLinkRate(link.rate_bps()), " each way, ",
      link.latency_us() > 0
          ? absl::StrCat(
                absl::FormatDuration(absl::Microseconds(link.latency_us())),
                " one-way between hosts")
          : "no added latency",
      link.queue_us() > 0
          ? absl::StrCat(
                ", switch buffers of ",
                absl::FormatDuration(absl::Microseconds(link.queue_us())))
          : "");
}

// One row per host: name, address, namespace, role, daemons.
std::vector<std::vector<std::string>> HostRows(
    const LabState& state, const cli::control::ClusterRecord* cluster) {
  const LabConfig config = FromSpec(state.spec());
  std::vector<std::vector<std::string>> rows;
  for (const LabHost& host : LabHosts(config)) {
    std::vector<std::string> daemons;
    if (cluster != nullptr) {
      for (const cli::control::DaemonRecord& d : cluster->daemons) {
        if (d.host != host.name) continue;
        daemons.push_back(absl::StrCat(
            d.name, " pid ", d.pid,
            cli::control::IsRecordedDaemonAlive(d) ? "" : " (exited)"));
      }
    }
    rows.push_back({host.name, host.address, host.netns, RoleText(host),
                    absl::StrJoin(daemons, ", ")});
  }
  return rows;
}

void PrintHosts(const LabState& state,
                const cli::control::ClusterRecord* cluster, std::ostream& out) {
  out << cli::FormatTable({"HOST", "ADDRESS", "NAMESPACE", "RUNS", "DAEMONS"},
                          HostRows(state, cluster));
}

// A header, then one line per row, every cell CsvCell'd.
std::string ToCsv(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows) {
  std::string csv;
  auto line = [&csv](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      absl::StrAppend(&csv, i == 0 ? "" : ",", cli::CsvCell(cells[i]));
    }
    csv += "\n";
  };
  line(header);
  for (const std::vector<std::string>& row : rows) line(row);
  return csv;
}

// -o csv for a verb that prints no rows: a usage error, nothing done.
int RefuseCsv(absl::string_view verb, const CommandEnv& env) {
  return cli::ReportError(env, absl::StrCat("lab ", verb), false,
                          absl::InvalidArgumentError(absl::StrCat(
                              "-o csv is for lab status and lab probe; lab ",
                              verb, " prints table or json")));
}

int Up(const LabOptions& o, const std::string& run_dir, const CommandEnv& env) {
  LabUpOptions up;
  up.run_dir = run_dir;
  up.timeout = o.timeout;
  LabConfig& config = up.config;
  config.prefix = o.prefix.empty() ? std::string(kDefaultPrefix) : o.prefix;
  config.subnet = o.subnet;
  config.worker_hosts = static_cast<int>(o.hosts);
  config.ps_hosts = static_cast<int>(o.ps_hosts);
  config.colocate_ps = o.colocate_ps;
  config.workers_per_host = static_cast<int>(o.workers_per_host);
  config.devices_per_worker = o.devices;
  config.tcp_congestion = o.tcp_congestion;
  config.ps_transport = o.ps_transport;
  config.allow_entrypoints = o.allow_entrypoints;
  absl::StatusOr<int64_t> rate = ParseLinkRate(o.link);
  if (!rate.ok()) return cli::ReportError(env, "lab up", o.json, rate.status());
  config.link.rate_bps = *rate;
  config.link.latency = o.latency;
  config.link.queue = o.queue;
  absl::StatusOr<cli::control::DaemonBinaries> binaries =
      cli::control::FindDaemonBinaries(
          o.binaries, config.ps_hosts > 0 || config.colocate_ps, env);
  if (!binaries.ok()) {
    return cli::ReportError(env, "lab up", o.json, binaries.status());
  }
  up.binaries = {binaries->coordinator, binaries->worker, binaries->ps};
  absl::StatusOr<LabUpResult> result = LabUp(up);
  if (!result.ok()) {
    return cli::ReportError(env, "lab up", o.json, result.status());
  }
  LabState& state = result->state;
  if (!result->already_up && !o.no_probe) {
    ProbeOptions probe;
    probe.tolerance = o.tolerance;
    absl::StatusOr<ProbeReport> report = ProbeLab(config, probe);
    if (report.ok()) {
      *state.mutable_probe() = *report;
      if (absl::Status s = WriteLabState(run_dir, state); !s.ok()) {
        return cli::ReportError(env, "lab up", o.json, s);
      }
    } else {
      *env.err << "gradsync lab up: the link probe failed: "
               << report.status().message() << "\n";
    }
  }
  if (o.json) {
    *env.out << LabJson(state) << "\n";
    return kExitOk;
  }
  const int hosts = 1 + state.spec().worker_hosts() + state.spec().ps_hosts();
  *env.out << (result->already_up ? "the lab is already up in " : "lab up in ")
           << run_dir << ": " << hosts << " hosts on "
           << BridgeName(state.spec().prefix()) << " (" << state.spec().subnet()
           << ".0/24), links " << LinkText(state.spec().link())
           << PsTransportText(state.spec()) << "\n";
  PrintHosts(state, &result->cluster, *env.out);
  *env.out << FormatProbeSummary(state.probe()) << "\n"
           << "stop it with: gradsync lab down --run-dir " << run_dir << "\n"
           << "export GRADSYNC_COORDINATOR=" << state.coordinator() << "\n";
  if (state.spec().allow_entrypoints()) {
    *env.out << "export GRADSYNC_TOKEN_FILE=" << run_dir << "/"
             << cli::control::kUserTokenFileName << "\n";
  }
  return kExitOk;
}

int Down(const LabOptions& o, const std::string& run_dir,
         const CommandEnv& env) {
  absl::StatusOr<LabDownResult> down =
      LabDown(run_dir, o.prefix, absl::Seconds(10));
  if (!down.ok()) {
    return cli::ReportError(env, "lab down", o.json, down.status());
  }
  if (o.json) {
    *env.out << "{\"hadState\":" << (down->had_state ? "true" : "false")
             << ",\"stopped\":" << down->stopped.size()
             << ",\"namespaces\":" << down->removed.netns.size() << "}\n";
    return kExitOk;
  }
  if (!down->had_state && down->removed.empty() && down->stopped.empty()) {
    *env.out << "no lab in " << run_dir << " and none with prefix "
             << (o.prefix.empty() ? std::string(kDefaultPrefix) : o.prefix)
             << "; nothing to do\n";
    return kExitOk;
  }
  *env.out << "lab down: stopped " << down->stopped.size() << " daemons"
           << (down->killed.empty()
                   ? ""
                   : absl::StrCat(" (killed ",
                                  absl::StrJoin(down->killed, ", "), ")"))
           << (down->strays.empty()
                   ? ""
                   : absl::StrCat(", and ", down->strays.size(),
                                  " other processes in the lab"))
           << "; removed " << down->removed.netns.size()
           << " namespaces, their veths and qdiscs, and the bridge\n";
  return kExitOk;
}

int Status(const LabOptions& o, const std::string& run_dir,
           const CommandEnv& env) {
  absl::StatusOr<std::optional<LabState>> state = ReadLabState(run_dir);
  if (!state.ok()) {
    return cli::ReportError(env, "lab status", o.json, state.status());
  }
  if (!state->has_value()) {
    return cli::ReportError(
        env, "lab status", o.json,
        absl::NotFoundError(absl::StrCat("no lab in ", run_dir,
                                         "; start one with gradsync lab up")));
  }
  if (o.json) {
    *env.out << LabJson(**state) << "\n";
    return kExitOk;
  }
  absl::StatusOr<std::optional<cli::control::ClusterRecord>> cluster =
      cli::control::ReadClusterRecord(run_dir);
  const cli::control::ClusterRecord* record =
      cluster.ok() && cluster->has_value() ? &**cluster : nullptr;
  if (o.output == "csv") {
    *env.out << ToCsv({"host", "address", "netns", "runs", "daemons"},
                      HostRows(**state, record));
    return kExitOk;
  }
  *env.out << "lab in " << run_dir << ", coordinator at "
           << (*state)->coordinator() << "; links "
           << LinkText((*state)->spec().link())
           << PsTransportText((*state)->spec()) << "\n";
  PrintHosts(**state, record, *env.out);
  *env.out << FormatProbeSummary((*state)->probe()) << "\n";
  return kExitOk;
}

int Probe(const LabOptions& o, const std::string& run_dir,
          const CommandEnv& env) {
  absl::StatusOr<std::optional<LabState>> state = ReadLabState(run_dir);
  if (!state.ok() || !state->has_value()) {
    return cli::ReportError(
        env, "lab probe", o.json,
        state.ok() ? absl::FailedPreconditionError(absl::StrCat(
                         "no lab in ", run_dir, "; start one with lab up"))
                   : state.status());
  }
  ProbeOptions options;
  options.pairs = o.pairs == "all" ? ProbePairs::kAll : ProbePairs::kRing;
  options.duration = o.duration;
  options.tolerance = o.tolerance;
  absl::StatusOr<ProbeReport> report =
      ProbeLab(FromSpec((*state)->spec()), options);
  if (!report.ok()) {
    return cli::ReportError(env, "lab probe", o.json, report.status());
  }
  *(*state)->mutable_probe() = *report;
  if (absl::Status s = WriteLabState(run_dir, **state); !s.ok()) {
    return cli::ReportError(env, "lab probe", o.json, s);
  }
  if (o.json) {
    *env.out << LabJson(*report) << "\n";
  } else if (o.output == "csv") {
    std::vector<std::vector<std::string>> rows;
    for (const PairProbe& p : report->pairs()) {
      rows.push_back(
          {p.from(), p.to(), absl::StrFormat("%.0f", p.goodput_bps()),
           absl::StrFormat("%.0f", p.expected_bps()),
           absl::StrFormat("%.0f", p.rtt_us()), p.ok() ? "true" : "false"});
    }
    *env.out << ToCsv(
        {"from", "to", "goodput_bps", "expected_bps", "rtt_us", "ok"}, rows);
  } else {
    std::vector<std::vector<std::string>> rows;
    for (const PairProbe& p : report->pairs()) {
      rows.push_back(
          {absl::StrCat(p.from(), " -> ", p.to()),
           absl::StrFormat("%.1f", p.goodput_bps() / 1e6),
           absl::StrFormat("%.1f", p.expected_bps() / 1e6),
           absl::StrFormat("%+.1f%%",
                           100 * (p.goodput_bps() / p.expected_bps() - 1)),
           absl::StrFormat("%.0f", p.rtt_us()), p.ok() ? "ok" : "OFF"});
    }
    *env.out << cli::FormatTable({"PAIR", "GOODPUT Mbit/s", "EXPECTED", "MISS",
                                  "RTT us", ""},
                                 rows)
             << FormatProbeSummary(*report) << "\n";
  }
  return report->ok() ? kExitOk : kExitFailure;
}

int SetLink(const LabOptions& o, const std::string& run_dir,
            const CommandEnv& env) {
  absl::StatusOr<int64_t> rate = ParseLinkRate(o.link);
  if (!rate.ok()) {
    return cli::ReportError(env, "lab set-link", o.json, rate.status());
  }
  LinkSettings link{*rate, o.latency, o.queue};
  absl::StatusOr<LabState> state = SetLabLink(run_dir, link, absl::Seconds(10));
  if (!state.ok()) {
    return cli::ReportError(env, "lab set-link", o.json, state.status());
  }
  // The coordinator's model must see the new links (--mode auto).
  cli::control::CommonOptions common;
  common.coordinator = state->coordinator();
  std::unique_ptr<cli::control::ControlClient> client =
      cli::control::MakeClient(common, env);
  if (absl::Status s = TellCoordinatorLinks(*client, link); !s.ok()) {
    return cli::ReportError(env, "lab set-link", o.json, s);
  }
  if (o.json) {
    *env.out << "{\"rateBps\":" << link.rate_bps
             << ",\"latencyUs\":" << absl::ToInt64Microseconds(link.latency)
             << ",\"queueUs\":" << absl::ToInt64Microseconds(link.queue)
             << "}\n";
    return kExitOk;
  }
  *env.out << "every link now " << DescribeLinkRate(link.rate_bps)
           << " each way (the coordinator's model too); probe it again with "
              "gradsync lab probe\n";
  return kExitOk;
}

}  // namespace

int RunLab(const std::vector<std::string>& args, const CommandEnv& env) {
  if (!args.empty() && (args.front() == "sweep" || args.front() == "report" ||
                        args.front() == "calibrate")) {
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (args.front() == "calibrate") return RunLabCalibrate(rest, env);
    return args.front() == "sweep" ? RunLabSweep(rest, env)
                                   : RunLabReport(rest, env);
  }
  LabOptions options;
  std::vector<FlagSpec> flags = Flags(&options);
  if (env.flag_table != nullptr) {
    *env.flag_table = std::move(flags);
    return cli::kExitOk;
  }
  absl::StatusOr<std::vector<std::string>> positional = ParseFlags(args, flags);
  if (!positional.ok()) {
    return cli::ReportUsageError(env, "lab", args, positional.status());
  }
  if (options.help) {
    *env.out << kUsage << "\nflags:\n" << FlagsHelp(flags, env.terminal_width);
    return kExitOk;
  }
  const std::string run_dir = ResolveLabDir(options.run_dir, env);
  const std::string verb = positional->size() == 1 ? (*positional)[0] : "";
  options.json = options.output == "json";
  if (options.output == "csv" &&
      (verb == "up" || verb == "down" || verb == "set-link")) {
    return RefuseCsv(verb, env);
  }
  if (verb == "up") return Up(options, run_dir, env);
  if (verb == "down") return Down(options, run_dir, env);
  if (verb == "status") return Status(options, run_dir, env);
  if (verb == "probe") return Probe(options, run_dir, env);
  if (verb == "set-link") return SetLink(options, run_dir, env);
  return cli::ReportUsageError(
      env, "lab", args,
      absl::InvalidArgumentError(
          "say up, down, status, probe, set-link, sweep, report or "
          "calibrate (gradsync lab --help)"));
}

std::string ResolveLabDir(const std::string& flag, const CommandEnv& env) {
  return cli::control::ResolveRunDir(
      flag, env.lab_dir_env.empty() ? ".lab" : env.lab_dir_env, env.cwd);
}

int LabMain(const std::vector<std::string>& args) {
  return RunLab(args, cli::ProcessCommandEnv());
}

}  // namespace lab
}  // namespace gradsync
