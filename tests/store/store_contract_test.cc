// The Store contract (collectives/store.h), held by every implementation:
// MemoryStore for ranks that are threads, PrefixStore over it, FileStore
// over a shared directory, the gRPC client against a real StoreServer on
// loopback for ranks that are processes, and the worker daemon's
// CoordinatorStore against a real coordinator on loopback. Each test runs
// once per implementation (StoreContractTest/Memory.*, .../Prefix.*,
// .../File.*, .../Grpc.*, .../Coordinator.*).
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "collectives/file_store.h"
#include "collectives/memory_store.h"
#include "collectives/prefix_store.h"
#include "collectives/store.h"
#include "common/status_macros.h"
#include "common/wire_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/coordinator/coordinator_server.h"
#include "server/coordinator/grpc_coordinator_client.h"
#include "server/store/grpc_store.h"
#include "server/store/store_server.h"
#include "tests/util/status_matchers.h"
#include "worker/daemon/coordinator_store.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

// Short enough to keep the suite fast, long enough for a loaded machine to
// get a request to the server and back.
constexpr absl::Duration kShortDeadline = absl::Milliseconds(200);
// For waits that are expected to succeed: a bound, never reached.
constexpr absl::Duration kLongDeadline = absl::Seconds(10);

// How a store's errors name keys. Most name a key as the caller gave it
// ("'addr/3'") and the missing keys of a Wait as a list ("ready/0,
// ready/2"), and nothing else; an environment says otherwise below.
struct KeyNaming {
  static std::string Named(absl::string_view key) {
    return absl::StrCat("'", key, "'");
  }
  static std::string NamedMissing(const std::vector<std::string>& keys) {
    return absl::StrJoin(keys, ", ");
  }
  // The message names no key but the missing ones.
  static constexpr bool kNamesOnlyMissingKeys = true;
};

// Two handles on one store, as two ranks would hold them.
class MemoryEnv : public KeyNaming {
 public:
  static constexpr char kName[] = "Memory";
  [[nodiscard]] absl::Status Init() { return absl::OkStatus(); }
  Store* rank0() { return &store_; }
  Store* rank1() { return &store_; }

 private:
  MemoryStore store_;
};

// A StoreServer on a free loopback port and two clients, each with its own
// channel, as two processes would have.
class GrpcEnv : public KeyNaming {
 public:
  static constexpr char kName[] = "Grpc";
  [[nodiscard]] absl::Status Init() {
    absl::StatusOr<std::unique_ptr<StoreServer>> server =
        StoreServer::Start("127.0.0.1:0");
    if (!server.ok()) return server.status();
    server_ = *std::move(server);
    for (std::unique_ptr<Store>* client : {&client0_, &client1_}) {
      absl::StatusOr<std::unique_ptr<Store>> connected =
          ConnectGrpcStore(server_->address(), absl::Seconds(5));
      if (!connected.ok()) return connected.status();
      *client = *std::move(connected);
    }
    return absl::OkStatus();
  }
  Store* rank0() { return client0_.get(); }
  Store* rank1() { return client1_.get(); }

 private:
  std::unique_ptr<StoreServer> server_;
  std::unique_ptr<Store> client0_;
  std::unique_ptr<Store> client1_;
};

// Two PrefixStores with one prefix over one MemoryStore, as the ranks of
// one job generation hold them.
class PrefixEnv {
 public:
  static constexpr char kName[] = "Prefix";
  // The base store's errors name the keys with the prefix.
  static std::string Named(absl::string_view key) {
    return absl::StrCat("'job-1/gen-0/", key, "'");
  }
  static std::string NamedMissing(const std::vector<std::string>& keys) {
    std::vector<std::string> full;
    for (const std::string& key : keys) full.push_back("job-1/gen-0/" + key);
    return absl::StrJoin(full, ", ");
  }
  static constexpr bool kNamesOnlyMissingKeys = true;
  [[nodiscard]] absl::Status Init() { return absl::OkStatus(); }
  Store* rank0() { return &rank0_; }
  Store* rank1() { return &rank1_; }

 private:
  MemoryStore base_;
  PrefixStore rank0_{&base_, "job-1/gen-0"};
  PrefixStore rank1_{&base_, "job-1/gen-0"};
};

// Two FileStores over one fresh directory, as two processes on a shared
// file system would have.
class FileEnv : public KeyNaming {
 public:
  static constexpr char kName[] = "File";
  ~FileEnv() {
    if (!dir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
    }
  }
  [[nodiscard]] absl::Status Init() {
    const std::string base = ::testing::TempDir();
    std::string pattern = base +
                          (base.empty() || base.back() != '/' ? "/" : "") +
                          "store_contract_XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      return absl::InternalError("mkdtemp failed in " + base);
    }
    dir_ = pattern;
    rank0_ = std::make_unique<FileStore>(dir_);
    rank1_ = std::make_unique<FileStore>(dir_);
    return absl::OkStatus();
  }
  Store* rank0() { return rank0_.get(); }
  Store* rank1() { return rank1_.get(); }

 private:
  std::string dir_;
  std::unique_ptr<FileStore> rank0_;
  std::unique_ptr<FileStore> rank1_;
};

// A real coordinator on a free loopback port with one worker hosting both
// ranks of a job, and that worker's CoordinatorStore twice, each over its
// own client and channel, as the ranks of a worker daemon use it.
class CoordinatorEnv : public KeyNaming {
 public:
  static constexpr char kName[] = "Coordinator";
  // Its errors start with the call ("store Wait for keys 'ready/0',
  // 'ready/1', 'ready/2' (job ...)"), then the coordinator's own message,
  // which lists the missing keys.
  static std::string NamedMissing(const std::vector<std::string>& keys) {
    std::vector<std::string> quoted;
    for (const std::string& key : keys) quoted.push_back(Named(key));
    return absl::StrCat("store keys ", absl::StrJoin(quoted, ", "), " of job");
  }
  static constexpr bool kNamesOnlyMissingKeys = false;
  [[nodiscard]] absl::Status Init() {
    CoordinatorConfig config;
    // No heartbeats come: the worker must outlive the suite.
    config.lease = absl::Hours(1);
    ASSIGN_OR_RETURN(server_, CoordinatorServer::Start("127.0.0.1:0", config));
    RegisterWorkerRequest worker;
    worker.set_host("host-a");
    worker.set_address("127.0.0.1");
    worker.set_pid(1);
    worker.set_wire_version(kWireVersion);
    for (int i = 0; i < 2; ++i) {
      Device* device = worker.add_devices();
      device->set_kind("cpu");
      device->set_index(i);
    }
    ASSIGN_OR_RETURN(const RegisterWorkerResponse registered,
                     server_->service()->RegisterWorker(worker));
    SubmitJobRequest submit;
    JobSpec* spec = submit.mutable_spec();
    spec->set_name("store-contract");
    spec->mutable_model()->set_kind("mlp");
    for (int width : {784, 32, 10})
      spec->mutable_model()->add_layer_sizes(width);
    spec->mutable_dataset()->set_name("synthetic");
    spec->set_num_workers(2);
    spec->mutable_optimizer()->set_name("sgd");
    spec->mutable_optimizer()->set_learning_rate(0.1);
    spec->set_batch_size(64);
    spec->set_steps(10);
    ASSIGN_OR_RETURN(const SubmitJobResponse submitted,
                     server_->service()->SubmitJob(submit));
    HeartbeatRequest poll;
    poll.set_worker_id(registered.worker_id());
    poll.set_credential(registered.credential());
    ASSIGN_OR_RETURN(const HeartbeatResponse news,
                     server_->service()->Heartbeat(poll));
    if (news.assignments_size() != 1) {
      return absl::InternalError("the job was not assigned to the worker");
    }
    StoreScope scope;
    scope.set_worker_id(registered.worker_id());
    scope.set_credential(registered.credential());
    scope.set_job_id(submitted.job_id());
    scope.set_generation(news.assignments(0).generation());
    const std::string address = server_->address();
    for (std::unique_ptr<CoordinatorStore>* rank : {&rank0_, &rank1_}) {
      *rank = std::make_unique<CoordinatorStore>(
          NewGrpcCoordinatorClient(NewCoordinatorChannel(address), address),
          scope);
    }
    return absl::OkStatus();
  }
  Store* rank0() { return rank0_.get(); }
  Store* rank1() { return rank1_.get(); }

 private:
  std::unique_ptr<CoordinatorServer> server_;
  std::unique_ptr<CoordinatorStore> rank0_;
  std::unique_ptr<CoordinatorStore> rank1_;
};

template <typename Env>
class StoreContractTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_THAT(env_.Init(), IsOk()); }
  Store& rank0() { return *env_.rank0(); }
  Store& rank1() { return *env_.rank1(); }

  Env env_;
};

struct EnvName {
  template <typename Env>
  static std::string GetName(int) {
    return Env::kName;
  }
};

using Envs =
    ::testing::Types<MemoryEnv, PrefixEnv, FileEnv, GrpcEnv, CoordinatorEnv>;
TYPED_TEST_SUITE(StoreContractTest, Envs, EnvName);

TYPED_TEST(StoreContractTest, Set_ThenGet_ReturnsValue) {
  ASSERT_THAT(this->rank0().Set("addr/0", "10.0.0.1:4000"), IsOk());
  absl::StatusOr<std::string> value =
      this->rank1().Get("addr/0", absl::Now() + kShortDeadline);
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(*value, "10.0.0.1:4000");
}

TYPED_TEST(StoreContractTest, Set_Twice_GetReturnsLatestValue) {
  ASSERT_THAT(this->rank0().Set("k", "first"), IsOk());
  ASSERT_THAT(this->rank0().Set("k", "second"), IsOk());
  absl::StatusOr<std::string> value =
      this->rank1().Get("k", absl::Now() + kShortDeadline);
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(*value, "second");
}

TYPED_TEST(StoreContractTest, Set_BinaryValueWithNulBytes_RoundTrips) {
  // Like an ncclUniqueId: 128 arbitrary bytes, zeros included.
  std::string id(128, '\0');
  for (int i = 0; i < 128; ++i) id[i] = static_cast<char>(i * 37);
  ASSERT_THAT(this->rank0().Set("nccl/id", id), IsOk());
  absl::StatusOr<std::string> value =
      this->rank1().Get("nccl/id", absl::Now() + kShortDeadline);
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(*value, id);
}

TYPED_TEST(StoreContractTest, Get_DeadlineAlreadyPassed_ReturnsSetValue) {
  ASSERT_THAT(this->rank0().Set("k", "v"), IsOk());
  absl::StatusOr<std::string> value =
      this->rank1().Get("k", absl::Now() - absl::Seconds(1));
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(*value, "v");
}

TYPED_TEST(StoreContractTest,
           Get_KeySetLaterByAnotherThread_BlocksThenReturns) {
  absl::StatusOr<std::string> value;
  absl::Notification done;
  std::thread getter([&] {
    value = this->rank0().Get("addr/1", absl::Now() + kLongDeadline);
    done.Notify();
  });
  // The key is not set, so the Get must still be waiting.
  EXPECT_FALSE(done.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  ASSERT_THAT(this->rank1().Set("addr/1", "10.0.0.2:4000"), IsOk());
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(kLongDeadline));
  getter.join();
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(*value, "10.0.0.2:4000");
}

TYPED_TEST(StoreContractTest,
           Get_KeyNeverSet_ReturnsDeadlineExceededNamingKey) {
  const absl::Time deadline = absl::Now() + kShortDeadline;
  absl::StatusOr<std::string> value = this->rank0().Get("addr/3", deadline);
  const absl::Time returned = absl::Now();
  EXPECT_THAT(value, StatusIs(absl::StatusCode::kDeadlineExceeded,
                              HasSubstr(TypeParam::Named("addr/3"))));
  // It waited for the deadline, and not much longer.
  EXPECT_GE(returned, deadline - absl::Milliseconds(10));
  EXPECT_LT(returned, deadline + kRpcGrace);
}

TYPED_TEST(StoreContractTest, Add_AbsentKey_CountsFromZero) {
  absl::StatusOr<int64_t> value = this->rank0().Add("count", 5);
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(*value, 5);
  value = this->rank1().Add("count", -7);
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(*value, -2);
  absl::StatusOr<std::string> text =
      this->rank0().Get("count", absl::Now() + kShortDeadline);
  ASSERT_THAT(text, IsOk());
  EXPECT_EQ(*text, "-2");
}

TYPED_TEST(StoreContractTest, Add_FromEightThreads_IsAtomic) {
  constexpr int kThreads = 8;
  constexpr int kAddsPerThread = 50;
  std::vector<std::vector<int64_t>> seen(kThreads);
  std::vector<absl::Status> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Store& store = t % 2 == 0 ? this->rank0() : this->rank1();
      for (int i = 0; i < kAddsPerThread; ++i) {
        absl::StatusOr<int64_t> value = store.Add("arrivals", 1);
        if (!value.ok()) {
          errors[t] = value.status();
          return;
        }
        seen[t].push_back(*value);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::set<int64_t> all;
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_THAT(errors[t], IsOk()) << "in thread " << t;
    all.insert(seen[t].begin(), seen[t].end());
  }
  // Every Add returned a distinct value: 1 .. kThreads * kAddsPerThread.
  ASSERT_EQ(all.size(), static_cast<size_t>(kThreads * kAddsPerThread));
  EXPECT_EQ(*all.begin(), 1);
  EXPECT_EQ(*all.rbegin(), kThreads * kAddsPerThread);
}

TYPED_TEST(StoreContractTest,
           Add_KeyHoldsNonInteger_ReturnsFailedPreconditionNamingKey) {
  ASSERT_THAT(this->rank0().Set("addr/0", "10.0.0.1:4000"), IsOk());
  EXPECT_THAT(this->rank1().Add("addr/0", 1),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr(TypeParam::Named("addr/0"))));
}

TYPED_TEST(StoreContractTest, Wait_AllKeysSetByAnotherThread_ReturnsOk) {
  const std::vector<std::string> keys = {"ready/0", "ready/1", "ready/2"};
  absl::Status status;
  absl::Notification done;
  std::thread waiter([&] {
    status = this->rank0().Wait(keys, absl::Now() + kLongDeadline);
    done.Notify();
  });
  ASSERT_THAT(this->rank1().Set("ready/0", "1"), IsOk());
  ASSERT_THAT(this->rank1().Set("ready/2", "1"), IsOk());
  // One key is still missing, so the Wait must still be waiting.
  EXPECT_FALSE(done.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  ASSERT_THAT(this->rank1().Set("ready/1", "1"), IsOk());
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(kLongDeadline));
  waiter.join();
  EXPECT_THAT(status, IsOk());
}

TYPED_TEST(StoreContractTest, Wait_NoKeys_ReturnsOk) {
  EXPECT_THAT(this->rank0().Wait({}, absl::Now() + kShortDeadline), IsOk());
}

TYPED_TEST(StoreContractTest,
           Wait_SomeKeysNeverSet_ReturnsDeadlineExceededNamingMissingKeys) {
  ASSERT_THAT(this->rank1().Set("ready/1", "1"), IsOk());
  const absl::Time deadline = absl::Now() + kShortDeadline;
  absl::Status status =
      this->rank0().Wait({"ready/0", "ready/1", "ready/2"}, deadline);
  const absl::Time returned = absl::Now();
  EXPECT_THAT(
      status,
      StatusIs(absl::StatusCode::kDeadlineExceeded,
               HasSubstr(TypeParam::NamedMissing({"ready/0", "ready/2"}))));
  if (TypeParam::kNamesOnlyMissingKeys) {
    EXPECT_THAT(status.message(), Not(HasSubstr("ready/1")));
  }
  EXPECT_GE(returned, deadline - absl::Milliseconds(10));
  EXPECT_LT(returned, deadline + kRpcGrace);
}

TYPED_TEST(StoreContractTest, PrefixStore_TwoPrefixes_DoNotSeeEachOthersKeys) {
  PrefixStore job1(&this->rank0(), "job-1/gen-0");
  PrefixStore job2(&this->rank1(), "job-2/gen-0");
  ASSERT_THAT(job1.Set("addr/0", "a"), IsOk());
  EXPECT_THAT(job2.Get("addr/0", absl::Now() + kShortDeadline),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  ASSERT_THAT(job2.Set("addr/0", "b"), IsOk());
  absl::StatusOr<std::string> value =
      job1.Get("addr/0", absl::Now() + kShortDeadline);
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(*value, "a");
  // The base store holds both, each under its own prefix.
  value = this->rank1().Get("job-2/gen-0/addr/0", absl::Now() + kShortDeadline);
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(*value, "b");
}

}  // namespace
}  // namespace gradsync
