#include "cli/lab/lab_state.h"

#include <google/protobuf/util/json_util.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace gradsync {
namespace lab {
namespace {

std::string StatePath(const std::string& run_dir) {
  return absl::StrCat(run_dir, "/", kLabStateFile);
}

}  // namespace

LabSpec ToSpec(const LabConfig& config) {
  LabSpec spec;
  spec.set_prefix(config.prefix);
  spec.set_subnet(config.subnet);
  spec.set_worker_hosts(config.worker_hosts);
  spec.set_ps_hosts(config.ps_hosts);
  spec.set_colocate_ps(config.colocate_ps);
  spec.set_workers_per_host(config.workers_per_host);
  spec.set_devices_per_worker(config.devices_per_worker);
  spec.set_tcp_congestion(config.tcp_congestion);
  spec.set_ps_transport(config.ps_transport);
  spec.set_allow_entrypoints(config.allow_entrypoints);
  spec.mutable_link()->set_rate_bps(config.link.rate_bps);
  spec.mutable_link()->set_latency_us(
      absl::ToInt64Microseconds(config.link.latency));
  spec.mutable_link()->set_queue_us(
      absl::ToInt64Microseconds(config.link.queue));
  return spec;
}

LabConfig FromSpec(const LabSpec& spec) {
  LabConfig config;
  config.prefix = spec.prefix();
  config.subnet = spec.subnet();
  config.worker_hosts = spec.worker_hosts();
  config.ps_hosts = spec.ps_hosts();
  config.colocate_ps = spec.colocate_ps();
  config.workers_per_host = spec.workers_per_host();
  config.devices_per_worker = spec.devices_per_worker();
  if (!spec.tcp_congestion().empty()) {
    config.tcp_congestion = spec.tcp_congestion();
  }
  if (!spec.ps_transport().empty()) config.ps_transport = spec.ps_transport();
  config.allow_entrypoints = spec.allow_entrypoints();
  config.link.rate_bps = spec.link().rate_bps();
  config.link.latency = absl::Microseconds(spec.link().latency_us());
  if (spec.link().queue_us() > 0) {
    config.link.queue = absl::Microseconds(spec.link().queue_us());
  }
  return config;
}

std::string LabJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options)
           .ok()) {
    return "{}";
  }
  return json;
}

absl::Status ParseLabJson(const std::string& json, const std::string& source,
                          google::protobuf::Message* message) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto status =
      google::protobuf::util::JsonStringToMessage(json, message, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, " is not a lab record: ", std::string(status.message())));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<LabState>> ReadLabState(
    const std::string& run_dir) {
  const std::string path = StatePath(run_dir);
  struct stat info;
  if (stat(path.c_str(), &info) != 0 && errno == ENOENT) return std::nullopt;
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path));
  }
  std::stringstream text;
  text << in.rdbuf();
  LabState state;
  absl::Status parsed = ParseLabJson(text.str(), path, &state);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(parsed.message(),
                     "; remove it (and run `gradsync lab down --prefix P`) "
                     "if no lab runs from there"));
  }
  return std::optional<LabState>(std::move(state));
}

absl::Status WriteLabState(const std::string& run_dir, const LabState& state) {
  const std::string path = StatePath(run_dir);
  const std::string temp = absl::StrCat(path, ".tmp");
  {
    std::ofstream out(temp, std::ios::trunc);
    out << LabJson(state) << "\n";
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", temp));
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot rename ", temp, " to ", path));
  }
  return absl::OkStatus();
}

void RemoveLabState(const std::string& run_dir) {
  std::remove(StatePath(run_dir).c_str());
}

}  // namespace lab
}  // namespace gradsync
