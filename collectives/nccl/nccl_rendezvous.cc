#include "collectives/nccl/nccl_rendezvous.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collectives/nccl/cuda_util.h"
#include "collectives/nccl/nccl_comm_state.h"
#include "common/status_macros.h"

namespace gradsync {
namespace nccl_internal {
namespace {

constexpr int kMaxRanksChecked = 1024;
constexpr int kMaxRanksNamed = 16;

std::string JoinedKey(int rank) { return absl::StrCat("nccl/joined/", rank); }

[[nodiscard]] absl::Status DecodeUniqueId(absl::string_view value,
                                          absl::string_view job_id,
                                          absl::string_view ranks,
                                          ncclUniqueId* id) {
  const size_t newline = value.rfind('\n');
  if (newline == absl::string_view::npos) {
    return absl::FailedPreconditionError(absl::StrCat(
        "store key '", kUniqueIdKey, "' seen by ", ranks,
        " is not a gradsync NCCL unique id; is another program using this "
        "store namespace?"));
  }
  const absl::string_view owner = value.substr(0, newline);
  if (owner != job_id) {
    return absl::FailedPreconditionError(absl::StrCat(
        ranks, " of job '", job_id, "' found the NCCL unique id of job '",
        owner, "' under '", kUniqueIdKey,
        "'; namespace the store per job and generation (PrefixStore)"));
  }
  std::string raw;
  if (!absl::Base64Unescape(value.substr(newline + 1), &raw) ||
      raw.size() != sizeof(ncclUniqueId)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "store key '", kUniqueIdKey, "' seen by ", ranks, " holds ", raw.size(),
        " bytes instead of a ", sizeof(ncclUniqueId),
        "-byte NCCL unique id (NCCL version mismatch between ranks?)"));
  }
  std::memcpy(id, raw.data(), sizeof(ncclUniqueId));
  return absl::OkStatus();
}

}  // namespace

std::string RankRange(int first, int count) {
  if (count == 1) return absl::StrCat("rank ", first);
  return absl::StrCat("ranks ", first, "-", first + count - 1);
}

absl::StatusOr<ncclUniqueId> ExchangeUniqueId(Store* store, bool is_root,
                                              absl::string_view job_id,
                                              absl::string_view ranks,
                                              absl::Time deadline) {
  ncclUniqueId id;
  if (is_root) {
    RETURN_IF_ERROR(NcclStatus(ncclGetUniqueId(&id),
                               absl::StrCat("ncclGetUniqueId on ", ranks),
                               nullptr));
    const std::string encoded = absl::StrCat(
        job_id, "\n",
        absl::Base64Escape(absl::string_view(id.internal, sizeof(id))));
    RETURN_IF_ERROR(Annotate(store->Set(kUniqueIdKey, encoded),
                             absl::StrCat(ranks, " publishing the NCCL id")));
    return id;
  }
  absl::StatusOr<std::string> value = store->Get(kUniqueIdKey, deadline);
  if (!value.ok()) {
    if (absl::IsDeadlineExceeded(value.status())) {
      return absl::DeadlineExceededError(
          absl::StrCat(ranks,
                       " waited for the NCCL unique id that rank 0 publishes "
                       "under '",
                       kUniqueIdKey,
                       "' and it never came; rank 0 has not "
                       "started or failed (check its log): ",
                       value.status().message()));
    }
    return Annotate(value.status(),
                    absl::StrCat(ranks, " fetching the NCCL unique id"));
  }
  RETURN_IF_ERROR(DecodeUniqueId(*value, job_id, ranks, &id));
  return id;
}

absl::Status MarkJoined(Store* store, int rank, absl::string_view job_id) {
  return Annotate(store->Set(JoinedKey(rank), job_id),
                  absl::StrCat("rank ", rank, " announcing itself"));
}

std::string DescribeMissingRanks(Store* store, int size) {
  std::vector<int> missing;
  bool store_failed = false;
  const int checked = std::min(size, kMaxRanksChecked);
  for (int r = 0; r < checked; ++r) {
    absl::StatusOr<std::string> joined =
        store->Get(JoinedKey(r), absl::InfinitePast());
    if (joined.ok()) continue;
    if (!absl::IsDeadlineExceeded(joined.status())) {
      store_failed = true;
      break;
    }
    missing.push_back(r);
  }
  if (store_failed) {
    return "the store could not be asked which ranks joined";
  }
  if (missing.empty()) {
    return absl::StrCat(
        "every rank", checked < size ? " checked" : "",
        " reached init, so NCCL could not connect them: check the network "
        "between the hosts (NCCL_SOCKET_IFNAME, firewalls) and run with "
        "NCCL_DEBUG=INFO");
  }
  const bool truncated = missing.size() > kMaxRanksNamed;
  if (truncated) missing.resize(kMaxRanksNamed);
  return absl::StrCat(missing.size() == 1 && !truncated ? "rank " : "ranks ",
                      absl::StrJoin(missing, ", "), truncated ? ", ..." : "",
                      " never joined (check ",
                      missing.size() == 1 ? "its" : "their", " logs)");
}

absl::Status AwaitInit(std::vector<ncclComm_t>& comms,
                       const std::vector<int>& devices, Store* store,
                       absl::string_view ranks, int world_size,
                       absl::Duration timeout_for_message,
                       absl::Time deadline) {
  absl::Status status;
  for (int polls = 0;; ++polls) {
    bool all_ready = true;
    for (ncclComm_t comm : comms) {
      ncclResult_t state = ncclSuccess;
      ncclResult_t result = ncclCommGetAsyncError(comm, &state);
      if (result == ncclSuccess) result = state;
      if (result == ncclInProgress) {
        all_ready = false;
      } else if (result != ncclSuccess) {
        status = NcclStatus(
            result,
            absl::StrCat("NCCL init of ", ranks, " of ", world_size, " failed"),
            comm);
        break;
      }
    }
    if (!status.ok() || all_ready) break;
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      status = absl::DeadlineExceededError(absl::StrCat(
          "NCCL init of ", ranks, " of ", world_size, " timed out after ",
          absl::FormatDuration(timeout_for_message), "; ",
          DescribeMissingRanks(store, world_size)));
      break;
    }
    const absl::Duration pause = PollPause(polls, deadline - now);
    absl::SleepFor(std::max(pause, absl::Microseconds(100)));
  }
  if (!status.ok()) {
    for (size_t i = 0; i < comms.size(); ++i) {
      if (comms[i] == nullptr) continue;
      ScopedCudaDevice scoped(devices[i]);
      (void)ncclCommAbort(comms[i]);
      comms[i] = nullptr;
    }
  }
  return status;
}

}  // namespace nccl_internal
}  // namespace gradsync
