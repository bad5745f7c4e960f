// What a daemon says about a connection its gRPC port turned away before
// any call: who (the peer's address), why (plaintext against TLS, a
// certificate of another CA, ...) and what the operator should do about
// it, at most one line per peer host per period. GrpcListener
// (grpc_listener.h) finds the refusals; this file words and limits them.
//
//   RefusalReport report{RefusalCause::kPlaintextGrpc, "10.0.0.5:41234",
//                        "10.0.0.5", ""};
//   std::string line = DescribeRefusal("coordinator", report);
//   // "refused plaintext gRPC from 10.0.0.5:41234: this coordinator
//   //  serves mutual TLS; start that daemon (or CLI) with --tls-dir ..."
//
// Pure functions; ReportLimiter is thread-compatible (one owner).
#ifndef GRADSYNC_SECURITY_HANDSHAKE_REPORT_H_
#define GRADSYNC_SECURITY_HANDSHAKE_REPORT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gradsync {

// Why a connection was turned away.
enum class RefusalCause {
  kPlaintextGrpc,          // an HTTP/2 preface at a TLS port
  kNotTls,                 // other bytes at a TLS port (HTTP/1, a scanner)
  kTlsAtPlaintext,         // a TLS ClientHello at a plaintext port
  kUntrustedCertificate,   // a client certificate the cluster CA did not sign
  kNoCertificate,          // a TLS client that presented no certificate
  kRefusedOurCertificate,  // the client refused this server's certificate
  kOtherTlsFailure,        // any other failed TLS handshake
};

// One refused connection (or, when two closed at the same moment and the
// cause cannot be pinned on one, several: `peer` then says "one of ...").
struct RefusalReport {
  RefusalCause cause = RefusalCause::kOtherTlsFailure;
  std::string peer;    // "10.0.0.5:41234", "[::1]:5000", "one of A or B"
  std::string host;    // what the limiter counts by: "10.0.0.5"
  std::string detail;  // OpenSSL's reason, or the first bytes sent
};

// The cause of a TLS handshake failure from OpenSSL's reason in gRPC's
// "Handshake failed with fatal error SSL_ERROR_SSL: error:0A000086:SSL
// routines::certificate verify failed." line: kUntrustedCertificate,
// kNoCertificate, kNotTls ("wrong version number", "http request": the
// client spoke no TLS), kRefusedOurCertificate (the client's alert: "tlsv1
// alert unknown ca", "sslv3 alert bad certificate"), else
// kOtherTlsFailure.
RefusalCause TlsFailureCause(absl::string_view grpc_line);

// OpenSSL's reason in such a line ("certificate verify failed"), or the
// line itself when it has none.
std::string TlsFailureReason(absl::string_view grpc_line);

// The line for `report` at `server`'s port ("coordinator", "parameter
// server"): the peer, the likely cause and what to do.
std::string DescribeRefusal(absl::string_view server,
                            const RefusalReport& report);

// At most one line per key (a peer host) per `period`. Lines held back are
// counted: the next line for the key says how many, and Flush reports the
// count of a period that ended without one. Keys beyond `max_keys` share
// one count (kManyPeers), so memory stays bounded whoever connects.
class ReportLimiter {
 public:
  static constexpr absl::string_view kManyPeers = "other peers";

  ReportLimiter(absl::Duration period, size_t max_keys);

  // Whether to say a line for `key` at `now`. When it returns true,
  // `*held_back` is the number of lines held back for the key in the
  // period before (0 for a new key).
  bool Admit(absl::string_view key, absl::Time now, int64_t* held_back);

  // The keys whose period ended by `now` with lines held back, with their
  // counts; forgets every key whose period ended.
  std::vector<std::pair<std::string, int64_t>> Flush(absl::Time now);

  // When Flush next has something to say: InfiniteFuture if nothing is
  // held back.
  absl::Time NextFlush() const;

  absl::Duration period() const { return period_; }

 private:
  struct Entry {
    absl::Time start;  // of the key's current period
    int64_t held_back = 0;
  };
  const absl::Duration period_;
  const size_t max_keys_;
  absl::flat_hash_map<std::string, Entry> entries_;
};

// The suffix for a line said after `held_back` were held back ("" for 0):
// " (and 57 more from 10.0.0.5 in the minute before, not shown)".
std::string HeldBackSuffix(absl::string_view key, int64_t held_back,
                           absl::Duration period);

// The line for a period that ended with lines held back: "57 more
// connections from 10.0.0.5 refused in the last minute, as above".
std::string HeldBackLine(absl::string_view key, int64_t held_back,
                         absl::Duration period);

}  // namespace gradsync

#endif  // GRADSYNC_SECURITY_HANDSHAKE_REPORT_H_
