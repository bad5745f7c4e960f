// `gradsync version`: this client's version and wire version, and the
// coordinator's (from its ListWorkers answer), so that an operator sees at
// once whether the two builds can talk.
//
//   client:      gradsync 0.1.0 (wire version 2)
//   coordinator: gradsync-coordinator 0.1.0 (wire version 2) at HOST:PORT
//
// Exit status: 0 when the coordinator answered with this client's wire
// version (or with --client, which asks nothing); 1 when it could not be
// reached (the client's line is printed all the same) or speaks another
// wire version; 2 for a bad command line. `gradsync --version` stays the
// one line every binary prints (common/flags.h VersionLine).
#ifndef GRADSYNC_CLI_CONTROL_VERSION_COMMAND_H_
#define GRADSYNC_CLI_CONTROL_VERSION_COMMAND_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cli/framework/command_env.h"

namespace gradsync {
namespace cli {
namespace control {

// What `gradsync version` learned.
struct VersionReport {
  std::string client_version;  // common/version.h
  int32_t client_wire = 0;
  bool asked = false;  // false: --client
  std::string address;
  bool reached = false;
  std::string error;           // when not reached
  std::string server_version;  // "": a coordinator too old to say
  int32_t server_wire = 0;
  // Where the coordinator says it is reached (its --advertise, or its
  // default); "": not said.
  std::string advertised;
};

// The report as text or (json) one JSON line; pure.
std::string FormatVersionReport(const VersionReport& report, bool json);

int RunVersion(const std::vector<std::string>& args, const CommandEnv& env);
int VersionMain(const std::vector<std::string>& args);

}  // namespace control
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_CONTROL_VERSION_COMMAND_H_
