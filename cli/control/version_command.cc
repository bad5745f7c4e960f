#include "cli/control/version_command.h"

#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cli/control/command_common.h"
#include "cli/control/control_client.h"
#include "common/json.h"
#include "common/version.h"
#include "common/wire_version.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

constexpr char kVersionUsage[] =
    "usage: gradsync version [--client] [flags]\n\n"
    "This client's version and wire version, and the coordinator's. Exit 0\n"
    "when the coordinator answered with the same wire version (or with\n"
    "--client, which does not ask it); 1 when it could not be reached or\n"
    "speaks another wire version.\n";

bool WireMismatch(const VersionReport& r) {
  return r.reached && r.server_wire != 0 && r.server_wire != r.client_wire;
}

}  // namespace

std::string FormatVersionReport(const VersionReport& r, bool json) {
  if (json) {
    std::string out =
        absl::StrCat("{\"client\":{\"version\":", JsonQuote(r.client_version),
                     ",\"wireVersion\":", r.client_wire, "}");
    if (r.asked) {
      absl::StrAppend(&out,
                      ",\"coordinator\":{\"address\":", JsonQuote(r.address),
                      ",\"reachable\":", r.reached ? "true" : "false");
      if (r.reached) {
        absl::StrAppend(&out, ",\"version\":", JsonQuote(r.server_version),
                        ",\"wireVersion\":", r.server_wire,
                        ",\"advertised\":", JsonQuote(r.advertised));
      } else {
        absl::StrAppend(&out, ",\"error\":", JsonQuote(r.error));
      }
      absl::StrAppend(&out, "}");
    }
    return absl::StrCat(out, "}\n");
  }
  std::string out = absl::StrCat("client:      gradsync ", r.client_version,
                                 " (wire version ", r.client_wire, ")\n");
  if (!r.asked) return out;
  if (!r.reached) {
    absl::StrAppend(&out, "coordinator: not reachable at ", r.address, ": ",
                    r.error, "\n");
  } else if (r.server_version.empty()) {
    absl::StrAppend(&out, "coordinator: at ", r.address,
                    ", a build too old to report its version\n");
  } else {
    absl::StrAppend(&out, "coordinator: gradsync-coordinator ",
                    r.server_version, " (wire version ", r.server_wire, ") at ",
                    r.address,
                    r.advertised.empty() || r.advertised == r.address
                        ? std::string()
                        : absl::StrCat(", advertised as ", r.advertised),
                    "\n");
  }
  if (WireMismatch(r)) {
    absl::StrAppend(&out, "the client speaks wire version ", r.client_wire,
                    " and the coordinator ", r.server_wire,
                    ": use a gradsync of the coordinator's build\n");
  }
  return out;
}

int RunVersion(const std::vector<std::string>& args, const CommandEnv& env) {
  CommonOptions common;
  bool client_only = false;
  std::vector<FlagSpec> flags = {
      SwitchFlag("client", "this client's version only; ask no coordinator",
                 &client_only)};
  std::vector<std::string> positional;
  if (std::optional<int> done =
          ParseCommand(args, std::move(flags), "version", kVersionUsage, env,
                       &common, &positional)) {
    return *done;
  }
  if (std::optional<int> done =
          ExpectPositional(args, positional, 0, "", "version", env)) {
    return *done;
  }
  VersionReport report;
  report.client_version = Version();
  report.client_wire = kWireVersion;
  report.asked = !client_only;
  if (report.asked) {
    std::unique_ptr<ControlClient> client = MakeClient(common, env);
    report.address = client->address();
    absl::StatusOr<ListWorkersResponse> answer = client->ListWorkers();
    report.reached = answer.ok();
    if (answer.ok()) {
      report.server_version = answer->coordinator_version();
      report.server_wire = answer->coordinator_wire_version();
      report.advertised = answer->coordinator_address();
    } else {
      report.error = std::string(answer.status().message());
    }
  }
  *env.out << FormatVersionReport(report, common.json) << std::flush;
  if (report.asked && (!report.reached || WireMismatch(report))) {
    return kExitFailure;
  }
  return kExitOk;
}

int VersionMain(const std::vector<std::string>& args) {
  return RunVersion(args, ProcessCommandEnv());
}

}  // namespace control
}  // namespace cli
}  // namespace gradsync
