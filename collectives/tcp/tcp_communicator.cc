#include "collectives/tcp/tcp_communicator.h"

#include <deque>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "collectives/algorithms/collective_context.h"
#include "collectives/algorithms/collective_header.h"
#include "collectives/algorithms/halving_doubling.h"
#include "collectives/algorithms/ring.h"
#include "collectives/all_reduce_algorithm.h"
#include "collectives/progress_work.h"
#include "collectives/transports/tcp/connection.h"
#include "collectives/transports/tcp/rendezvous.h"
#include "collectives/transports/tcp/shm_upgrade.h"
#include "collectives/transports/tcp/socket.h"
#include "common/status_macros.h"

namespace gradsync {

namespace {

// State shared by the communicator and its outstanding Work handles, so
// that a handle can abort the communicator even after it was destroyed.
class Core {
 public:
  Core(int rank, int size, const TcpOptions& options)
      : rank_(rank), size_(size), options_(options) {}

  // Chooses each peer's transport and builds its pair (shm_upgrade.h).
  [[nodiscard]] absl::Status Connect(std::vector<Socket> sockets) {
    ASSIGN_OR_RETURN(conns_,
                     MakePairs(std::move(sockets), rank_, options_, &aborted_));
    for (auto& c : conns_) {
      peers_.push_back(c.get());
      if (auto* tcp = dynamic_cast<Connection*>(c.get())) {
        tcp_.push_back(tcp);
      }
    }
    return absl::OkStatus();
  }

  int rank() const { return rank_; }
  int size() const { return size_; }
  const TcpOptions& options() const { return options_; }
  absl::Span<Pair* const> peers() const { return peers_; }
  // The peers reached over TCP (for their socket buffers).
  absl::Span<Connection* const> tcp_peers() const { return tcp_; }

  // First failure wins; later calls fail with ABORTED quoting it.
  void Abort(const absl::Status& reason) {
    {
      absl::MutexLock lock(&mu_);
      if (error_.ok()) error_ = reason;
    }
    aborted_.store(true);
    for (auto& c : conns_) {
      if (c) c->Shutdown();
    }
  }

  [[nodiscard]] absl::Status CheckUsable() {
    if (!aborted_.load()) return absl::OkStatus();
    absl::MutexLock lock(&mu_);
    return absl::AbortedError(
        absl::StrCat("rank ", rank_,
                     ": the communicator failed earlier and cannot be "
                     "used any more (create a new one); first error: ",
                     error_.message()));
  }

  // Ranks whose connections are already closed, for error messages.
  //
  // A dying process closes its connections one by one, and a peer that saw
  // it die aborts and closes its own: so the picture is given a moment to
  // settle (until nothing new closed for 20 ms, at most 200 ms). This runs
  // on the error path only.
  std::string ClosedPeers() const {
    std::vector<int> closed = ClosedNow();
    const absl::Time give_up = absl::Now() + absl::Milliseconds(200);
    while (absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(20));
      std::vector<int> later = ClosedNow();
      if (later == closed) break;
      closed = std::move(later);
    }
    if (closed.empty()) return "";
    return absl::StrCat("; connections already closed by rank(s) ",
                        absl::StrJoin(closed, ", "),
                        " (a rank that dies or fails closes all of them)");
  }

 private:
  std::vector<int> ClosedNow() const {
    std::vector<int> closed;
    for (const auto& c : conns_) {
      if (c && c->PeerClosed()) closed.push_back(c->peer());
    }
    return closed;
  }

  const int rank_;
  const int size_;
  const TcpOptions options_;
  std::atomic<bool> aborted_{false};
  std::vector<std::unique_ptr<Pair>> conns_;
  std::vector<Pair*> peers_;
  std::vector<Connection*> tcp_;
  absl::Mutex mu_;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

class TcpCommunicator final : public Communicator {
 public:
  TcpCommunicator(std::shared_ptr<Core> core)
      : core_(std::move(core)),
        scratch_(core_->options().sub_block_bytes),
        send_buffer_bytes_(core_->options().socket_buffer_bytes) {
    progress_ = std::thread([this] { ProgressLoop(); });
  }

  ~TcpCommunicator() override {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    progress_.join();
  }

  int rank() const override { return core_->rank(); }
  int size() const override { return core_->size(); }
  absl::Duration timeout() const override { return core_->options().timeout; }

  std::unique_ptr<Work> AllReduceAsync(const void* send, void* recv,
                                       size_t count, DataType type,
                                       ReduceOp op) override {
    // A flat communicator: no placement, so never the hierarchy (an
    // invalid type fails in Enqueue whatever is chosen).
    AllReduceChoice choice;
    choice.configured = core_->options().algorithm;
    choice.bytes = IsValid(type) ? count * DataTypeSize(type) : 0;
    choice.halving_doubling_max_bytes =
        core_->options().halving_doubling_max_bytes;
    return Enqueue(CollectiveKind::kAllReduce, send, recv, count, count, type,
                   op, 0, ChooseAllReduceAlgorithm(choice));
  }

  std::unique_ptr<Work> ReduceScatterAsync(const void* send, void* recv,
                                           size_t recv_count, DataType type,
                                           ReduceOp op) override {
    return Enqueue(CollectiveKind::kReduceScatter, send, recv, recv_count,
                   recv_count * size(), type, op, 0, AllReduceAlgorithm::kRing);
  }

  std::unique_ptr<Work> AllGatherAsync(const void* send, void* recv,
                                       size_t send_count,
                                       DataType type) override {
    return Enqueue(CollectiveKind::kAllGather, send, recv, send_count,
                   send_count * size(), type, ReduceOp::kSum, 0,
                   AllReduceAlgorithm::kRing);
  }

  std::unique_ptr<Work> BroadcastAsync(const void* send, void* recv,
                                       size_t count, DataType type,
                                       int root) override {
    return Enqueue(CollectiveKind::kBroadcast, send, recv, count, count, type,
                   ReduceOp::kSum, root, AllReduceAlgorithm::kRing);
  }

  std::unique_ptr<Work> BarrierAsync() override {
    // A one-element halving-doubling all-reduce: log2(N) dependent rounds.
    return Enqueue(CollectiveKind::kBarrier, nullptr, nullptr, 1, 1,
                   DataType::kInt32, ReduceOp::kSum, 0,
                   AllReduceAlgorithm::kHalvingDoubling);
  }

  void Abort(const absl::Status& reason) override {
    core_->Abort(absl::AbortedError(absl::StrCat(
        "rank ", rank(), ": communicator aborted: ", reason.message())));
  }

 private:
  struct Op {
    CollectiveHeader header;
    const void* send;
    void* recv;
    std::shared_ptr<ProgressWork> work;
  };

  std::unique_ptr<Work> Enqueue(CollectiveKind kind, const void* send,
                                void* recv, size_t count, size_t buffer_count,
                                DataType type, ReduceOp op, int root,
                                AllReduceAlgorithm algo) {
    const std::string name(CollectiveName(kind));
    if (!IsValid(type) || !IsValid(op)) {
      return MakeDoneWork(absl::InvalidArgumentError(
          absl::StrCat(name, ": invalid data type or reduction op (", int(type),
                       ", ", int(op), ")")));
    }
    if (kind != CollectiveKind::kBarrier && buffer_count > 0 &&
        (send == nullptr || recv == nullptr)) {
      return MakeDoneWork(absl::InvalidArgumentError(
          absl::StrCat(name, ": null buffer for ", buffer_count, " elements")));
    }
    if (root < 0 || root >= size()) {
      return MakeDoneWork(absl::InvalidArgumentError(absl::StrCat(
          name, ": root ", root, " is not a rank of this communicator (size ",
          size(), ")")));
    }
    if (absl::Status s = core_->CheckUsable(); !s.ok()) {
      return MakeDoneWork(s);
    }
    Op item;
    std::memset(&item.header, 0, sizeof(item.header));
    item.header.magic = kHeaderMagic;
    item.header.kind = static_cast<uint8_t>(kind);
    item.header.type = static_cast<uint8_t>(type);
    item.header.op = static_cast<uint8_t>(op);
    item.header.algorithm = static_cast<uint8_t>(algo);
    item.header.count = count;
    item.header.root = root;
    item.header.from_rank = rank();
    item.send = send;
    item.recv = recv;
    absl::MutexLock lock(&mu_);
    item.header.seq = next_seq_++;
    std::shared_ptr<Core> core = core_;
    item.work = std::make_shared<ProgressWork>(
        DescribeCollective(item.header), [core](const std::string& what) {
          const absl::Status expired = absl::DeadlineExceededError(
              absl::StrCat("rank ", core->rank(), ": ", what,
                           " did not complete before the caller's deadline; "
                           "aborting the communicator",
                           core->ClosedPeers()));
          // Aborting shuts the sockets, so the collective ends promptly.
          core->Abort(expired);
          return expired;
        });
    auto handle = std::make_unique<ProgressWorkHandle>(item.work);
    queue_.push_back(std::move(item));
    return handle;
  }

  void ProgressLoop() {
    while (true) {
      Op op;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](TcpCommunicator* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(c->mu_) {
              return c->stop_ || !c->queue_.empty();
            },
            this));
        if (queue_.empty()) return;  // stop_ and nothing left
        op = std::move(queue_.front());
        queue_.pop_front();
      }
      op.work->Start();
      op.work->Finish(Run(op));
    }
  }

  // Gives every connection the send buffer that suits a collective of
  // `message_bytes`, if the last one needed another. Runs between
  // collectives, when no send is in flight.
  [[nodiscard]] absl::Status SizeSendBuffers(size_t message_bytes) {
    const int bytes = SendBufferBytesFor(core_->options(), message_bytes);
    if (bytes <= 0 || bytes == send_buffer_bytes_) return absl::OkStatus();
    for (Connection* c : core_->tcp_peers()) {
      RETURN_IF_ERROR(c->SetSendBuffer(bytes));
    }
    send_buffer_bytes_ = bytes;
    return absl::OkStatus();
  }

  [[nodiscard]] absl::Status Run(Op& op) {
    RETURN_IF_ERROR(core_->CheckUsable());
    CollectiveContext ctx;
    ctx.rank = rank();
    ctx.size = size();
    ctx.peers = core_->peers();
    ctx.segment_bytes = core_->options().segment_bytes;
    ctx.header = op.header;
    ctx.deadline = absl::Now() + core_->options().timeout;
    ctx.scratch = scratch_.data();
    ctx.scratch_bytes = scratch_.size();
    const size_t count = op.header.count;
    const auto kind = static_cast<CollectiveKind>(op.header.kind);
    const bool per_rank_count = kind == CollectiveKind::kReduceScatter ||
                                kind == CollectiveKind::kAllGather;
    const size_t message_bytes =
        count * DataTypeSize(ctx.type()) * (per_rank_count ? size() : 1);
    ctx.spin_polls = message_bytes <= core_->options().spin_max_bytes
                         ? core_->options().spin_polls
                         : 0;
    RETURN_IF_ERROR(SizeSendBuffers(message_bytes));
    if (op.header.kind ==
        static_cast<uint8_t>(CollectiveKind::kReduceScatter)) {
      const size_t spare_bytes = 2 * count * DataTypeSize(ctx.type());
      if (spare_.size() < spare_bytes) spare_.resize(spare_bytes);
    }
    ctx.spare = spare_.data();
    absl::Status s;
    switch (static_cast<CollectiveKind>(op.header.kind)) {
      case CollectiveKind::kAllReduce:
        s = static_cast<AllReduceAlgorithm>(op.header.algorithm) ==
                    AllReduceAlgorithm::kHalvingDoubling
                ? HalvingDoublingAllReduce(ctx, op.send, op.recv, count)
                : RingAllReduce(ctx, op.send, op.recv, count);
        break;
      case CollectiveKind::kReduceScatter:
        s = RingReduceScatter(ctx, op.send, op.recv, count);
        break;
      case CollectiveKind::kAllGather:
        s = RingAllGather(ctx, op.send, op.recv, count);
        break;
      case CollectiveKind::kBroadcast:
        s = ChainBroadcast(ctx, op.send, op.recv, count, op.header.root);
        break;
      case CollectiveKind::kBarrier: {
        int32_t token = 1;
        s = HalvingDoublingAllReduce(ctx, &token, &token, 1);
        break;
      }
    }
    if (s.ok()) return s;
    const absl::Status failed(
        s.code(),
        absl::StrCat("rank ", rank(), ": ", DescribeCollective(op.header),
                     " failed: ", s.message(), core_->ClosedPeers()));
    core_->Abort(failed);
    return failed;
  }

  std::shared_ptr<Core> core_;
  // A sub-block receive buffer, allocated once; and the reduce-scatter's
  // two spare blocks, grown to the largest block seen and then reused.
  // Only the progress thread touches them (and send_buffer_bytes_).
  std::vector<char> scratch_;
  std::vector<char> spare_;
  // What the connections' send buffers are set to now.
  int send_buffer_bytes_;

  absl::Mutex mu_;
  std::deque<Op> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 1;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread progress_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> CreateTcpCommunicator(
    Store* store, int rank, int size, const TcpOptions& options) {
  if (size < 1 || rank < 0 || rank >= size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is not in a world of size ", size));
  }
  if (options.segment_bytes < 64 || options.sub_block_bytes < 64) {
    return absl::InvalidArgumentError(
        "segment_bytes and sub_block_bytes must be at least 64");
  }
  // Before rendezvous: a refused algorithm fails before peers can see us.
  RETURN_IF_ERROR(CheckCongestionControl(options.congestion_control));
  ASSIGN_OR_RETURN(std::vector<Socket> sockets,
                   ConnectAllPeers(store, rank, size, options));
  auto core = std::make_shared<Core>(rank, size, options);
  RETURN_IF_ERROR(core->Connect(std::move(sockets)));
  return std::unique_ptr<Communicator>(new TcpCommunicator(std::move(core)));
}

int SpinPollsForHost(int spin_polls, int ranks_on_host, int cores) {
  if (ranks_on_host <= 0 || cores <= 0) return spin_polls;
  return ranks_on_host > cores ? 0 : spin_polls;
}

}  // namespace gradsync
