// The PS tensor plane (server/ps/transport/tensor_plane_*.h,
// server/ps/daemon/tensor_plane_*.h) on 127.0.0.1: exact synchronous steps over
// partitions through one connection per rank, and the failures: a bad token,
// garbage, wrong sizes, a client that dies in mid-push. Each failure gets an
// error reply and leaves the shard as it was.
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/secret.h"
#include "server/ps/daemon/ps_service.h"
#include "server/ps/daemon/tensor_plane_server.h"
#include "server/ps/transport/tensor_plane_client.h"
#include "server/ps/transport/tensor_plane_wire.h"
#include "tests/ps/ps_test_util.h"
#include "tests/util/socket_flood.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::Eventually;
using ::gradsync::testing::IsOk;
using ::gradsync::testing::Snapshot;
using ::gradsync::testing::Soon;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kRanks = 3;
constexpr size_t kTotal = 1000;  // two shards of 500 on one server

class TensorPlaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int k = 0; k < 2; ++k) {
      ShardSpec spec;
      spec.config =
          testing::ShardConfig(kRanks, k * kTotal / 2, (k + 1) * kTotal / 2);
      spec.config.shard = k;
      spec.config.max_wait = absl::Seconds(3);
      spec.num_shards = 2;
      spec.total_elements = kTotal;
      ASSERT_THAT(service_.CreateShard(spec), IsOk());
    }
    absl::StatusOr<std::unique_ptr<TensorPlaneServer>> server =
        TensorPlaneServer::Start(&service_, {"127.0.0.1", 0});
    ASSERT_THAT(server, IsOk());
    server_ = *std::move(server);
    address_ = absl::StrCat("127.0.0.1:", server_->port());
  }

  // Rank 0 of "job", with `token` (none: the service is open).
  static PlaneIdentity Job(std::string token = "", int rank = 0) {
    return PlaneIdentity{"job", rank, std::move(token)};
  }

  std::unique_ptr<TensorPlaneChannel> Connect(std::string token = "") {
    absl::StatusOr<std::unique_ptr<TensorPlaneChannel>> channel =
        TensorPlaneChannel::Connect(address_, "auto", Job(std::move(token)),
                                    Soon());
    EXPECT_THAT(channel, IsOk());
    return channel.ok() ? *std::move(channel) : nullptr;
  }

  static ps::PushHeader Header(int shard, int rank, int64_t step) {
    ps::PushHeader header;
    header.set_job_id("job");
    header.set_shard(shard);
    header.set_rank(rank);
    header.set_step(step);
    header.set_descending(true);
    return header;
  }

  // Rank r's gradient: (r + 1) * 3 + i, so the mean over 3 ranks is 6 + i.
  static std::vector<float> Gradient(int rank) {
    std::vector<float> g(kTotal);
    for (size_t i = 0; i < kTotal; ++i) g[i] = (rank + 1) * 3.0f + i;
    return g;
  }

  // Pushes shard `k`'s range of `grads` in descending chunks of 64 floats.
  [[nodiscard]] static absl::Status PushShard(TensorPlaneChannel& channel,
                                              int k, int rank, int64_t step,
                                              const std::vector<float>& grads,
                                              double trailer = -1) {
    ps::PushHeader header = Header(k, rank, step);
    if (trailer >= 0) header.set_trailer_scalars(1);
    const size_t begin = k * kTotal / 2, end = (k + 1) * kTotal / 2;
    RETURN_IF_ERROR(channel.SendHeader(header, Soon()));
    for (size_t hi = end; hi > begin;) {
      const size_t lo = hi - std::min<size_t>(64, hi - begin);
      RETURN_IF_ERROR(channel.SendChunk(
          static_cast<int64_t>(lo - begin),
          absl::MakeConstSpan(grads).subspan(lo, hi - lo), Soon()));
      hi = lo;
    }
    if (trailer >= 0) {
      const double scalars[] = {trailer};
      RETURN_IF_ERROR(channel.SendTrailer(scalars, Soon()));
    }
    return absl::OkStatus();
  }

  PsService service_;
  std::unique_ptr<TensorPlaneServer> server_;
  std::string address_;
};

TEST_F(TensorPlaneTest, PartitionsThroughOneConnection_ExactOnEveryRank) {
  std::vector<std::vector<float>> params(kRanks,
                                         std::vector<float>(kTotal, 7.0f));
  std::vector<ps::PullHeader> first(kRanks);
  std::vector<absl::Status> status(kRanks);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kRanks; ++r) {
    ranks.emplace_back([&, r] {
      std::unique_ptr<TensorPlaneChannel> channel = Connect();
      if (channel == nullptr) return;
      const std::vector<float> grads = Gradient(r);
      // Two steps; each pushes shard 1, then shard 0 with the loss in a
      // trailer, while a second thread reads the replies in that order.
      for (int64_t step = 0; step < 2 && status[r].ok(); ++step) {
        std::thread reader([&, r] {
          for (int k : {1, 0}) {
            ps::PullHeader header;
            absl::Status s = channel->ReadReply(
                &header,
                absl::MakeSpan(params[r]).subspan(k * kTotal / 2, kTotal / 2),
                Soon());
            if (!s.ok()) {
              status[r] = s;
              channel->Shutdown();
              return;
            }
            if (k == 0) first[r] = header;
          }
        });
        absl::Status s = PushShard(*channel, 1, r, step, grads);
        if (s.ok()) s = PushShard(*channel, 0, r, step, grads, r + 1.0);
        reader.join();
        if (status[r].ok()) status[r] = s;
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_THAT(status[r], IsOk()) << "rank " << r;
    // SGD at lr 1 from zeros, twice: -2 (6 + i), exactly.
    for (size_t i = 0; i < kTotal; ++i) {
      ASSERT_EQ(params[r][i], -2.0f * (6.0f + i)) << "rank " << r << " " << i;
    }
    EXPECT_EQ(first[r].version(), 2);
    EXPECT_EQ(first[r].begin(), 0);
    EXPECT_EQ(first[r].end(), 500);
    EXPECT_THAT(first[r].scalar_sums(), ElementsAre(6.0));  // 1 + 2 + 3
  }
}

TEST_F(TensorPlaneTest, Handshake_RightTokenServedWrongOrNoneRefused) {
  service_.RequireTokens();
  service_.SetShardKey("key");
  absl::StatusOr<std::vector<std::shared_ptr<PsShard>>> shards =
      service_.FindShards("job", -1);
  ASSERT_THAT(shards, IsOk());
  const auto before = Snapshot(*(*shards)[0]);
  // A wrong token and no token: the server proves first, so the client
  // sees a server that does not prove *its* token and sends nothing; a
  // client without a token checks nothing, but its zeros are refused.
  EXPECT_THAT(TensorPlaneChannel::Connect(address_, "auto",
                                          Job("not the token"), Soon()),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("did not prove job job's PS token")));
  EXPECT_THAT(TensorPlaneChannel::Connect(address_, "auto", Job(), Soon()),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       AllOf(HasSubstr("rank 0 for job job"),
                             HasSubstr("did not prove the job's PS token"))));
  // The job's token for another job's name proves nothing for this one.
  EXPECT_THAT(
      TensorPlaneChannel::Connect(
          address_, "auto",
          PlaneIdentity{"other", 0, PsTokenForJob("key", "job")}, Soon()),
      StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_EQ(server_->authenticated_connections(), 0);
  EXPECT_TRUE(Snapshot(*(*shards)[0]) == before);

  // The right token: a whole step, exact.
  const std::string token = PsTokenForJob("key", "job");
  std::vector<std::thread> ranks;
  std::vector<absl::Status> status(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    ranks.emplace_back([&, r] {
      absl::StatusOr<std::unique_ptr<TensorPlaneChannel>> channel =
          TensorPlaneChannel::Connect(address_, "auto", Job(token, r), Soon());
      if (!channel.ok()) {
        status[r] = channel.status();
        return;
      }
      std::vector<float> mine(kTotal / 2);
      ps::PullHeader h;
      status[r] = PushShard(**channel, 0, r, 0, Gradient(r));
      if (status[r].ok()) {
        status[r] = (*channel)->ReadReply(&h, absl::MakeSpan(mine), Soon());
      }
      if (status[r].ok() && mine[7] != -(6.0f + 7)) {
        status[r] = absl::InternalError(absl::StrCat("got ", mine[7]));
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < kRanks; ++r) EXPECT_THAT(status[r], IsOk()) << r;
}

TEST_F(TensorPlaneTest, ATokenHolderRefusesAnOpenServer) {
  // The server knows no token (never told to require one): it cannot
  // prove the job's, so a client that has one sends it nothing.
  EXPECT_THAT(TensorPlaneChannel::Connect(
                  address_, "auto", Job(PsTokenForJob("key", "job")), Soon()),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("not that job's parameter server")));
}

TEST_F(TensorPlaneTest, BeforeRegistration_UnavailableAndSaysRetry) {
  service_.RequireTokens();  // and no shard key yet
  EXPECT_THAT(TensorPlaneChannel::Connect(address_, "auto", Job("t"), Soon()),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("retry")));
}

TEST_F(TensorPlaneTest, AConnectionServesItsOwnJobOnly) {
  service_.RequireTokens();
  service_.SetShardKey("key");
  absl::StatusOr<std::vector<std::shared_ptr<PsShard>>> shards =
      service_.FindShards("job", -1);
  ASSERT_THAT(shards, IsOk());
  const auto before = Snapshot(*(*shards)[0]);
  // Proved "other"'s token, then asks for "job"'s shard.
  absl::StatusOr<std::unique_ptr<TensorPlaneChannel>> channel =
      TensorPlaneChannel::Connect(
          address_, "auto",
          PlaneIdentity{"other", 0, PsTokenForJob("key", "other")}, Soon());
  ASSERT_THAT(channel, IsOk());
  ASSERT_THAT(PushShard(**channel, 0, 0, 0, Gradient(0)), IsOk());
  std::vector<float> params(kTotal / 2);
  ps::PullHeader header;
  EXPECT_THAT((*channel)->ReadReply(&header, absl::MakeSpan(params), Soon()),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("proved job other's token")));
  EXPECT_TRUE(Snapshot(*(*shards)[0]) == before);
}

TEST_F(TensorPlaneTest, UnknownShard_ErrorReplyNothingChanged) {
  absl::StatusOr<std::vector<std::shared_ptr<PsShard>>> shards =
      service_.FindShards("job", -1);
  ASSERT_THAT(shards, IsOk());
  const auto before = Snapshot(*(*shards)[0]);
  std::unique_ptr<TensorPlaneChannel> other = Connect();
  ASSERT_NE(other, nullptr);
  std::vector<float> params(kTotal / 2);
  ps::PullHeader header;
  ASSERT_THAT(other->SendHeader(Header(5, 0, 0), Soon()), IsOk());
  EXPECT_THAT(other->ReadReply(&header, absl::MakeSpan(params), Soon()),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("shard 5")));
  EXPECT_TRUE(Snapshot(*(*shards)[0]) == before);
}

TEST_F(TensorPlaneTest, GarbageAndWrongSizes_RefusedAndOthersServed) {
  absl::StatusOr<std::vector<std::shared_ptr<PsShard>>> shards =
      service_.FindShards("job", -1);
  ASSERT_THAT(shards, IsOk());
  const auto before = Snapshot(*(*shards)[1]);
  std::vector<float> params(kTotal / 2);
  ps::PullHeader header;
  {
    // An HTTP request on the tensor port.
    absl::StatusOr<Socket> raw =
        Socket::Connect("127.0.0.1", server_->port(), Soon());
    ASSERT_THAT(raw, IsOk());
    const std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_THAT(raw->SendAll(junk.data(), junk.size(), Soon(), nullptr),
                IsOk());
    char head[tensor_plane::kReplyHeadBytes];
    ASSERT_THAT(raw->RecvAll(head, sizeof(head), Soon(), nullptr), IsOk());
    absl::StatusOr<tensor_plane::ReplyHead> reply =
        tensor_plane::DecodeReplyHead(head);
    ASSERT_THAT(reply, IsOk());
    EXPECT_EQ(reply->code,
              static_cast<uint32_t>(absl::StatusCode::kInvalidArgument));
  }
  {
    // A chunk outside the shard's range.
    std::unique_ptr<TensorPlaneChannel> channel = Connect();
    ASSERT_THAT(channel->SendHeader(Header(1, 0, 0), Soon()), IsOk());
    const std::vector<float> chunk(64, 1.0f);
    ASSERT_THAT(channel->SendChunk(480, chunk, Soon()), IsOk());
    EXPECT_THAT(channel->ReadReply(&header, absl::MakeSpan(params), Soon()),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("rank 0 for step 0"),
                               HasSubstr("outside the shard's 500"))));
  }
  EXPECT_TRUE(Snapshot(*(*shards)[1]) == before);
  // The server still serves a whole step.
  std::vector<std::thread> ranks;
  std::vector<absl::Status> status(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    ranks.emplace_back([&, r] {
      std::unique_ptr<TensorPlaneChannel> channel = Connect();
      std::vector<float> mine(kTotal / 2);
      ps::PullHeader h;
      status[r] = PushShard(*channel, 1, r, 0, Gradient(r));
      if (status[r].ok()) {
        status[r] = channel->ReadReply(&h, absl::MakeSpan(mine), Soon());
      }
      if (status[r].ok() && mine[0] != -(6.0f + 500)) {
        status[r] = absl::InternalError(absl::StrCat("got ", mine[0]));
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < kRanks; ++r) EXPECT_THAT(status[r], IsOk()) << r;
}

TEST_F(TensorPlaneTest, ClientDiesInMidPush_ShardUnchangedOthersNamed) {
  absl::StatusOr<std::vector<std::shared_ptr<PsShard>>> shards =
      service_.FindShards("job", -1);
  ASSERT_THAT(shards, IsOk());
  const auto before = Snapshot(*(*shards)[0]);
  {
    // Rank 0 sends half its gradient and goes away.
    std::unique_ptr<TensorPlaneChannel> dying = Connect();
    ASSERT_THAT(dying->SendHeader(Header(0, 0, 0), Soon()), IsOk());
    const std::vector<float> half(250, 1.0f);
    ASSERT_THAT(dying->SendChunk(250, half, Soon()), IsOk());
  }
  // Its push was abandoned: it may push step 0 again, and the shard waits.
  EXPECT_TRUE(Eventually([&] { return Snapshot(*(*shards)[0]) == before; }));
  // Ranks 1 and 2 push; rank 0 never does: after max_wait they are told
  // which rank is missing.
  std::vector<std::thread> ranks;
  std::vector<absl::Status> status(kRanks, absl::OkStatus());
  const absl::Time start = absl::Now();
  for (int r = 1; r < kRanks; ++r) {
    ranks.emplace_back([&, r] {
      std::unique_ptr<TensorPlaneChannel> channel = Connect();
      std::vector<float> mine(kTotal / 2);
      ps::PullHeader h;
      status[r] = PushShard(*channel, 0, r, 0, Gradient(r));
      if (status[r].ok()) {
        status[r] = channel->ReadReply(&h, absl::MakeSpan(mine), Soon());
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(8));
  for (int r = 1; r < kRanks; ++r) {
    EXPECT_THAT(
        status[r],
        StatusIs(absl::StatusCode::kDeadlineExceeded,
                 AllOf(HasSubstr(absl::StrCat("from rank ", r, " for step 0")),
                       HasSubstr("ranks 0 have not pushed it"))))
        << "rank " << r;
  }
}

TEST_F(TensorPlaneTest, ConnectionsBeyondTheLimit_RefusedAndNamed) {
  TensorPlaneServer::Options options;
  options.host = "127.0.0.1";
  options.max_connections = 2;
  absl::StatusOr<std::unique_ptr<TensorPlaneServer>> small =
      TensorPlaneServer::Start(&service_, options);
  ASSERT_THAT(small, IsOk());
  const std::string address = absl::StrCat("127.0.0.1:", (*small)->port());
  // Two clients of a job (their handshakes authenticate them) take the
  // slots.
  std::vector<std::unique_ptr<TensorPlaneChannel>> open;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<std::unique_ptr<TensorPlaneChannel>> channel =
        TensorPlaneChannel::Connect(address, "auto", Job(), Soon());
    ASSERT_THAT(channel, IsOk());
    ASSERT_THAT(PushShard(**channel, 0, i, 0, Gradient(i)), IsOk());
    open.push_back(*std::move(channel));
  }
  ASSERT_TRUE(
      Eventually([&] { return (*small)->authenticated_connections() == 2; }));
  // The third is told at its handshake.
  EXPECT_THAT(TensorPlaneChannel::Connect(address, "auto", Job(), Soon()),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("holds 2 connections already")));
  // One goes; a new one is served again.
  open.pop_back();
  ASSERT_TRUE(
      Eventually([&] { return (*small)->authenticated_connections() == 1; }));
  absl::StatusOr<std::unique_ptr<TensorPlaneChannel>> again =
      TensorPlaneChannel::Connect(address, "auto", Job(), Soon());
  ASSERT_THAT(again, IsOk());
  ASSERT_THAT(PushShard(**again, 1, 0, 0, Gradient(0)), IsOk());
  EXPECT_TRUE(
      Eventually([&] { return (*small)->authenticated_connections() == 2; }));
}

TEST_F(TensorPlaneTest, IdleAndGarbageFloods_DoNotBlockAJob) {
  // Trust finding 4: 1,100 idle connections filled the 1,024 slots and
  // every new PS job failed for 30 minutes. Now 2,000 idle and 2,000
  // garbage connections (fewer where the fd limit says so) leave a running
  // job's ranks and a new job's served, and hold at most
  // max_unauthenticated connections.
  const int each = std::min(2000, testing::SocketBudget() / 2);
  ASSERT_GT(each, 200) << "too few file descriptors";
  // A job already running: its ranks connected (and proved the token)
  // before the flood.
  std::vector<std::unique_ptr<TensorPlaneChannel>> running;
  for (int r = 0; r < kRanks; ++r) {
    running.push_back(Connect());
    ASSERT_NE(running.back(), nullptr);
  }
  std::vector<int> fds;
  for (int i = 0; i < each; ++i) {
    const int idle = testing::DialLoopback(server_->port());
    if (idle >= 0) fds.push_back(idle);
    const int garbage = testing::DialLoopback(server_->port());
    if (garbage >= 0) {
      const char junk[] = "GET / HTTP/1.1\r\nnot the tensor plane\r\n\r\n";
      (void)!write(garbage, junk, sizeof(junk) - 1);
      fds.push_back(garbage);
    }
  }
  EXPECT_GE(fds.size(), static_cast<size_t>(each));
  // An evicted connection leaves the count once its thread has closed it,
  // a moment after the newcomer that evicted it arrived.
  EXPECT_TRUE(Eventually([&] {
    return server_->connections() <=
           TensorPlaneServer::Options().max_unauthenticated + 1;
  })) << server_->connections()
      << " connections held";
  // The running job's step through its own connections, then a new
  // job's ranks connecting afresh for the next: both exact (the shard
  // averages 3(r + 1) + i over the ranks: 6 + i a step).
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_THAT(PushShard(*running[r], 0, r, 0, Gradient(r)), IsOk());
  }
  for (int r = 0; r < kRanks; ++r) {
    std::vector<float> params(kTotal / 2);
    ps::PullHeader header;
    ASSERT_THAT(running[r]->ReadReply(&header, absl::MakeSpan(params), Soon()),
                IsOk())
        << "running rank " << r;
    EXPECT_EQ(params[7], -(6.0f + 7.0f)) << "running rank " << r;
  }
  std::vector<std::unique_ptr<TensorPlaneChannel>> ranks;
  for (int r = 0; r < kRanks; ++r) {
    ranks.push_back(Connect());
    ASSERT_NE(ranks.back(), nullptr);
    ASSERT_THAT(PushShard(*ranks.back(), 0, r, 1, Gradient(r)), IsOk());
  }
  for (int r = 0; r < kRanks; ++r) {
    std::vector<float> params(kTotal / 2);
    ps::PullHeader header;
    ASSERT_THAT(ranks[r]->ReadReply(&header, absl::MakeSpan(params), Soon()),
                IsOk())
        << "new rank " << r;
    EXPECT_EQ(params[7], -2 * (6.0f + 7.0f)) << "new rank " << r;
  }
  for (int fd : fds) close(fd);
}

TEST_F(TensorPlaneTest, SilentConnection_ClosedAfterTheHandshakeTimeout) {
  TensorPlaneServer::Options options;
  options.host = "127.0.0.1";
  options.handshake_timeout = absl::Milliseconds(300);
  absl::StatusOr<std::unique_ptr<TensorPlaneServer>> quick =
      TensorPlaneServer::Start(&service_, options);
  ASSERT_THAT(quick, IsOk());
  const int fd = testing::DialLoopback((*quick)->port());
  ASSERT_GE(fd, 0);
  // Blocks until the server closes it (read returns 0); the socket's own
  // timeout bounds the wait.
  timeval wait{};
  wait.tv_sec = 10;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
  char byte;
  EXPECT_EQ(read(fd, &byte, 1), 0) << "the server kept a silent connection";
  close(fd);
}

TEST_F(TensorPlaneTest, AClientSeesItsServerGo) {
  std::unique_ptr<TensorPlaneChannel> channel = Connect();
  ASSERT_NE(channel, nullptr);
  EXPECT_FALSE(channel->PeerClosed());
  server_.reset();
  EXPECT_TRUE(Eventually([&] { return channel->PeerClosed(); }));
}

TEST_F(TensorPlaneTest, StopsPromptlyWithIdleConnections) {
  std::unique_ptr<TensorPlaneChannel> a = Connect();
  std::unique_ptr<TensorPlaneChannel> b = Connect();
  ASSERT_THAT(a->SendHeader(Header(0, 0, 0), Soon()), IsOk());  // mid-push
  EXPECT_TRUE(Eventually([&] { return server_->connections() == 2; }));
  const absl::Time start = absl::Now();
  server_.reset();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
}

}  // namespace
}  // namespace gradsync
