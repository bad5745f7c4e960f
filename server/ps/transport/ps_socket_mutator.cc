#include "server/ps/transport/ps_socket_mutator.h"

#include <grpc/support/sync.h>
#include <grpcpp/version_info.h>
#include <string.h>

#include <type_traits>
#include <utility>
#include <vector>

#include "common/tcp_congestion.h"

#if GRPC_CPP_VERSION_MAJOR == 1 && GRPC_CPP_VERSION_MINOR == 51
#define GRADSYNC_GRPC_SOCKET_MUTATOR 1
#else
#define GRADSYNC_GRPC_SOCKET_MUTATOR 0
#endif

#if GRADSYNC_GRPC_SOCKET_MUTATOR
// gRPC 1.51.1's src/core/lib/iomgr/socket_mutator.h, which Debian's
// libgrpc-dev does not install: the types gRPC's core calls through, and
// the one function (exported by libgrpc) that initialises the base.
typedef enum {
  GRPC_FD_CLIENT_CONNECTION_USAGE,
  GRPC_FD_SERVER_LISTENER_USAGE,
  GRPC_FD_SERVER_CONNECTION_USAGE,
} grpc_fd_usage;

typedef struct {
  int fd;
  grpc_fd_usage usage;
} grpc_mutate_socket_info;

struct grpc_socket_mutator_vtable {
  bool (*mutate_fd)(int fd, grpc_socket_mutator* mutator);
  int (*compare)(grpc_socket_mutator* a, grpc_socket_mutator* b);
  void (*destroy)(grpc_socket_mutator* mutator);
  bool (*mutate_fd_2)(const grpc_mutate_socket_info* info,
                      grpc_socket_mutator* mutator);
};

struct grpc_socket_mutator {
  const grpc_socket_mutator_vtable* vtable;
  gpr_refcount refcount;
};

void grpc_socket_mutator_init(grpc_socket_mutator* mutator,
                              const grpc_socket_mutator_vtable* vtable);
#endif

namespace gradsync {
namespace {

#if GRADSYNC_GRPC_SOCKET_MUTATOR

// gRPC casts between the two: `base` must come first, and the whole must
// stay standard-layout.
struct CongestionMutator {
  grpc_socket_mutator base;
  // The algorithm for the channel's connections.
  char name[kMaxCongestionControlName + 1];
};
static_assert(std::is_standard_layout_v<CongestionMutator>);

CongestionMutator* Self(grpc_socket_mutator* m) {
  return reinterpret_cast<CongestionMutator*>(m);
}

void Apply(int fd, grpc_fd_usage usage, CongestionMutator* self) {
  if (usage == GRPC_FD_SERVER_LISTENER_USAGE) return;
  // Best effort: a named algorithm passed CheckCongestionControl, and a
  // false return would make gRPC drop the connection.
  SetTcpCongestionControl(fd, self->name).IgnoreError();
}

bool MutateFd2(const grpc_mutate_socket_info* info, grpc_socket_mutator* m) {
  Apply(info->fd, info->usage, Self(m));
  return true;
}

int Compare(grpc_socket_mutator* a, grpc_socket_mutator* b) {
  return strcmp(Self(a)->name, Self(b)->name);
}

void Destroy(grpc_socket_mutator* m) { delete Self(m); }

// gRPC 1.51 calls mutate_fd only where mutate_fd_2 is null.
constexpr grpc_socket_mutator_vtable kVtable = {nullptr, Compare, Destroy,
                                                MutateFd2};

// A new mutator with one reference, which the caller hands to gRPC;
// `name` fits (the callers check).
grpc_socket_mutator* NewMutator(const std::string& name) {
  auto* m = new CongestionMutator{};
  memcpy(m->name, name.data(), name.size());
  m->name[name.size()] = '\0';
  grpc_socket_mutator_init(&m->base, &kVtable);
  return &m->base;
}

#endif  // GRADSYNC_GRPC_SOCKET_MUTATOR

}  // namespace

bool SocketMutatorSupported() { return GRADSYNC_GRPC_SOCKET_MUTATOR != 0; }

void SetClientCongestionControl(grpc::ChannelArguments* args,
                                const std::string& policy,
                                const std::string& target) {
  // Split at the last colon, as the daemons' addresses are; "[v6]" keeps
  // its brackets, which HostIsLocal takes.
  const std::string host = target.substr(0, target.rfind(':'));
  const std::string name = CongestionControlFor(policy, HostIsLocal(host));
  // A name the kernel could not hold is refused by CheckCongestionControl
  // (PsClient::Create); here it only must not be truncated to another.
  if (name.empty() || name.size() > kMaxCongestionControlName) return;
#if GRADSYNC_GRPC_SOCKET_MUTATOR
  args->SetSocketMutator(NewMutator(name));
#else
  (void)args;
#endif
}

void SetAcceptedCongestionControl(int fd, const std::string& policy) {
  const std::string name = CongestionControlFor(policy, TcpPeerIsLocal(fd));
  // Best effort: a named algorithm passed CheckCongestionControl.
  if (!name.empty()) SetTcpCongestionControl(fd, name).IgnoreError();
}

}  // namespace gradsync
