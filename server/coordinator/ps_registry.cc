#include "server/coordinator/ps_registry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/host.h"
#include "common/status_macros.h"
#include "common/wire_version.h"
#include "security/secret.h"
#include "server/coordinator/worker_registry.h"

namespace gradsync {
namespace {

constexpr absl::string_view kPsIdPrefix = "ps-";

[[nodiscard]] absl::Status InvalidRegistration(
    const RegisterParameterServerRequest& request, absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("cannot register parameter server (host '", request.host(),
                   "', pid ", request.pid(), "): ", problem));
}

}  // namespace

absl::StatusOr<const PsRecord*> PsRegistry::Register(
    const RegisterParameterServerRequest& request, absl::Time now) {
  RETURN_IF_ERROR(
      CheckWireVersion(request.wire_version(),
                       absl::StrCat("parameter server (host '", request.host(),
                                    "', pid ", request.pid(), ")")));
  if (request.host().empty()) {
    return InvalidRegistration(request,
                               "host is empty; pass the machine's host name");
  }
  if (!IsHostPort(request.address())) {
    return InvalidRegistration(
        request, absl::StrCat("address '", request.address(),
                              "' is not host:port; pass the address ranks "
                              "reach this server on, e.g. 10.0.0.5:29600"));
  }
  if (request.tensor_port() < 0 || request.tensor_port() > 65535) {
    return InvalidRegistration(
        request, absl::StrCat("tensor port ", request.tensor_port(),
                              " is not a port; 1..65535, or 0 for none"));
  }
  const int64_t number = next_number_++;
  PsRecord& server = servers_[number];
  server.id = absl::StrCat(kPsIdPrefix, number);
  server.number = number;
  server.host = request.host();
  server.address = request.address();
  server.pid = request.pid();
  server.tensor_port = request.tensor_port();
  server.last_heartbeat = now;
  server.credential = RandomSecret();
  return &server;
}

absl::Status CheckCredential(const PsRecord& server,
                             absl::string_view credential) {
  return CheckDaemonCredential("parameter server", server.id, server.credential,
                               credential);
}

PsRecord* PsRegistry::Find(absl::string_view id) {
  absl::string_view digits = id;
  int64_t number = 0;
  if (!absl::ConsumePrefix(&digits, kPsIdPrefix) ||
      !absl::SimpleAtoi(digits, &number)) {
    return nullptr;
  }
  auto it = servers_.find(number);
  // SimpleAtoi also accepts "+1" or "01": only the exact id matches.
  if (it == servers_.end() || it->second.id != id) return nullptr;
  return &it->second;
}

const PsRecord* PsRegistry::Find(absl::string_view id) const {
  return const_cast<PsRegistry*>(this)->Find(id);
}

const PsRecord* PsRegistry::FindLiveByAddress(absl::string_view address) const {
  for (const auto& [number, server] : servers_) {
    if (!server.lost && server.address == address) return &server;
  }
  return nullptr;
}

void PsRegistry::Renew(PsRecord& server, absl::Time now) {
  server.last_heartbeat = std::max(server.last_heartbeat, now);
}

std::vector<std::string> PsRegistry::Expired(absl::Time now,
                                             absl::Duration lease) const {
  std::vector<std::string> expired;
  for (const auto& [number, server] : servers_) {
    if (!server.lost &&
        now - std::max(server.last_heartbeat, server.lease_from) > lease) {
      expired.push_back(server.id);
    }
  }
  return expired;
}

void PsRegistry::MarkLost(PsRecord& server, absl::Time now) {
  server.lost = true;
  server.lost_time = now;
}

std::vector<const PsRecord*> PsRegistry::Live() const {
  std::vector<const PsRecord*> live;
  for (const auto& [number, server] : servers_) {
    if (!server.lost) live.push_back(&server);
  }
  return live;
}

std::vector<const PsRecord*> PsRegistry::All() const {
  std::vector<const PsRecord*> all;
  all.reserve(servers_.size());
  for (const auto& [number, server] : servers_) all.push_back(&server);
  return all;
}

std::vector<ProbeServer> PsRegistry::ProbeTargets(
    const std::set<std::string>& probed_hosts) const {
  std::vector<ProbeServer> targets;
  std::set<std::string> hosts = probed_hosts;
  for (const PsRecord* server : Live()) {
    if (server->tensor_port <= 0 || !hosts.insert(server->host).second) {
      continue;
    }
    ProbeServer& target = targets.emplace_back();
    target.set_ps_id(server->id);
    target.set_host(server->host);
    target.set_plane_address(
        absl::StrCat(server->address.substr(0, server->address.rfind(':')), ":",
                     server->tensor_port));
  }
  return targets;
}

ParameterServerInfo PsRegistry::Info(const PsRecord& server) {
  ParameterServerInfo info;
  info.set_ps_id(server.id);
  info.set_host(server.host);
  info.set_address(server.address);
  info.set_tensor_port(server.tensor_port);
  info.set_lost(server.lost);
  info.set_last_heartbeat(UnixTimeSeconds(server.last_heartbeat));
  return info;
}

}  // namespace gradsync
