// PushPull streams that break the protocol, sent with the generated
// protobuf stub (as any other client could): each is refused with
// INVALID_ARGUMENT naming what is wrong, and the shard is unchanged, which a
// correct push of the same step afterwards proves (its exact parameters).
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/ps.grpc.pb.h"
#include "server/ps/client/ps_admin_client.h"
#include "server/ps/daemon/ps_server.h"
#include "tests/ps/ps_grpc_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::ShardRequest;
using ::gradsync::testing::StartServer;
using ::testing::HasSubstr;

constexpr size_t kTotal = 10;

class PsStreamErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = StartServer();
    ASSERT_NE(server_, nullptr);
    // One sync shard of 10 zeros, one worker, SGD with lr 1.
    ASSERT_THAT(PsAdminClient::Connect(server_->address())
                    ->CreateShard(ShardRequest("j", 0, 1, kTotal, 1)),
                IsOk());
    stub_ = ps::ParameterServer::NewStub(grpc::CreateChannel(
        server_->address(), grpc::InsecureChannelCredentials()));
  }

  static ps::PushPullRequest Header(int64_t step, bool pull_only = false) {
    ps::PushPullRequest message;
    message.mutable_header()->set_job_id("j");
    message.mutable_header()->set_step(step);
    message.mutable_header()->set_chunk_bytes(16);
    message.mutable_header()->set_pull_only(pull_only);
    return message;
  }
  // Gradient elements [begin, end) in `message`: the values 1, 2, ..., 10.
  static ps::PushPullRequest WithData(ps::PushPullRequest message, size_t begin,
                                      size_t end) {
    std::vector<float> g(end - begin);
    for (size_t i = begin; i < end; ++i) g[i - begin] = 1.0f + i;
    message.set_offset(static_cast<int64_t>(begin));
    message.set_data(std::string(reinterpret_cast<const char*>(g.data()),
                                 g.size() * sizeof(float)));
    return message;
  }
  static ps::PushPullRequest Data(size_t begin, size_t end) {
    return WithData(ps::PushPullRequest(), begin, end);
  }

  // Sends `messages`, half-closes, reads the reply into `params` (if any)
  // and returns the call's status.
  grpc::Status Run(const std::vector<ps::PushPullRequest>& messages,
                   std::vector<float>* params = nullptr,
                   ps::PullHeader* reply = nullptr) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
    auto stream = stub_->PushPull(&context);
    for (const ps::PushPullRequest& m : messages) {
      if (!stream->Write(m)) break;
    }
    stream->WritesDone();
    ps::PushPullResponse response;
    std::string bytes;
    while (stream->Read(&response)) {
      if (response.has_header() && reply != nullptr) *reply = response.header();
      bytes += response.data();
    }
    if (params != nullptr) {
      params->assign(bytes.size() / sizeof(float), 0.0f);
      std::memcpy(params->data(), bytes.data(), bytes.size());
    }
    return stream->Finish();
  }

  // The shard is where SetUp left it: step 0's push goes through and
  // gives exactly -g (zeros minus lr 1 times the gradient).
  void ExpectUnchanged() {
    std::vector<float> params;
    const grpc::Status status =
        Run({WithData(Header(0), 0, 4), Data(4, 8), Data(8, 10)}, &params);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(params,
              (std::vector<float>{-1, -2, -3, -4, -5, -6, -7, -8, -9, -10}));
  }

  void ExpectRefused(const grpc::Status& status, const std::string& what) {
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(what));
  }

  std::unique_ptr<PsServer> server_;
  std::unique_ptr<ps::ParameterServer::Stub> stub_;
};

TEST_F(PsStreamErrorTest, EndsBeforeTheHeader) {
  ExpectRefused(Run({}), "ended before its header");
  ExpectUnchanged();
}

TEST_F(PsStreamErrorTest, EndsInTheMiddleOfTheGradient) {
  ExpectRefused(Run({WithData(Header(0), 0, 4)}),
                "stream ended after 16 of 40 bytes");
  ExpectUnchanged();
}

TEST_F(PsStreamErrorTest, SecondHeaderInTheMiddle) {
  ExpectRefused(Run({WithData(Header(0), 0, 4), WithData(Header(0), 4, 8)}),
                "second header");
  ExpectUnchanged();
}

TEST_F(PsStreamErrorTest, ChunkOutOfOrder) {
  ExpectRefused(Run({WithData(Header(0), 0, 4), Data(8, 10), Data(4, 8)}),
                "expected 4");
  ExpectUnchanged();
}

TEST_F(PsStreamErrorTest, DataAfterTheWholeGradient) {
  ExpectRefused(Run({WithData(Header(0), 0, 4), Data(4, 10), Data(0, 1)}),
                "more data arrived after the whole gradient");
  ExpectUnchanged();
}

TEST_F(PsStreamErrorTest, PullOnlyRequestWithData) {
  ExpectRefused(Run({WithData(Header(0, /*pull_only=*/true), 0, 4)}),
                "pull-only request carries gradient data");
  ExpectUnchanged();
}

// The step scalars after the gradient (PushHeader.trailer_scalars).
ps::PushPullRequest WithTrailerScalars(ps::PushPullRequest message, int n) {
  message.mutable_header()->set_trailer_scalars(n);
  return message;
}
ps::PushPullRequest Trailer(std::vector<double> scalars) {
  ps::PushPullRequest message;
  message.mutable_header()->mutable_scalars()->Add(scalars.begin(),
                                                   scalars.end());
  return message;
}

TEST_F(PsStreamErrorTest, TrailerScalarsComeBackSummed) {
  std::vector<float> params;
  ps::PullHeader reply;
  const grpc::Status status =
      Run({WithData(WithTrailerScalars(Header(0), 2), 0, 4), Data(4, 10),
           Trailer({1.5, -2.25})},
          &params, &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(params,
            (std::vector<float>{-1, -2, -3, -4, -5, -6, -7, -8, -9, -10}));
  ASSERT_EQ(reply.scalar_sums_size(), 2);  // one worker: its own values
  EXPECT_EQ(reply.scalar_sums(0), 1.5);
  EXPECT_EQ(reply.scalar_sums(1), -2.25);
}

TEST_F(PsStreamErrorTest, TrailerMissing) {
  ExpectRefused(
      Run({WithData(WithTrailerScalars(Header(0), 2), 0, 4), Data(4, 10)}),
      "without the trailer of 2 step scalars its header announced");
  ExpectUnchanged();
}

TEST_F(PsStreamErrorTest, TrailerOfAnotherLength) {
  ExpectRefused(Run({WithData(WithTrailerScalars(Header(0), 2), 0, 4),
                     Data(4, 10), Trailer({1.0})}),
                "the trailer holds 1 step scalars, but the push's header "
                "announced 2");
  ExpectUnchanged();
}

// Refusals change nothing, so one correct push at the end proves it.
TEST_F(PsStreamErrorTest, TrailerWithDataOrMore) {
  ExpectRefused(Run({WithData(WithTrailerScalars(Header(0), 1), 0, 4),
                     Data(4, 10), Data(0, 1)}),
                "where the trailer of step scalars was expected");
  ps::PushPullRequest trailer = Trailer({1.0});
  trailer.mutable_header()->set_job_id("j");
  ExpectRefused(Run({WithData(WithTrailerScalars(Header(0), 1), 0, 4),
                     Data(4, 10), trailer}),
                "the trailer may hold step scalars only");
  ExpectRefused(Run({WithData(WithTrailerScalars(Header(0), 1), 0, 4),
                     Data(4, 10), Trailer({1.0}), Trailer({1.0})}),
                "more data arrived after the whole gradient");
  ExpectUnchanged();
}

TEST_F(PsStreamErrorTest, TrailerAnnouncedWrongly) {
  ps::PushPullRequest both = WithTrailerScalars(Header(0), 1);
  both.mutable_header()->add_scalars(3.0);
  ExpectRefused(Run({WithData(both, 0, 4), Data(4, 10), Trailer({1.0})}),
                "must not carry scalars itself");
  ExpectRefused(
      Run({WithData(WithTrailerScalars(Header(0), -1), 0, 4), Data(4, 10)}),
      "trailer_scalars is -1");
  ExpectUnchanged();
}

TEST_F(PsStreamErrorTest, FirstMessageWithoutHeader) {
  ExpectRefused(Run({Data(0, 4), Data(4, 10)}), "first message has no header");
  ExpectUnchanged();
}

}  // namespace
}  // namespace gradsync
