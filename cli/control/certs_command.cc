#include "cli/control/certs_command.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "cli/framework/output_format.h"
#include "common/flags.h"
#include "common/json.h"
#include "security/certs.h"
#include "security/tls_dir.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

constexpr char kCertsUsage[] =
    "usage: gradsync certs init DIR [--days N] [--force]\n\n"
    "Makes a cluster CA and the certificates it signs, for mutual TLS on\n"
    "every gRPC connection (docs/operations.md):\n"
    "  DIR/ca.pem, ca.key        the CA (keep ca.key off the nodes)\n"
    "  DIR/node.pem, node.key    the daemons' (--tls-dir DIR)\n"
    "  DIR/client.pem, client.key  the users' (gradsync --tls-dir DIR, or\n"
    "                            GRADSYNC_TLS_DIR)\n"
    "Keys are written with mode 0600. Existing files are kept unless\n"
    "--force replaces them.\n";

struct CertsOptions {
  int64_t days = 365;
  bool force = false;
  std::string output = "table";  // -o: table or json
  bool json = false;             // output == "json"
  bool help = false;
};

std::vector<FlagSpec> CertsFlags(CertsOptions* o) {
  std::vector<FlagSpec> flags = {
      IntFlag("days",
              absl::StrCat("validity of the CA and certificates, in days "
                           "(365; at most ",
                           kMaxCertificateDays, ")"),
              1, &o->days),
      SwitchFlag("force", "replace certificates and keys already in DIR",
                 &o->force),
  };
  AddOutputFlags(TableOrJson(), &o->output, &flags);
  flags.push_back(HelpFlag(&o->help));
  return flags;
}

int Init(const CertsOptions& o, const std::string& dir, const CommandEnv& env) {
  if (o.days > kMaxCertificateDays) {
    return ReportError(
        env, "certs init", o.json,
        absl::InvalidArgumentError(absl::StrCat(
            "--days ", o.days, " is too long; at most ", kMaxCertificateDays)));
  }
  absl::StatusOr<ClusterCertificates> certs =
      NewClusterCertificates(static_cast<int>(o.days));
  if (!certs.ok())
    return ReportError(env, "certs init", o.json, certs.status());
  if (absl::Status s = WriteTlsDir(dir, *certs, o.force); !s.ok()) {
    return ReportError(env, "certs init", o.json, s);
  }
  absl::StatusOr<CertificateInfo> info =
      InspectCertificate(certs->node.cert_pem);
  const std::string until =
      info.ok()
          ? absl::FormatTime("%Y-%m-%d", info->not_after, absl::UTCTimeZone())
          : "?";
  if (o.json) {
    std::vector<std::string> files;
    for (const std::string& path : TlsDirFiles(dir)) {
      files.push_back(JsonQuote(path));
    }
    *env.out << "{\"dir\":" << JsonQuote(dir)
             << ",\"validUntil\":" << JsonQuote(until) << ",\"files\":["
             << absl::StrJoin(files, ",") << "]}\n";
    env.out->flush();
    return kExitOk;
  }
  *env.out << "wrote a cluster CA and certificates to " << dir
           << " (valid until " << until << "):\n"
           << "  ca.pem ca.key          the CA; keep ca.key off the nodes\n"
           << "  node.pem node.key      daemons: --tls-dir " << dir
           << " (copy ca.pem, node.pem, node.key to every node)\n"
           << "  client.pem client.key  users: export GRADSYNC_TLS_DIR=" << dir
           << " (ca.pem, client.pem, client.key)\n";
  env.out->flush();
  return kExitOk;
}

}  // namespace

int RunCerts(const std::vector<std::string>& args, const CommandEnv& env) {
  CertsOptions options;
  std::vector<FlagSpec> flags = CertsFlags(&options);
  if (env.flag_table != nullptr) {
    *env.flag_table = std::move(flags);
    return kExitOk;
  }
  absl::StatusOr<std::vector<std::string>> positional =
      ParseFlags(args, flags, /*env=*/nullptr);
  if (!positional.ok()) {
    return ReportUsageError(env, "certs", args, positional.status());
  }
  options.json = options.output == "json";
  if (options.help) {
    *env.out << kCertsUsage << "\nflags:\n"
             << FlagsHelp(flags, env.terminal_width);
    return kExitOk;
  }
  if (positional->empty() || (*positional)[0] != "init") {
    return ReportUsageError(
        env, "certs", args,
        absl::InvalidArgumentError(positional->empty()
                                       ? "say `gradsync certs init DIR`"
                                       : absl::StrCat("unknown subcommand '",
                                                      (*positional)[0],
                                                      "'; say init")));
  }
  if (positional->size() != 2) {
    return ReportUsageError(
        env, "certs", args,
        absl::InvalidArgumentError(
            positional->size() < 2
                ? "name the directory: gradsync certs init DIR"
                : absl::StrCat("unexpected argument '", (*positional)[2],
                               "'")));
  }
  return Init(options, (*positional)[1], env);
}

int CertsMain(const std::vector<std::string>& args) {
  return RunCerts(args, ProcessCommandEnv());
}

}  // namespace control
}  // namespace cli
}  // namespace gradsync
