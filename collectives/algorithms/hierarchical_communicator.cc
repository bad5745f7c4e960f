#include "collectives/algorithms/hierarchical_communicator.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "collectives/algorithms/hierarchical_core.h"
#include "collectives/host_identity.h"
#include "collectives/host_placement.h"
#include "collectives/subgroup_store.h"
#include "common/status_macros.h"

namespace gradsync {
namespace {

// Hierarchical all-reduce of `count` elements, on a placement of H hosts
// where host h has L_h ranks, N ranks in all.
//
// Slicing. The buffer is cut into K = max_h L_h balanced contiguous slices
// (BalancedBlock), the same cut on every host whatever its size. On a host
// of L ranks, local rank j owns the slices [j*K/L, (j+1)*K/L): one slice
// each on the largest hosts, a contiguous run of several on smaller ones
// (3 + 1 ranks: K = 3; on host 0 ranks 0, 1, 2 own one slice each, rank 3
// alone on host 1 owns all three). Every slice thus has exactly one owner
// on every host, and an owner's slices form one contiguous range R_j.
//
// Step 0, staging. The intra-host reduce-scatter needs L equal blocks, so
// when the ranges R_j of this host differ in length (uneven hosts, or a
// count K does not divide) they are copied into a zeroed staging buffer of
// L blocks of B = max_j |R_j| elements, R_j at the start of block j. When
// they are equal the output buffer itself serves (after copying the input
// there unless in place).
//
// Step 1, reduce-scatter inside the host (the intra-host communicator's
// ring, L-1 steps): block j now holds the host's sum of R_j at local rank
// j. The zero padding is reduced too, and never read.
//
// Step 2, all-reduce across hosts: for each slice s it owns, the rank
// all-reduces s with the owners of s on the other hosts (the slice's
// communicator: H ranks, one per host, ordered by host). A rank that owns
// several slices runs their all-reduces at once, each on its own
// communicator. Every rank of a host is in step 2 at the same time, so the
// host's link carries all of its ranks' slices together: 2(H-1)/H * S
// bytes each way in all, where a flat ring puts 2(N-1)/N * S on it when
// ranks are numbered host by host, and a multiple of that when they are
// interleaved (every hop then leaves the host). For kAvg the slices are
// summed and then divided by N here, before they are shared.
//
// Step 3, all-gather inside the host (ring, L-1 steps): every local rank
// receives every R_j; staged ranges are copied back to the output.
//
// Identical bits everywhere: each slice's final value is computed once, by
// the slice communicator's all-reduce, which gives its H owners the same
// bits; step 3 only copies. Degenerate placements: on one host step 2 is
// empty (the result is the intra-host ring's); with one rank per host steps
// 1 and 3 are empty and step 2 is the flat all-reduce of one slice.
class HierarchicalCommunicator final : public Communicator {
 public:
  explicit HierarchicalCommunicator(std::shared_ptr<HierarchicalCore> core)
      : core_(std::move(core)) {
    progress_ = std::thread([this] { ProgressLoop(); });
  }

  ~HierarchicalCommunicator() override {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    progress_.join();
  }

  int rank() const override { return core_->rank(); }
  int size() const override { return core_->size(); }
  // The flat communicator's: every inner one is made with the same.
  absl::Duration timeout() const override { return core_->flat->timeout(); }

  std::unique_ptr<Work> AllReduceAsync(const void* send, void* recv,
                                       size_t count, DataType type,
                                       ReduceOp op) override {
    if (absl::Status s = Check("all-reduce", send, recv, count, type, op);
        !s.ok()) {
      return MakeDoneWork(s);
    }
    if (core_->Choose(count * DataTypeSize(type)) !=
        AllReduceAlgorithm::kHierarchical) {
      return Enqueue("all-reduce (flat)", [=](HierarchicalCore& c) {
        return WaitInner(*c.flat,
                         c.flat->AllReduceAsync(send, recv, count, type, op));
      });
    }
    return Enqueue(absl::StrCat("hierarchical all-reduce of ", count, " ",
                                DataTypeName(type)),
                   [=](HierarchicalCore& c) {
                     return HierarchicalAllReduce(c, send, recv, count, type,
                                                  op);
                   });
  }

  std::unique_ptr<Work> ReduceScatterAsync(const void* send, void* recv,
                                           size_t recv_count, DataType type,
                                           ReduceOp op) override {
    return Enqueue("reduce-scatter", [=](HierarchicalCore& c) {
      return WaitInner(*c.flat, c.flat->ReduceScatterAsync(
                                    send, recv, recv_count, type, op));
    });
  }

  std::unique_ptr<Work> AllGatherAsync(const void* send, void* recv,
                                       size_t send_count,
                                       DataType type) override {
    return Enqueue("all-gather", [=](HierarchicalCore& c) {
      return WaitInner(*c.flat,
                       c.flat->AllGatherAsync(send, recv, send_count, type));
    });
  }

  std::unique_ptr<Work> BroadcastAsync(const void* send, void* recv,
                                       size_t count, DataType type,
                                       int root) override {
    return Enqueue("broadcast", [=](HierarchicalCore& c) {
      return WaitInner(*c.flat,
                       c.flat->BroadcastAsync(send, recv, count, type, root));
    });
  }

  std::unique_ptr<Work> BarrierAsync() override {
    return Enqueue("barrier", [](HierarchicalCore& c) {
      return WaitInner(*c.flat, c.flat->BarrierAsync());
    });
  }

  void Abort(const absl::Status& reason) override {
    core_->Abort(absl::AbortedError(absl::StrCat(
        "rank ", rank(), ": communicator aborted: ", reason.message())));
  }

 private:
  using Body = std::function<absl::Status(HierarchicalCore&)>;
  struct Op {
    Body body;
    std::shared_ptr<ProgressWork> work;
  };

  // The all-reduce's own argument checks (the flat communicator checks
  // the other collectives'): bad arguments fail before anything is sent.
  [[nodiscard]] static absl::Status Check(absl::string_view what,
                                          const void* send, const void* recv,
                                          size_t count, DataType type,
                                          ReduceOp op) {
    if (!IsValid(type) || !IsValid(op)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": invalid data type or reduction op (", int(type),
                       ", ", int(op), ")"));
    }
    if (count > 0 && (send == nullptr || recv == nullptr)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": null buffer for ", count, " elements"));
    }
    return absl::OkStatus();
  }

  std::unique_ptr<Work> Enqueue(std::string what, Body body) {
    if (absl::Status s = core_->CheckUsable(); !s.ok()) {
      return MakeDoneWork(s);
    }
    Op op;
    op.body = std::move(body);
    std::shared_ptr<HierarchicalCore> core = core_;
    op.work = std::make_shared<ProgressWork>(
        std::move(what), [core](const std::string& what) {
          const absl::Status expired = absl::DeadlineExceededError(
              absl::StrCat("rank ", core->rank(), ": ", what,
                           " did not complete before the caller's deadline; "
                           "aborting the hierarchical communicator"));
          // Aborting closes the inner connections, so the collective ends
          // soon.
          core->Abort(expired);
          return expired;
        });
    auto handle = std::make_unique<ProgressWorkHandle>(op.work);
    absl::MutexLock lock(&mu_);
    queue_.push_back(std::move(op));
    return handle;
  }

  void ProgressLoop() {
    while (true) {
      Op op;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](HierarchicalCommunicator* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(
                 c->mu_) { return c->stop_ || !c->queue_.empty(); },
            this));
        if (queue_.empty()) return;  // stop_ and nothing left
        op = std::move(queue_.front());
        queue_.pop_front();
      }
      op.work->Start();
      absl::Status s = core_->CheckUsable();
      if (s.ok()) s = op.body(*core_);
      // Invalid arguments send nothing and leave the communicator usable,
      // as in the TCP backend; anything else may have left peers waiting.
      if (!s.ok() && !absl::IsInvalidArgument(s)) core_->Abort(s);
      op.work->Finish(std::move(s));
    }
  }

  // The algorithm described above the class.
  [[nodiscard]] absl::Status HierarchicalAllReduce(HierarchicalCore& c,
                                                   const void* send, void* recv,
                                                   size_t count, DataType type,
                                                   ReduceOp op) {
    const HostPlacement& p = c.placement();
    const int host = p.host_of(c.rank());
    const int local = static_cast<int>(p.members(host).size());
    const int j = p.local_rank(c.rank());
    const size_t k = static_cast<size_t>(p.slices());
    const size_t es = DataTypeSize(type);
    // R_i of every local rank i, and the block size B.
    std::vector<BlockRange> ranges(local);
    size_t block = 0;
    for (int i = 0; i < local; ++i) {
      const HostPlacement::SliceRun run = p.OwnedSlices(p.members(host)[i]);
      ranges[i] = {BalancedBlock(count, k, run.first).begin,
                   BalancedBlock(count, k, run.last - 1).end};
      block = std::max(block, ranges[i].size());
    }
    const bool staged = block * local != count;
    char* work = static_cast<char*>(recv);
    // Step 0.
    if (staged) {
      staging_.assign(block * local * es, 0);
      work = staging_.data();
      for (int i = 0; i < local; ++i) {
        std::memcpy(work + i * block * es,
                    static_cast<const char*>(send) + ranges[i].begin * es,
                    ranges[i].size() * es);
      }
    } else if (send != recv && count > 0) {
      std::memcpy(recv, send, count * es);
    }
    const ReduceOp inner_op = op == ReduceOp::kAvg ? ReduceOp::kSum : op;
    char* mine = work + j * block * es;
    // Step 1.
    if (c.intra) {
      RETURN_IF_ERROR(WaitInner(
          *c.intra,
          c.intra->ReduceScatterAsync(work, mine, block, type, inner_op)));
    }
    // Step 2: all owned slices at once; every handle is waited for, since
    // the buffers must stay valid until each inner collective is done.
    const HostPlacement::SliceRun run = p.OwnedSlices(c.rank());
    std::vector<std::unique_ptr<Work>> slices;
    for (size_t i = 0; i < c.slice_comms.size(); ++i) {
      const BlockRange s = BalancedBlock(count, k, run.first + i);
      char* at = mine + (s.begin - ranges[j].begin) * es;
      slices.push_back(
          c.slice_comms[i]->AllReduceAsync(at, at, s.size(), type, inner_op));
    }
    absl::Status first_error;
    for (size_t i = 0; i < slices.size(); ++i) {
      absl::Status s = WaitInner(*c.slice_comms[i], std::move(slices[i]));
      if (!s.ok() && first_error.ok()) {
        first_error = s;
        c.Abort(s);  // the other slices' peers must not wait for us
      }
    }
    RETURN_IF_ERROR(first_error);
    if (op == ReduceOp::kAvg) {
      DivideInPlace(type, mine, ranges[j].size(), c.size());
    }
    // Step 3.
    if (c.intra) {
      RETURN_IF_ERROR(WaitInner(
          *c.intra, c.intra->AllGatherAsync(mine, work, block, type)));
    }
    if (staged) {
      for (int i = 0; i < local; ++i) {
        std::memcpy(static_cast<char*>(recv) + ranges[i].begin * es,
                    work + i * block * es, ranges[i].size() * es);
      }
    }
    return absl::OkStatus();
  }

  std::shared_ptr<HierarchicalCore> core_;
  // Step 0's buffer, reused; only the progress thread touches it.
  std::vector<char> staging_;

  absl::Mutex mu_;
  std::deque<Op> queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread progress_;
};

// Adds which inner communicator failed to a creation error.
[[nodiscard]] absl::Status InContext(const absl::Status& s,
                                     absl::string_view which,
                                     const std::vector<int>& global_ranks) {
  return absl::Status(
      s.code(),
      absl::StrCat(which, " (its ranks 0.. are global ranks ",
                   absl::StrJoin(global_ranks, ", "), "): ", s.message()));
}

// "2 hosts of 3+1 ranks", in host order.
std::string DescribePlacement(const HostPlacement& p) {
  std::vector<int> counts;
  for (int h = 0; h < p.hosts(); ++h) {
    counts.push_back(static_cast<int>(p.members(h).size()));
  }
  return absl::StrCat(p.hosts(), p.hosts() == 1 ? " host of " : " hosts of ",
                      absl::StrJoin(counts, "+"),
                      p.ranks() == 1 ? " rank" : " ranks");
}

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> CreateHierarchicalCommunicator(
    Store* store, int rank, int size, const HierarchicalSettings& settings,
    const InnerCommunicatorFactory& make) {
  if (size < 1 || rank < 0 || rank >= size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is not in a world of size ", size));
  }
  if (!MayChooseHierarchical(settings.algorithm)) {
    return make(store, rank, size, "");
  }
  ASSIGN_OR_RETURN(
      const std::vector<std::string> ids,
      ExchangeHostIdentities(store, rank, size, settings.host_id,
                             settings.connect_timeout, settings.cancelled));
  auto core = std::make_shared<HierarchicalCore>(
      rank, size, HostPlacement::FromHostIds(ids), settings);
  const HostPlacement& p = core->placement();
  // The largest all-reduce: if even it runs flat, no hierarchy is needed.
  const bool hierarchical =
      core->Choose(SIZE_MAX) == AllReduceAlgorithm::kHierarchical;
  if (settings.on_placement) {
    settings.on_placement(absl::StrCat(
        DescribePlacement(p), ": ",
        settings.algorithm == AllReduceAlgorithm::kHierarchical
            ? "hierarchical all-reduce (forced)"
        : hierarchical
            ? absl::StrCat("hierarchical all-reduce from ", settings.min_bytes,
                           " bytes, flat below")
            : "flat all-reduce (hierarchical needs several hosts and "
              "two ranks on one)"));
  }
  if (!hierarchical) return make(store, rank, size, "");
  ASSIGN_OR_RETURN(core->flat, make(store, rank, size, ""));
  const int host = p.host_of(rank);
  const std::vector<int>& members = p.members(host);
  if (members.size() > 1) {
    const std::string name = absl::StrCat("hier/intra/", host);
    SubgroupStore intra_store(store, name, members);
    absl::StatusOr<std::unique_ptr<Communicator>> intra =
        make(&intra_store, p.local_rank(rank), static_cast<int>(members.size()),
             name);
    if (!intra.ok()) {
      return InContext(intra.status(),
                       absl::StrCat("communicator inside host ", host),
                       members);
    }
    core->intra = *std::move(intra);
  }
  if (p.hosts() > 1) {
    // Increasing slice order on every rank: a rank waiting for slice s's
    // peers waits only for ranks that finished all slices before s.
    const HostPlacement::SliceRun run = p.OwnedSlices(rank);
    for (int s = run.first; s < run.last; ++s) {
      const std::string name = absl::StrCat("hier/slice/", s);
      const std::vector<int> group = p.SliceGroup(s);
      SubgroupStore slice_store(store, name, group);
      absl::StatusOr<std::unique_ptr<Communicator>> comm =
          make(&slice_store, host, p.hosts(), name);
      if (!comm.ok()) {
        return InContext(
            comm.status(),
            absl::StrCat("communicator across hosts for slice ", s), group);
      }
      core->slice_comms.push_back(*std::move(comm));
    }
  }
  return std::unique_ptr<Communicator>(
      new HierarchicalCommunicator(std::move(core)));
}

}  // namespace gradsync
