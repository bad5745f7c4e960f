// The C API (gradsync_c.h) over the C++ core: the rank's job session
// (rank file -> coordinator store, report pipe) and communicators.
#include "python/capi/gradsync_c.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "collectives/host_identity.h"
#include "collectives/prefix_store.h"
#include "collectives/store.h"
#include "collectives/tcp/host_aware_communicator.h"
#include "collectives/tcp/tcp_communicator.h"
#include "common/host.h"
#include "common/status_macros.h"
#include "proto/coordinator.pb.h"
#include "python/capi/capi_internal.h"
#include "security/tls.h"
#include "server/coordinator/grpc_coordinator_client.h"
#include "study/alpha_beta/sync_bandwidth.h"
#include "worker/daemon/coordinator_store.h"
#include "worker/launch/report_wire.h"

struct gs_comm {
  std::unique_ptr<gradsync::Communicator> comm;
};

namespace gradsync {

std::string& LastError() {
  thread_local std::string last_error;
  return last_error;
}

int Fail(const absl::Status& status) {
  LastError() = std::string(status.message());
  return status.ok() ? 0 : static_cast<int>(status.code());
}

int Fail(absl::StatusCode code, absl::string_view message) {
  return Fail(absl::Status(code, message));
}

namespace {

absl::Status FromCode(int code, absl::string_view what) {
  if (code == 0) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(code),
                      absl::StrCat(what, ": the store callback said ",
                                   absl::StatusCodeToString(
                                       static_cast<absl::StatusCode>(code))));
}

// A Store over gs_store_callbacks (a torch Store, through ctypes).
class CallbackStore final : public Store {
 public:
  explicit CallbackStore(gs_store_callbacks callbacks) : cb_(callbacks) {}

  absl::Status Set(absl::string_view key, absl::string_view value) override {
    const std::string k(key);
    return FromCode(cb_.set(cb_.ctx, k.c_str(), value.data(), value.size()),
                    absl::StrCat("store set '", key, "'"));
  }
  absl::StatusOr<std::string> Get(absl::string_view key,
                                  absl::Time deadline) override {
    const std::string k(key);
    gs_buffer out;
    const int64_t ms =
        std::max<int64_t>(absl::ToInt64Milliseconds(deadline - absl::Now()), 1);
    const int code = cb_.get(cb_.ctx, k.c_str(), ms, &out);
    if (code == static_cast<int>(absl::StatusCode::kDeadlineExceeded)) {
      return absl::DeadlineExceededError(
          absl::StrCat("store key '", key, "' did not appear in ", ms,
                       " ms: a peer did not reach the rendezvous"));
    }
    RETURN_IF_ERROR(FromCode(code, absl::StrCat("store get '", key, "'")));
    return std::move(out.bytes);
  }
  absl::StatusOr<int64_t> Add(absl::string_view key, int64_t delta) override {
    const std::string k(key);
    int64_t result = 0;
    RETURN_IF_ERROR(FromCode(cb_.add(cb_.ctx, k.c_str(), delta, &result),
                             absl::StrCat("store add '", key, "'")));
    return result;
  }
  absl::Status Wait(const std::vector<std::string>& keys,
                    absl::Time deadline) override {
    for (const std::string& key : keys) {
      absl::StatusOr<std::string> got = Get(key, deadline);
      if (!got.ok()) return got.status();
    }
    return absl::OkStatus();
  }

 private:
  const gs_store_callbacks cb_;
};

bool ValidType(int dtype) { return dtype >= 0 && dtype <= 2; }
bool ValidOp(int op) { return op >= 0 && op <= 3; }

}  // namespace
}  // namespace gradsync

using gradsync::Fail;

extern "C" {

const char* gs_last_error(void) { return gradsync::LastError().c_str(); }
const char* gs_version(void) { return "0.1.0"; }

int gs_session_open(const char* rank_file, gs_session** out) {
  using namespace gradsync;
  if (rank_file == nullptr || out == nullptr) {
    return Fail(absl::StatusCode::kInvalidArgument, "no rank file");
  }
  std::ifstream in(rank_file, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  auto session = std::make_unique<gs_session>();
  if (!in || !session->launch.ParseFromString(bytes.str())) {
    return Fail(absl::StatusCode::kNotFound,
                absl::StrCat("cannot read the rank file ", rank_file,
                             ": this process was not started by a gradsync "
                             "worker (GRADSYNC_RANK_FILE), or the file was "
                             "removed"));
  }
  // Read once: the credentials need not stay on disk any longer (a daemon
  // killed with SIGKILL could not remove the file itself).
  unlink(rank_file);
  const RankLaunch& launch = session->launch;
  {
    absl::MutexLock lock(&session->ps_mu);
    session->ps_addresses.assign(launch.assignment().ps_addresses().begin(),
                                 launch.assignment().ps_addresses().end());
  }
  TlsOptions tls;
  tls.dir = launch.tls_dir();
  tls.insecure = launch.tls_dir().empty();
  absl::StatusOr<GrpcSecurity> security =
      SecurityFromOptions(tls, TlsRole::kDaemon);
  if (!security.ok()) return Fail(security.status());
  session->security = *security;
  CoordinatorChannelOptions channel;
  channel.security = *security;
  session->client = NewGrpcCoordinatorClient(
      NewCoordinatorChannel(launch.coordinator(), channel),
      launch.coordinator(), DaemonCoordinatorClientOptions());
  StoreScope scope;
  scope.set_worker_id(launch.worker_id());
  scope.set_job_id(launch.assignment().job_id());
  scope.set_generation(launch.assignment().generation());
  scope.set_credential(launch.credential());
  session->store =
      std::make_unique<CoordinatorStore>(session->client, std::move(scope));
  if (const char* fd = getenv("GRADSYNC_REPORT_FD")) {
    int n = -1;
    if (absl::SimpleAtoi(fd, &n) && n >= 0 && fcntl(n, F_GETFD) >= 0) {
      session->report_fd = n;
    }
  }
  *out = session.release();
  return 0;
}

void gs_session_close(gs_session* session) { delete session; }

int gs_session_rank(const gs_session* s) { return s->launch.rank(); }
int gs_session_world_size(const gs_session* s) {
  return s->launch.assignment().world_size();
}
int gs_session_local_rank(const gs_session* s) {
  return s->launch.local_rank();
}

int gs_store_set(gs_session* s, const char* key, const void* value,
                 size_t size) {
  return Fail(s->store->Set(
      key, absl::string_view(static_cast<const char*>(value), size)));
}

int gs_store_get(gs_session* s, const char* key, int64_t timeout_ms,
                 gs_buffer* out) {
  absl::StatusOr<std::string> got =
      s->store->Get(key, absl::Now() + absl::Milliseconds(timeout_ms));
  if (!got.ok()) return Fail(got.status());
  out->bytes = *std::move(got);
  return 0;
}

int gs_store_add(gs_session* s, const char* key, int64_t delta,
                 int64_t* result) {
  absl::StatusOr<int64_t> got = s->store->Add(key, delta);
  if (!got.ok()) return Fail(got.status());
  *result = *got;
  return 0;
}

int gs_store_wait(gs_session* s, const char* const* keys, size_t n,
                  int64_t timeout_ms) {
  std::vector<std::string> list(keys, keys + n);
  return Fail(
      s->store->Wait(list, absl::Now() + absl::Milliseconds(timeout_ms)));
}

int gs_report_step(gs_session* s, const gs_step_report* r) {
  using namespace gradsync;
  if (s->report_fd < 0) return 0;  // not under a daemon: nowhere to report
  StepMetrics m;
  m.set_rank(s->launch.rank());
  m.set_step(r->step);
  if (r->loss >= 0) m.set_loss(r->loss);
  m.set_compute_s(r->compute_s);
  m.set_comm_s(r->comm_s);
  m.set_idle_s(r->idle_s);
  m.set_step_s(r->step_s);
  m.set_bytes_sent(r->bytes_sent);
  m.set_bytes_received(r->bytes_received);
  m.set_samples(r->samples);
  m.set_sync_bytes(r->sync_bytes);
  m.set_sync_busy_s(r->sync_busy_s);
  m.set_mode(r->mode == 2 ? SYNC_MODE_PS : SYNC_MODE_RING);
  if (r->mode == 2) {
    // The transport the daemon chose for the job (a server without a
    // plane would take gRPC, which this does not see).
    m.set_ps_transport(s->launch.ps_tensor_plane() ? "plane" : "grpc");
  }
  // nccl-tests' terms, as the built-in ranks report them
  // (study/alpha_beta/sync_bandwidth.h): algbw = S / busy; on the ring busbw =
  // algbw * 2(N-1)/N.
  const double algbw =
      AlgorithmBandwidth(r->sync_bytes, absl::Seconds(r->sync_busy_s));
  m.set_algbw_gbps(algbw);
  m.set_busbw_gbps(algbw *
                   AllReduceBusFactor(s->launch.assignment().world_size()));
  m.set_wall_time(absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
  const std::string frame = EncodeReportFrame(m);
  absl::MutexLock lock(&s->report_mu);
  size_t done = 0;
  while (done < frame.size()) {
    const ssize_t n =
        write(s->report_fd, frame.data() + done, frame.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return Fail(absl::StatusCode::kUnavailable,
                  absl::StrCat("cannot write the step report to the worker "
                               "daemon: ",
                               strerror(errno)));
    }
    done += static_cast<size_t>(n);
  }
  return 0;
}

gs_buffer* gs_buffer_new(void) { return new gs_buffer(); }
void gs_buffer_free(gs_buffer* b) { delete b; }
const void* gs_buffer_data(const gs_buffer* b) { return b->bytes.data(); }
size_t gs_buffer_size(const gs_buffer* b) { return b->bytes.size(); }
void gs_buffer_assign(gs_buffer* b, const void* data, size_t size) {
  b->bytes.assign(static_cast<const char*>(data), size);
}

int gs_comm_create(gs_session* session, const gs_store_callbacks* callbacks,
                   int rank, int size, const gs_comm_options* options,
                   gs_comm** out) {
  using namespace gradsync;
  if (callbacks == nullptr || callbacks->set == nullptr ||
      callbacks->get == nullptr || callbacks->add == nullptr ||
      options == nullptr || out == nullptr) {
    return Fail(absl::StatusCode::kInvalidArgument,
                "gs_comm_create needs a store and options");
  }
  if (size < 1 || rank < 0 || rank >= size) {
    return Fail(absl::StatusCode::kInvalidArgument,
                absl::StrCat("rank ", rank, " is not in a group of ", size));
  }
  const RankLaunch* launch = session != nullptr ? &session->launch : nullptr;
  const std::string name = options->name != nullptr ? options->name : "pg";
  TcpOptions tcp;
  tcp.job_id = launch != nullptr
                   ? absl::StrCat(launch->assignment().job_id(), "/",
                                  launch->assignment().generation(), "/", name)
                   : name;
  if (launch != nullptr) tcp.job_secret = launch->assignment().job_secret();
  tcp.listen_host = options->listen_host != nullptr ? options->listen_host
                    : launch != nullptr && !launch->listen_host().empty()
                        ? launch->listen_host()
                        : "127.0.0.1";
  std::string transport = options->transport != nullptr ? options->transport
                          : launch != nullptr && !launch->transport().empty()
                              ? launch->transport()
                              : "auto";
  absl::StatusOr<Transport> parsed = ParseTransport(transport);
  if (!parsed.ok()) return Fail(parsed.status());
  tcp.transport = *parsed;
  const int64_t timeout_ms =
      options->timeout_ms > 0 ? options->timeout_ms
      : launch != nullptr && launch->collective_timeout_ms() > 0
          ? launch->collective_timeout_ms()
          : 60000;
  const int64_t connect_ms =
      options->connect_timeout_ms > 0 ? options->connect_timeout_ms
      : launch != nullptr && launch->rendezvous_timeout_ms() > 0
          ? launch->rendezvous_timeout_ms()
          : 120000;
  tcp.timeout = absl::Milliseconds(timeout_ms);
  tcp.connect_timeout = absl::Milliseconds(connect_ms);
  if (launch != nullptr && !launch->tcp_congestion_control().empty()) {
    tcp.congestion_control = launch->tcp_congestion_control();
  }
  const int on_host =
      launch != nullptr ? launch->assignment().ranks_on_host() : 1;
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  tcp.spin_polls = SpinPollsForHost(tcp.spin_polls, on_host,
                                    static_cast<int>(cores > 0 ? cores : 1));
  tcp.host_id =
      HostIdentity(launch != nullptr && !launch->host().empty() ? launch->host()
                                                                : HostName());
  HierarchicalOptions hier;
  hier.tcp = tcp;
  CallbackStore store(*callbacks);
  PrefixStore scoped(&store, absl::StrCat("gradsync/", name, "/"));
  absl::StatusOr<std::unique_ptr<Communicator>> comm =
      CreateHostAwareCommunicator(&scoped, rank, size, hier);
  if (!comm.ok()) return Fail(comm.status());
  *out = new gs_comm{*std::move(comm)};
  return 0;
}

void gs_comm_destroy(gs_comm* comm) { delete comm; }
int gs_comm_rank(const gs_comm* c) { return c->comm->rank(); }
int gs_comm_size(const gs_comm* c) { return c->comm->size(); }

int gs_comm_allreduce(gs_comm* c, void* buffer, size_t count, int dtype,
                      int op) {
  using namespace gradsync;
  if (!ValidType(dtype) || !ValidOp(op)) {
    return Fail(absl::StatusCode::kInvalidArgument, "bad dtype or op");
  }
  return Fail(c->comm->AllReduce(buffer, buffer, count,
                                 static_cast<DataType>(dtype),
                                 static_cast<ReduceOp>(op)));
}

int gs_comm_broadcast(gs_comm* c, void* buffer, size_t count, int dtype,
                      int root) {
  using namespace gradsync;
  if (!ValidType(dtype)) {
    return Fail(absl::StatusCode::kInvalidArgument, "bad dtype");
  }
  return Fail(c->comm->Broadcast(buffer, buffer, count,
                                 static_cast<DataType>(dtype), root));
}

int gs_comm_allgather(gs_comm* c, const void* send, void* recv, size_t count,
                      int dtype) {
  using namespace gradsync;
  if (!ValidType(dtype)) {
    return Fail(absl::StatusCode::kInvalidArgument, "bad dtype");
  }
  return Fail(
      c->comm->AllGather(send, recv, count, static_cast<DataType>(dtype)));
}

int gs_comm_barrier(gs_comm* c) { return Fail(c->comm->Barrier()); }

void gs_comm_abort(gs_comm* c, const char* reason) {
  c->comm->Abort(absl::AbortedError(reason != nullptr ? reason : "aborted"));
}

}  // extern "C"
