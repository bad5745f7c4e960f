#include "collectives/host_identity.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collectives/prefix_store.h"
#include "common/host.h"
#include "common/status_macros.h"

namespace gradsync {
namespace {

std::string BootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!std::getline(in, id)) return "no-boot-id";
  id = std::string(absl::StripAsciiWhitespace(id));
  return id.empty() ? "no-boot-id" : id;
}

// "net:[4026531840]": processes in different network namespaces reach
// each other only through their interfaces, as `gradsync lab`'s emulated
// hosts (one kernel, one /dev/shm) must.
std::string NetworkNamespace() {
  char link[64] = {0};
  const ssize_t n = readlink("/proc/self/ns/net", link, sizeof(link) - 1);
  return n > 0 ? std::string(link, static_cast<size_t>(n)) : "no-netns";
}

}  // namespace

std::string HostIdentity(absl::string_view host_name) {
  return absl::StrCat(host_name, "/", BootId(), "/", NetworkNamespace());
}

std::string LocalHostIdentity() { return HostIdentity(HostName()); }

absl::StatusOr<std::vector<std::string>> ExchangeHostIdentities(
    Store* store, int rank, int size, absl::string_view host_id,
    absl::Duration timeout, const std::atomic<bool>* cancelled) {
  PrefixStore hier(store, "hier");
  RETURN_IF_ERROR(hier.Set(absl::StrCat("host/", rank), host_id));
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back(absl::StrCat("host/", r));
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    // With a cancel flag, wait in short slices so that it is noticed.
    const absl::Time until =
        cancelled == nullptr
            ? deadline
            : std::min(deadline, absl::Now() + absl::Milliseconds(100));
    absl::Status s = hier.Wait(keys, until);
    if (s.ok()) break;
    if (!absl::IsDeadlineExceeded(s)) return s;
    if (cancelled != nullptr && cancelled->load()) {
      return absl::CancelledError(absl::StrCat(
          "rank ", rank,
          ": rendezvous cancelled while learning the ranks' host identities"));
    }
    if (absl::Now() < deadline) continue;
    std::vector<int> missing;
    for (int r = 0; r < size; ++r) {
      if (!hier.Get(keys[r], absl::InfinitePast()).ok()) missing.push_back(r);
    }
    return absl::DeadlineExceededError(absl::StrCat(
        "rank ", rank, ": rank(s) ", absl::StrJoin(missing, ", "),
        " never published a host identity (store key hier/host/<rank>) "
        "within ",
        absl::FormatDuration(timeout),
        "; check that their workers are running and in this generation of "
        "the job"));
  }
  std::vector<std::string> ids(size);
  for (int r = 0; r < size; ++r) {
    ASSIGN_OR_RETURN(ids[r], hier.Get(keys[r], deadline));
  }
  return ids;
}

}  // namespace gradsync
