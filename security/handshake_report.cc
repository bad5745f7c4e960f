#include "security/handshake_report.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace gradsync {
namespace {

// What a daemon's and a user's copy of the TLS directory hold (tls_dir.h).
constexpr absl::string_view kTlsFiles =
    "ca.pem, node.pem and node.key; for the CLI ca.pem, client.pem and "
    "client.key";

// " (OpenSSL: certificate verify failed)", or "" without a reason.
std::string OpenSslNote(absl::string_view detail) {
  return detail.empty() ? "" : absl::StrCat(" (OpenSSL: ", detail, ")");
}

// "minute", "5 minutes", "10 s": the period in words.
std::string PeriodWords(absl::Duration period) {
  const int64_t minutes = absl::ToInt64Minutes(period);
  if (minutes >= 1 && period == absl::Minutes(minutes)) {
    return minutes == 1 ? "minute" : absl::StrCat(minutes, " minutes");
  }
  return absl::FormatDuration(period);
}

}  // namespace

RefusalCause TlsFailureCause(absl::string_view grpc_line) {
  const std::string reason = absl::AsciiStrToLower(TlsFailureReason(grpc_line));
  if (absl::StrContains(reason, "certificate verify failed")) {
    return RefusalCause::kUntrustedCertificate;
  }
  if (absl::StrContains(reason, "did not return a certificate")) {
    return RefusalCause::kNoCertificate;
  }
  // An alert the client sent: what it thinks of this server's
  // certificate.
  if (absl::StrContains(reason, "alert") &&
      (absl::StrContains(reason, "unknown ca") ||
       absl::StrContains(reason, "certificate"))) {
    return RefusalCause::kRefusedOurCertificate;
  }
  if (absl::StrContains(reason, "wrong version number") ||
      absl::StrContains(reason, "http request") ||
      absl::StrContains(reason, "packet length too long")) {
    return RefusalCause::kNotTls;
  }
  return RefusalCause::kOtherTlsFailure;
}

std::string TlsFailureReason(absl::string_view grpc_line) {
  // "... SSL_ERROR_SSL: error:0A000086:SSL routines::certificate verify
  // failed." (OpenSSL 3) or "...:SSL routines:ssl3_get_record:wrong
  // version number." (1.1): the reason follows the last colon.
  absl::string_view line = absl::StripAsciiWhitespace(grpc_line);
  line = absl::StripSuffix(line, ".");
  const size_t routines = line.find("routines:");
  if (routines == absl::string_view::npos) return std::string(line);
  const size_t colon = line.rfind(':');
  return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
}

std::string DescribeRefusal(absl::string_view server,
                            const RefusalReport& report) {
  const std::string& peer = report.peer;
  switch (report.cause) {
    case RefusalCause::kPlaintextGrpc:
      return absl::StrCat(
          "refused plaintext gRPC from ", peer, ": this ", server,
          " serves mutual TLS only; start that daemon or CLI with --tls-dir "
          "on a copy of this cluster's TLS files (",
          kTlsFiles, "), not --insecure");
    case RefusalCause::kNotTls:
      return absl::StrCat(
          "refused a connection from ", peer, " that spoke no TLS",
          report.detail.empty()
              ? ""
              : absl::StrCat(" (it began \"", report.detail, "\")"),
          ": this ", server,
          " serves mutual TLS only; a gradsync daemon or CLI there needs "
          "--tls-dir on a copy of this cluster's TLS files (",
          kTlsFiles, "); anything else is pointed at the wrong port");
    case RefusalCause::kTlsAtPlaintext:
      return absl::StrCat(
          "refused a TLS handshake from ", peer, ": this ", server,
          " runs plaintext (no --tls-dir); start it with --tls-dir on this "
          "cluster's TLS files, or that daemon or CLI with --insecure");
    case RefusalCause::kUntrustedCertificate:
      return absl::StrCat(
          "TLS handshake with ", peer, " at this ", server,
          " failed: it presented a certificate this cluster's CA did not "
          "sign, likely one of another CA",
          OpenSslNote(report.detail),
          "; copy this cluster's TLS files to that host (", kTlsFiles,
          ") and restart it with --tls-dir on them");
    case RefusalCause::kNoCertificate:
      return absl::StrCat(
          "TLS handshake with ", peer, " at this ", server,
          " failed: it presented no certificate", OpenSslNote(report.detail),
          "; start that daemon or CLI with --tls-dir on a copy of this "
          "cluster's TLS files (",
          kTlsFiles, ")");
    case RefusalCause::kRefusedOurCertificate:
      return absl::StrCat(
          "TLS handshake with ", peer, " at this ", server,
          " failed: it refused this ", server, "'s certificate",
          report.detail.empty() ? " (it hung up on it)"
                                : OpenSslNote(report.detail),
          ", likely trusting another cluster's CA; copy this cluster's TLS "
          "files to that host (",
          kTlsFiles, ") and restart it with --tls-dir on them");
    case RefusalCause::kOtherTlsFailure:
      break;
  }
  return absl::StrCat(
      "TLS handshake with ", peer, " at this ", server, " failed",
      OpenSslNote(report.detail),
      "; check that it runs with --tls-dir on a copy of this cluster's TLS "
      "files (the same ca.pem) and that its certificate is current");
}

ReportLimiter::ReportLimiter(absl::Duration period, size_t max_keys)
    : period_(period), max_keys_(std::max<size_t>(max_keys, 1)) {}

bool ReportLimiter::Admit(absl::string_view key, absl::Time now,
                          int64_t* held_back) {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    // Full: the newcomer shares the count of every key past the bound.
    if (entries_.size() >= max_keys_) {
      key = kManyPeers;
      it = entries_.find(key);
    }
  }
  if (it == entries_.end()) {
    entries_.emplace(std::string(key), Entry{now, 0});
    *held_back = 0;
    return true;
  }
  Entry& entry = it->second;
  if (now - entry.start >= period_) {
    *held_back = entry.held_back;
    entry = Entry{now, 0};
    return true;
  }
  ++entry.held_back;
  return false;
}

std::vector<std::pair<std::string, int64_t>> ReportLimiter::Flush(
    absl::Time now) {
  std::vector<std::pair<std::string, int64_t>> ended;
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto current = it++;
    if (now - current->second.start < period_) continue;
    if (current->second.held_back > 0) {
      ended.emplace_back(current->first, current->second.held_back);
    }
    entries_.erase(current);
  }
  std::sort(ended.begin(), ended.end());
  return ended;
}

absl::Time ReportLimiter::NextFlush() const {
  absl::Time next = absl::InfiniteFuture();
  for (const auto& [key, entry] : entries_) {
    if (entry.held_back > 0) next = std::min(next, entry.start + period_);
  }
  return next;
}

std::string HeldBackSuffix(absl::string_view key, int64_t held_back,
                           absl::Duration period) {
  if (held_back <= 0) return "";
  return absl::StrCat(" (and ", held_back, " more from ", key, " in the ",
                      PeriodWords(period), " before, not shown)");
}

std::string HeldBackLine(absl::string_view key, int64_t held_back,
                         absl::Duration period) {
  return absl::StrCat(held_back, " more connection", held_back == 1 ? "" : "s",
                      " from ", key, " refused in the last ",
                      PeriodWords(period), ", as said above");
}

}  // namespace gradsync
