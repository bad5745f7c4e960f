// Link probes on the PS tensor plane
// (server/ps/transport/tensor_plane_probe.h), on 127.0.0.1: a link-probe job's
// rank, admitted by its job's PS token though the server holds no shard of it,
// times round trips and streams both ways; what a probe may ask is bounded and
// a refusal is named; a connection carries probes or pushes, never both; the
// head's codec refuses what is not a probe.
#include "server/ps/transport/tensor_plane_probe.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/secret.h"
#include "server/ps/daemon/ps_service.h"
#include "server/ps/daemon/tensor_plane_server.h"
#include "server/ps/transport/tensor_plane_client.h"
#include "tests/ps/ps_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::Snapshot;
using ::gradsync::testing::Soon;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

class TensorPlaneProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ShardSpec spec;
    spec.config = testing::ShardConfig(2, 0, 100);
    spec.config.max_wait = absl::Seconds(3);
    spec.num_shards = 1;
    spec.total_elements = 100;
    ASSERT_THAT(service_.CreateShard(spec), IsOk());  // job "job"'s
    service_.RequireTokens();
    service_.SetShardKey("key");
    absl::StatusOr<std::unique_ptr<TensorPlaneServer>> server =
        TensorPlaneServer::Start(&service_, {"127.0.0.1", 0});
    ASSERT_THAT(server, IsOk());
    server_ = *std::move(server);
    address_ = absl::StrCat("127.0.0.1:", server_->port());
  }

  std::unique_ptr<TensorPlaneChannel> Connect(const std::string& job) {
    absl::StatusOr<std::unique_ptr<TensorPlaneChannel>> channel =
        TensorPlaneChannel::Connect(
            address_, "auto", PlaneIdentity{job, 0, PsTokenForJob("key", job)},
            Soon());
    EXPECT_THAT(channel, IsOk());
    return channel.ok() ? *std::move(channel) : nullptr;
  }

  PsService service_;
  std::unique_ptr<TensorPlaneServer> server_;
  std::string address_;
};

TEST_F(TensorPlaneProbeTest, AProbeJobWithoutShards_TimesBothWays) {
  std::unique_ptr<TensorPlaneChannel> channel = Connect("job-probe");
  ASSERT_NE(channel, nullptr);
  absl::StatusOr<RoundTripTimes> times =
      channel->ProbeRoundTrips(7, Soon(), nullptr);
  ASSERT_THAT(times, IsOk());
  EXPECT_EQ(times->count, 7);
  EXPECT_GT(times->min_us, 0);
  EXPECT_GE(times->median_us, times->min_us);
  absl::StatusOr<double> up = channel->ProbeUpload(4 << 20, Soon(), nullptr);
  ASSERT_THAT(up, IsOk());
  EXPECT_GT(*up, 0);
  absl::StatusOr<double> down =
      channel->ProbeDownload(4 << 20, Soon(), nullptr);
  ASSERT_THAT(down, IsOk());
  EXPECT_GT(*down, 0);
  // The ops again, on the same connection, in another order.
  EXPECT_THAT(channel->ProbeDownload(64 << 10, Soon(), nullptr), IsOk());
  EXPECT_THAT(channel->ProbeRoundTrips(1, Soon(), nullptr), IsOk());
  EXPECT_EQ(server_->authenticated_connections(), 1);
}

TEST_F(TensorPlaneProbeTest, OverTheLimits_RefusedNamingThem) {
  std::unique_ptr<TensorPlaneChannel> channel = Connect("job-probe");
  ASSERT_NE(channel, nullptr);
  EXPECT_THAT(
      channel->ProbeUpload(tensor_plane::kMaxProbeBytes + 1, Soon(), nullptr),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("(4 GiB)")));
  channel = Connect("job-probe");
  ASSERT_NE(channel, nullptr);
  EXPECT_THAT(
      channel->ProbeRoundTrips(0, Soon(), nullptr),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("0 round trips")));
  // Either refusal closed its connection only: another probes.
  channel = Connect("job-probe");
  ASSERT_NE(channel, nullptr);
  EXPECT_THAT(channel->ProbeRoundTrips(3, Soon(), nullptr), IsOk());
}

TEST_F(TensorPlaneProbeTest, APushOnAProbedConnection_RefusedShardUnchanged) {
  absl::StatusOr<std::vector<std::shared_ptr<PsShard>>> shards =
      service_.FindShards("job", -1);
  ASSERT_THAT(shards, IsOk());
  const auto before = Snapshot(*(*shards)[0]);
  std::unique_ptr<TensorPlaneChannel> channel = Connect("job");
  ASSERT_NE(channel, nullptr);
  ASSERT_THAT(channel->ProbeRoundTrips(2, Soon(), nullptr), IsOk());
  ps::PushHeader header;
  header.set_job_id("job");
  header.set_rank(0);
  ASSERT_THAT(channel->SendHeader(header, Soon()), IsOk());
  std::vector<float> grads(100, 1.0f);
  (void)channel->SendChunk(0, grads, Soon());  // the server may have closed
  std::vector<float> params(100);
  ps::PullHeader pulled;
  EXPECT_THAT(channel->ReadReply(&pulled, absl::MakeSpan(params), Soon()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("probed links")));
  EXPECT_TRUE(Snapshot(*(*shards)[0]) == before);
}

TEST_F(TensorPlaneProbeTest, WithoutTheJobsToken_NoProbe) {
  EXPECT_THAT(
      TensorPlaneChannel::Connect(
          address_, "auto", PlaneIdentity{"job-probe", 0, "not it"}, Soon()),
      StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_EQ(server_->authenticated_connections(), 0);
}

TEST(TensorPlaneProbeHeadTest, RoundTripsAndRefusals) {
  char raw[tensor_plane::kProbeHeadBytes];
  tensor_plane::ProbeHead head;
  head.op = tensor_plane::ProbeOp::kDownload;
  head.bytes = int64_t{3} << 30;
  tensor_plane::EncodeProbeHead(head, raw);
  ASSERT_TRUE(tensor_plane::StartsWithProbeMagic(raw));
  absl::StatusOr<tensor_plane::ProbeHead> decoded =
      tensor_plane::DecodeProbeHead(raw);
  ASSERT_THAT(decoded, IsOk());
  EXPECT_EQ(decoded->op, tensor_plane::ProbeOp::kDownload);
  EXPECT_EQ(decoded->bytes, int64_t{3} << 30);

  raw[4] = 9;  // op 9
  EXPECT_THAT(tensor_plane::DecodeProbeHead(raw),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("op 9")));
  raw[0] = 'X';
  EXPECT_FALSE(tensor_plane::StartsWithProbeMagic(raw));
  EXPECT_THAT(tensor_plane::DecodeProbeHead(raw),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not a tensor plane probe")));
  char goodput[tensor_plane::kGoodputBytes];
  tensor_plane::EncodeGoodput(11.96e6, goodput);
  EXPECT_EQ(tensor_plane::DecodeGoodput(goodput), 11.96e6);
}

}  // namespace
}  // namespace gradsync
