// The words and the rate limit of a refused connection's line
// (security/handshake_report.h): gRPC's handshake-failure lines of OpenSSL 3
// and 1.1 read as their causes (a client's alert: it refused ours); each
// cause's line names the peer and what to do; the limiter says one line
// per key per period, counts the rest, and stays bounded whoever connects.
#include "security/handshake_report.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr char kUntrusted[] =
    "Handshake failed with fatal error SSL_ERROR_SSL: error:0A000086:SSL "
    "routines::certificate verify failed.";
constexpr char kNoCertificate[] =
    "Handshake failed with fatal error SSL_ERROR_SSL: error:0A0000C7:SSL "
    "routines::peer did not return a certificate.";
constexpr char kWrongVersion[] =
    "Handshake failed with fatal error SSL_ERROR_SSL: error:0A00010B:SSL "
    "routines::wrong version number.";
constexpr char kOpenSsl11[] =
    "Handshake failed with fatal error SSL_ERROR_SSL: error:1417C086:SSL "
    "routines:tls_process_client_certificate:certificate verify failed.";
constexpr char kTheirAlert[] =
    "Handshake failed with fatal error SSL_ERROR_SSL: error:0A000418:SSL "
    "routines::tlsv1 alert unknown ca.";
constexpr char kOther[] =
    "Handshake failed with fatal error SSL_ERROR_SSL: error:0A0000C1:SSL "
    "routines::no shared cipher.";

TEST(TlsFailureCauseTest, OpenSslReasons_ReadAsCauses) {
  EXPECT_EQ(TlsFailureCause(kUntrusted), RefusalCause::kUntrustedCertificate);
  EXPECT_EQ(TlsFailureCause(kOpenSsl11), RefusalCause::kUntrustedCertificate);
  EXPECT_EQ(TlsFailureCause(kNoCertificate), RefusalCause::kNoCertificate);
  EXPECT_EQ(TlsFailureCause(kWrongVersion), RefusalCause::kNotTls);
  EXPECT_EQ(TlsFailureCause(kTheirAlert), RefusalCause::kRefusedOurCertificate);
  EXPECT_EQ(TlsFailureCause(kOther), RefusalCause::kOtherTlsFailure);
  EXPECT_EQ(TlsFailureCause("something else"), RefusalCause::kOtherTlsFailure);
}

TEST(TlsFailureCauseTest, Reason_IsOpenSslsWords) {
  EXPECT_EQ(TlsFailureReason(kUntrusted), "certificate verify failed");
  EXPECT_EQ(TlsFailureReason(kOpenSsl11), "certificate verify failed");
  EXPECT_EQ(TlsFailureReason(kTheirAlert), "tlsv1 alert unknown ca");
  EXPECT_EQ(TlsFailureReason(kOther), "no shared cipher");
  EXPECT_EQ(TlsFailureReason("no reason here"), "no reason here");
}

TEST(DescribeRefusalTest, EachCause_NamesPeerCauseAndWhatToDo) {
  struct Case {
    RefusalCause cause;
    std::string detail;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      {RefusalCause::kPlaintextGrpc,
       "",
       {"plaintext gRPC", "serves mutual TLS only", "--tls-dir",
        "not --insecure"}},
      {RefusalCause::kNotTls,
       "GET /metrics",
       {"spoke no TLS", "\"GET /metrics\"", "wrong port"}},
      {RefusalCause::kTlsAtPlaintext,
       "",
       {"TLS handshake", "runs plaintext", "--tls-dir", "--insecure"}},
      {RefusalCause::kUntrustedCertificate,
       "certificate verify failed",
       {"did not sign", "another CA", "OpenSSL: certificate verify failed",
        "copy this cluster's TLS files to that host", "ca.pem, node.pem",
        "client.pem", "--tls-dir"}},
      {RefusalCause::kNoCertificate,
       "peer did not return a certificate",
       {"presented no certificate", "--tls-dir"}},
      {RefusalCause::kRefusedOurCertificate,
       "",
       {"refused this coordinator's certificate", "hung up",
        "another cluster's CA", "copy this cluster's TLS files to that host",
        "--tls-dir"}},
      {RefusalCause::kRefusedOurCertificate,
       "tlsv1 alert unknown ca",
       {"refused this coordinator's certificate",
        "OpenSSL: tlsv1 alert unknown ca"}},
      {RefusalCause::kOtherTlsFailure,
       "no shared cipher",
       {"failed (OpenSSL: no shared cipher)", "the same ca.pem"}},
  };
  for (const Case& c : cases) {
    const std::string line = DescribeRefusal(
        "coordinator", {c.cause, "10.0.0.5:41234", "10.0.0.5", c.detail});
    EXPECT_THAT(line, HasSubstr("10.0.0.5:41234")) << line;
    EXPECT_THAT(line, HasSubstr("coordinator")) << line;
    for (const std::string& text : c.says) {
      EXPECT_THAT(line, HasSubstr(text)) << line;
    }
  }
}

TEST(ReportLimiterTest, OneLinePerKeyPerPeriod_CountingTheRest) {
  ReportLimiter limiter(absl::Minutes(1), 16);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  int64_t held_back = -1;
  EXPECT_TRUE(limiter.Admit("10.0.0.5", t0, &held_back));
  EXPECT_EQ(held_back, 0);
  for (int i = 1; i <= 99; ++i) {
    EXPECT_FALSE(
        limiter.Admit("10.0.0.5", t0 + absl::Milliseconds(i), &held_back));
  }
  // Another host has its own budget.
  EXPECT_TRUE(limiter.Admit("10.0.0.6", t0 + absl::Seconds(1), &held_back));
  EXPECT_EQ(held_back, 0);
  EXPECT_EQ(limiter.NextFlush(), t0 + absl::Minutes(1));
  // A minute on, the next line says how many were held back.
  EXPECT_TRUE(limiter.Admit("10.0.0.5", t0 + absl::Minutes(1), &held_back));
  EXPECT_EQ(held_back, 99);
  EXPECT_THAT(HeldBackSuffix("10.0.0.5", 99, absl::Minutes(1)),
              HasSubstr("and 99 more from 10.0.0.5 in the minute before"));
  EXPECT_EQ(HeldBackSuffix("10.0.0.5", 0, absl::Minutes(1)), "");
}

TEST(ReportLimiterTest, Flush_SaysTheCountOfAPeriodThatEndedQuietly) {
  ReportLimiter limiter(absl::Seconds(10), 16);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  int64_t held_back = 0;
  ASSERT_TRUE(limiter.Admit("a", t0, &held_back));
  ASSERT_FALSE(limiter.Admit("a", t0 + absl::Seconds(1), &held_back));
  ASSERT_FALSE(limiter.Admit("a", t0 + absl::Seconds(2), &held_back));
  ASSERT_TRUE(limiter.Admit("b", t0, &held_back));  // nothing held back
  EXPECT_THAT(limiter.Flush(t0 + absl::Seconds(9)), ::testing::IsEmpty());
  EXPECT_THAT(limiter.Flush(t0 + absl::Seconds(10)), ElementsAre(Pair("a", 2)));
  // Said and forgotten: nothing more, and the next line is a fresh start.
  EXPECT_THAT(limiter.Flush(t0 + absl::Seconds(30)), ::testing::IsEmpty());
  EXPECT_EQ(limiter.NextFlush(), absl::InfiniteFuture());
  EXPECT_TRUE(limiter.Admit("a", t0 + absl::Seconds(31), &held_back));
  EXPECT_EQ(held_back, 0);
  EXPECT_THAT(
      HeldBackLine("a", 2, absl::Seconds(10)),
      AllOf(HasSubstr("2 more connections from a refused"), HasSubstr("10s")));
}

TEST(ReportLimiterTest, PastMaxKeys_NewcomersShareOneCount) {
  ReportLimiter limiter(absl::Minutes(1), 4);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  int64_t held_back = 0;
  int said = 0;
  for (int i = 0; i < 1000; ++i) {
    said += limiter.Admit(absl::StrCat("10.0.", i / 256, ".", i % 256), t0,
                          &held_back);
  }
  // Four hosts of their own, one line for all the others.
  EXPECT_EQ(said, 5);
  EXPECT_THAT(limiter.Flush(t0 + absl::Minutes(1)),
              ElementsAre(Pair(std::string(ReportLimiter::kManyPeers), 995)));
}

}  // namespace
}  // namespace gradsync
