#include "cli/lab/lab_config.h"

#include <cctype>
#include <cmath>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace gradsync {
namespace lab {
namespace {

constexpr int kMaxPrefix = 8;
// .1 .. .253 for hosts; .254 is the bridge.
constexpr int kMaxHosts = 253;

bool IsOctet(absl::string_view text) {
  int value = 0;
  return !text.empty() && text.size() <= 3 &&
         std::all_of(text.begin(), text.end(),
                     [](char c) { return c >= '0' && c <= '9'; }) &&
         absl::SimpleAtoi(text, &value) && value <= 255;
}

LabHost MakeHost(const LabConfig& config, std::string name, HostRole role,
                 int number) {
  LabHost host;
  host.netns = absl::StrCat(config.prefix, "-", name);
  host.veth = host.netns;
  host.name = std::move(name);
  host.role = role;
  host.address = absl::StrCat(config.subnet, ".", number);
  return host;
}

}  // namespace

absl::Status ValidateLabConfig(const LabConfig& config) {
  const std::string& p = config.prefix;
  if (p.empty() || p.size() > kMaxPrefix || !absl::ascii_islower(p[0]) ||
      !std::all_of(p.begin(), p.end(), [](char c) {
        return absl::ascii_islower(c) || absl::ascii_isdigit(c);
      })) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--prefix '", p, "': use 1 to ", kMaxPrefix,
        " lower-case letters and digits, starting with a letter (it starts "
        "every namespace and interface name, which must fit 15 characters)"));
  }
  const std::vector<absl::string_view> octets =
      absl::StrSplit(config.subnet, '.');
  if (octets.size() != 3 ||
      !std::all_of(octets.begin(), octets.end(), IsOctet)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--subnet '", config.subnet,
                     "': give the first three octets of a /24, e.g. 10.77.0"));
  }
  if (config.worker_hosts < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--hosts ", config.worker_hosts,
                     ": the lab needs at least one worker host"));
  }
  if (config.ps_hosts < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--ps-hosts ", config.ps_hosts, " is negative"));
  }
  if (1 + config.worker_hosts + config.ps_hosts > kMaxHosts) {
    return absl::InvalidArgumentError(absl::StrCat(
        "1 + ", config.worker_hosts, " + ", config.ps_hosts,
        " hosts do not fit one /24 subnet (at most ", kMaxHosts, ")"));
  }
  if (config.workers_per_host < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--workers-per-host ", config.workers_per_host,
                     ": each worker host runs at least one worker"));
  }
  if (config.devices_per_worker.empty()) {
    return absl::InvalidArgumentError("--devices-per-worker is empty");
  }
  if (config.link.rate_bps < 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--link ", config.link.rate_bps,
                     " bit/s: the rate must be at least 1kbit"));
  }
  if (config.link.queue <= absl::ZeroDuration() ||
      config.link.queue > absl::Seconds(10)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--queue ", absl::FormatDuration(config.link.queue),
                     ": the switch buffer must hold between 0 and 10 s of "
                     "traffic"));
  }
  if (config.link.latency < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--latency ", absl::FormatDuration(config.link.latency),
                     " is negative"));
  }
  return absl::OkStatus();
}

std::vector<LabHost> LabHosts(const LabConfig& config) {
  std::vector<LabHost> hosts;
  int number = 1;
  hosts.push_back(MakeHost(config, "head", HostRole::kHead, number++));
  for (int i = 1; i <= config.worker_hosts; ++i) {
    LabHost host =
        MakeHost(config, absl::StrCat("w", i), HostRole::kWorker, number++);
    host.workers = config.workers_per_host;
    host.servers = config.colocate_ps ? 1 : 0;
    hosts.push_back(std::move(host));
  }
  for (int i = 1; i <= config.ps_hosts; ++i) {
    LabHost host =
        MakeHost(config, absl::StrCat("s", i), HostRole::kServer, number++);
    host.servers = 1;
    hosts.push_back(std::move(host));
  }
  return hosts;
}

std::string BridgeName(absl::string_view prefix) {
  return absl::StrCat(prefix, "-br");
}

std::string BridgeAddress(absl::string_view subnet) {
  return absl::StrCat(subnet, ".254");
}

absl::StatusOr<int64_t> ParseLinkRate(absl::string_view text) {
  std::string lower = absl::AsciiStrToLower(text);
  absl::string_view rest = lower;
  absl::ConsumeSuffix(&rest, "bit");
  double multiplier = 1;
  if (!rest.empty()) {
    switch (rest.back()) {
      case 'k':
        multiplier = 1e3;
        break;
      case 'm':
        multiplier = 1e6;
        break;
      case 'g':
        multiplier = 1e9;
        break;
      default:
        break;
    }
    if (multiplier != 1) rest.remove_suffix(1);
  }
  double value = 0;
  if (rest.empty() || !absl::SimpleAtod(rest, &value) ||
      !std::isfinite(value) || value * multiplier < 1000 ||
      value * multiplier > 1e15) {
    return absl::InvalidArgumentError(absl::StrCat(
        "link rate '", text,
        "': give bits per second as tc does, e.g. 1gbit, 500mbit, 100mbit "
        "(or 1g, 500m), at least 1kbit"));
  }
  return static_cast<int64_t>(std::llround(value * multiplier));
}

std::string FormatLinkRate(int64_t rate_bps) {
  if (rate_bps % 1'000'000'000 == 0) {
    return absl::StrCat(rate_bps / 1'000'000'000, "gbit");
  }
  if (rate_bps % 1'000'000 == 0) {
    return absl::StrCat(rate_bps / 1'000'000, "mbit");
  }
  if (rate_bps % 1'000 == 0) return absl::StrCat(rate_bps / 1'000, "kbit");
  return absl::StrCat(rate_bps, "bit");
}

std::string DescribeLinkRate(int64_t rate_bps) {
  if (rate_bps >= 1'000'000'000) {
    return absl::StrFormat("%g Gbit/s", rate_bps / 1e9);
  }
  if (rate_bps >= 1'000'000) {
    return absl::StrFormat("%g Mbit/s", rate_bps / 1e6);
  }
  return absl::StrFormat("%g kbit/s", rate_bps / 1e3);
}

}  // namespace lab
}  // namespace gradsync
