// The C API's parameter-server part (gradsync_c.h, "the job's parameter
// server"): a PsClient (server/ps/client/ps_client.h) over the job's shards, as
// a built-in rank's PsSync uses it, with the shards' layout, token, transport
// and timeouts taken from the rank's RankLaunch. Also the job's mode, scripted
// switches and runtime switch directives.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/model_init/parameter_state.h"
#include "common/optimizer.h"
#include "common/status_macros.h"
#include "jobspec/grad_dtype.h"
#include "jobspec/job_spec.h"
#include "proto/coordinator.pb.h"
#include "proto/ps.pb.h"
#include "python/capi/capi_internal.h"
#include "python/capi/gradsync_c.h"
#include "server/ps/client/ps_client.h"
#include "server/ps/client/ps_step.h"

struct gs_ps {
  gs_session* session = nullptr;
  std::unique_ptr<gradsync::PsClient> client;
  gradsync::ps::CreateShardRequest base;  // what seeding creates
  gradsync::OptimizerKind kind = gradsync::OptimizerKind::kSum;
  absl::Duration timeout;
  absl::Mutex mu;
  std::unique_ptr<gradsync::PsStep> step ABSL_GUARDED_BY(mu);
  absl::Status aborted ABSL_GUARDED_BY(mu);
};

namespace gradsync {
namespace {

constexpr absl::Duration kDefaultTimeout = absl::Minutes(5);

absl::Duration CollectiveTimeout(const RankLaunch& launch) {
  return launch.collective_timeout_ms() > 0
             ? absl::Milliseconds(launch.collective_timeout_ms())
             : kDefaultTimeout;
}

[[nodiscard]] absl::StatusOr<OptimizerSpec> SpecFrom(const gs_ps_optimizer& o,
                                                     OptimizerKind* kind) {
  if (o.name == nullptr) {
    return absl::InvalidArgumentError("no PS optimizer name");
  }
  ASSIGN_OR_RETURN(*kind, ParseOptimizerKind(o.name));
  OptimizerConfig config;
  config.kind = *kind;
  config.lr = o.lr;
  config.weight_decay = o.weight_decay;
  config.momentum = o.momentum;
  config.dampening = o.dampening;
  config.nesterov = o.nesterov != 0;
  config.beta1 = o.beta1;
  config.beta2 = o.beta2;
  config.eps = o.eps;
  if (*kind != OptimizerKind::kMomentum) {
    config.momentum = 0.9;
    config.dampening = 0;
  }
  RETURN_IF_ERROR(ValidateOptimizerConfig(config));
  if (config.dampening != 0) {
    return absl::InvalidArgumentError(
        "the PS's momentum has no dampening: use dampening=0, or the sum-only "
        "PS (the rank's own optimizer)");
  }
  OptimizerSpec spec;
  spec.set_name(std::string(OptimizerKindName(*kind)));
  spec.set_learning_rate(o.lr);
  spec.set_weight_decay(o.weight_decay);
  spec.set_momentum(config.momentum);
  spec.set_nesterov(config.nesterov);
  spec.set_beta1(o.beta1);
  spec.set_beta2(o.beta2);
  spec.set_epsilon(o.eps);
  return spec;
}

std::unique_ptr<PsStep> TakeStep(gs_ps* ps) {
  absl::MutexLock lock(&ps->mu);
  return std::move(ps->step);
}

}  // namespace
}  // namespace gradsync

using gradsync::Fail;

extern "C" {

int gs_session_mode(const gs_session* s) {
  return s->launch.assignment().spec().mode() == gradsync::SYNC_MODE_PS ? 2 : 1;
}

size_t gs_session_num_switches(const gs_session* s) {
  return static_cast<size_t>(s->launch.assignment().spec().switches_size());
}

int gs_session_switch(const gs_session* s, size_t i, int64_t* step,
                      int32_t* mode) {
  const auto& switches = s->launch.assignment().spec().switches();
  if (i >= static_cast<size_t>(switches.size())) {
    return Fail(absl::StatusCode::kOutOfRange,
                absl::StrCat("the job has ", switches.size(),
                             " scripted switches, not ", i + 1));
  }
  *step = switches[static_cast<int>(i)].step();
  *mode =
      switches[static_cast<int>(i)].mode() == gradsync::SYNC_MODE_PS ? 2 : 1;
  return 0;
}

int gs_session_await_switch(gs_session* s, int64_t epoch, int64_t timeout_ms,
                            int32_t* mode) {
  using namespace gradsync;
  if (epoch <= 0 || mode == nullptr) {
    return Fail(absl::StatusCode::kInvalidArgument,
                absl::StrCat("switch epoch ", epoch, ": it must be > 0"));
  }
  const std::string key = absl::StrCat("switch/", epoch);
  absl::StatusOr<std::string> got =
      s->store->Get(key, absl::Now() + absl::Milliseconds(timeout_ms));
  if (!got.ok()) return Fail(got.status());
  SwitchDirective directive;
  if (!directive.ParseFromString(*got) || directive.epoch() != epoch) {
    return Fail(absl::StatusCode::kDataLoss,
                absl::StrCat("the job store's ", key,
                             " is not switch directive ", epoch));
  }
  if (directive.ps_addresses_size() > 0) {
    absl::MutexLock lock(&s->ps_mu);
    s->ps_addresses.assign(directive.ps_addresses().begin(),
                           directive.ps_addresses().end());
  }
  *mode = directive.mode() == SYNC_MODE_PS ? 2 : 1;
  return 0;
}

int gs_ps_open(gs_session* s, size_t total, const gs_ps_optimizer* optimizer,
               gs_ps** out) {
  using namespace gradsync;
  if (s == nullptr || optimizer == nullptr || out == nullptr || total == 0) {
    return Fail(absl::StatusCode::kInvalidArgument,
                "gs_ps_open needs a session, an optimizer and a vector of at "
                "least one element");
  }
  auto ps = std::make_unique<gs_ps>();
  ps->session = s;
  absl::StatusOr<OptimizerSpec> spec = SpecFrom(*optimizer, &ps->kind);
  if (!spec.ok()) return Fail(spec.status());
  std::vector<std::string> addresses;
  {
    absl::MutexLock lock(&s->ps_mu);
    addresses = s->ps_addresses;
  }
  const RankLaunch& launch = s->launch;
  const Assignment& assignment = launch.assignment();
  if (addresses.empty()) {
    return Fail(absl::StatusCode::kFailedPrecondition,
                absl::StrCat("job ", assignment.job_id(),
                             " has no parameter-server shards: submit it with "
                             "--mode ps (or switch it to ps) on a cluster "
                             "with a gradsync-ps registered"));
  }
  const PsSpec& ps_spec = assignment.spec().ps();
  const size_t partition = static_cast<size_t>(PsPartitionBytes(ps_spec));
  absl::StatusOr<std::vector<PsShardLocation>> shards =
      PartitionedShardLocations(total, addresses, partition);
  if (!shards.ok()) return Fail(shards.status());
  ps->timeout = CollectiveTimeout(launch);
  PsClientOptions options;
  options.chunk_bytes = ps_spec.chunk_bytes() > 0
                            ? static_cast<size_t>(ps_spec.chunk_bytes())
                            : gradsync::kDefaultChunkBytes;
  options.timeout = ps->timeout;
  options.transport.congestion_control = launch.tcp_congestion_control().empty()
                                             ? "auto"
                                             : launch.tcp_congestion_control();
  options.transport.security = s->security;
  options.token = assignment.ps_token();
  options.tensor_plane = launch.ps_tensor_plane();
  // The job's gradient wire type. The spec refuses a 16-bit type for an
  // entrypoint job today (jobspec/job_spec.cc: DDP's compress hooks do
  // that there), so this is fp32; taken from the spec all the same, so
  // the shards and this client always agree.
  absl::StatusOr<DataType> wire =
      ParseGradDtype(assignment.spec().grad_dtype());
  if (!wire.ok()) return Fail(wire.status());
  options.wire_dtype = *wire;
  const size_t num_shards = shards->size();
  absl::StatusOr<std::unique_ptr<PsClient>> client = PsClient::Create(
      assignment.job_id(), launch.rank(), total, *std::move(shards), options);
  if (!client.ok()) return Fail(client.status());
  ps->client = *std::move(client);
  ps::CreateShardRequest& base = ps->base;
  base.set_job_id(assignment.job_id());
  base.set_num_shards(static_cast<int32_t>(num_shards));
  base.set_total_elements(static_cast<int64_t>(total));
  base.set_num_workers(assignment.world_size());
  *base.mutable_optimizer() = *std::move(spec);
  base.set_mode(ps::UPDATE_MODE_SYNC);
  base.set_seeded(true);
  base.set_wait_timeout_ms(absl::ToInt64Milliseconds(ps->timeout));
  // The shards average (rank order), as DDP's all-reduce hook does.
  base.set_sum_gradients(false);
  base.set_wire_dtype(GradDtypeName(*wire));
  *out = ps.release();
  return 0;
}

void gs_ps_close(gs_ps* ps) {
  if (ps == nullptr) return;
  gradsync::TakeStep(ps).reset();
  delete ps;
}

int gs_ps_seed(gs_ps* ps, int64_t step, const float* params,
               const float* const* state, size_t n_state,
               uint64_t optimizer_step) {
  using namespace gradsync;
  const size_t total = ps->client->total_elements();
  if (params == nullptr || n_state != NumStateBuffers(ps->kind) ||
      (n_state > 0 && state == nullptr) || step < 0) {
    return Fail(
        absl::StatusCode::kInvalidArgument,
        absl::StrCat("seeding the PS: optimizer ", OptimizerKindName(ps->kind),
                     " keeps ", NumStateBuffers(ps->kind),
                     " state buffers; got ", n_state));
  }
  ParameterState seed;
  seed.step = step;
  seed.params.assign(params, params + total);
  seed.optimizer.kind = ps->kind;
  seed.optimizer.step = optimizer_step;
  seed.optimizer.size = total;
  for (size_t i = 0; i < n_state; ++i) {
    seed.optimizer.buffers.emplace_back(state[i], state[i] + total);
  }
  ps::CreateShardRequest base = ps->base;
  base.set_first_step(step);
  const int rank = ps->session->launch.rank();
  const int world = ps->session->launch.assignment().world_size();
  for (size_t k = static_cast<size_t>(rank); k < ps->client->num_shards();
       k += static_cast<size_t>(world)) {
    if (int code = Fail(ps->client->CreateAndSeedShard(k, base, seed))) {
      return code;
    }
  }
  return 0;
}

int gs_ps_start(gs_ps* ps, int64_t step, const float* grads, float* out,
                double lr) {
  using namespace gradsync;
  const size_t total = ps->client->total_elements();
  if (grads == nullptr || out == nullptr) {
    return Fail(absl::StatusCode::kInvalidArgument, "no gradient or output");
  }
  PsStepControl control;
  control.learning_rate = lr;
  absl::MutexLock lock(&ps->mu);
  if (!ps->aborted.ok()) return Fail(ps->aborted);
  if (ps->step != nullptr) {
    return Fail(absl::StatusCode::kFailedPrecondition,
                absl::StrCat("PS step ", step, " started while step ",
                             ps->step->step(), " is still in flight"));
  }
  absl::StatusOr<std::unique_ptr<PsStep>> started =
      ps->client->StartStep(step, absl::MakeConstSpan(grads, total),
                            absl::MakeSpan(out, total), std::move(control));
  if (!started.ok()) return Fail(started.status());
  ps->step = *std::move(started);
  return 0;
}

int gs_ps_ready(gs_ps* ps, size_t begin, size_t end) {
  absl::MutexLock lock(&ps->mu);
  if (ps->step == nullptr) {
    return Fail(absl::StatusCode::kFailedPrecondition,
                "gradient ready with no PS step started");
  }
  ps->step->Ready(begin, end);  // a bad range fails the step's Finish
  return 0;
}

int gs_ps_finish(gs_ps* ps, int64_t timeout_ms, gs_ps_result* result) {
  using namespace gradsync;
  gradsync::PsStep* step = nullptr;
  {
    absl::MutexLock lock(&ps->mu);
    step = ps->step.get();
  }
  if (step == nullptr) {
    return Fail(absl::StatusCode::kFailedPrecondition, "no PS step to finish");
  }
  // Only this thread ends the step: reading it outside the lock is safe,
  // and gs_ps_abort reaches it through Cancel meanwhile.
  const absl::Duration timeout =
      timeout_ms > 0 ? absl::Milliseconds(timeout_ms) : ps->timeout;
  absl::StatusOr<PsStepResult> done = step->Finish(absl::Now() + timeout);
  TakeStep(ps).reset();
  if (!done.ok()) return Fail(done.status());
  if (result != nullptr) {
    result->bytes_sent = done->bytes_sent;
    result->bytes_received = done->bytes_received;
    result->busy_s = absl::ToDoubleSeconds(done->busy);
  }
  return 0;
}

int gs_ps_fetch(gs_ps* ps, int64_t step, float* params, float* const* state,
                size_t n_state, uint64_t* optimizer_step) {
  using namespace gradsync;
  if (params == nullptr || n_state != NumStateBuffers(ps->kind) ||
      (n_state > 0 && state == nullptr)) {
    return Fail(absl::StatusCode::kInvalidArgument,
                absl::StrCat("fetching the PS state: optimizer ",
                             OptimizerKindName(ps->kind), " keeps ",
                             NumStateBuffers(ps->kind), " state buffers; got ",
                             n_state));
  }
  absl::StatusOr<ParameterState> got = ps->client->FetchState(step);
  if (!got.ok()) return Fail(got.status());
  const size_t total = ps->client->total_elements();
  if (got->params.size() != total || got->optimizer.buffers.size() != n_state) {
    return Fail(
        absl::StatusCode::kDataLoss,
        absl::StrCat("the PS returned ", got->params.size(), " parameters and ",
                     got->optimizer.buffers.size(), " state buffers; expected ",
                     total, " and ", n_state));
  }
  std::memcpy(params, got->params.data(), total * sizeof(float));
  for (size_t i = 0; i < n_state; ++i) {
    if (got->optimizer.buffers[i].size() != total) {
      return Fail(absl::StatusCode::kDataLoss,
                  "the PS returned a state buffer of the wrong length");
    }
    std::memcpy(state[i], got->optimizer.buffers[i].data(),
                total * sizeof(float));
  }
  if (optimizer_step != nullptr) *optimizer_step = got->optimizer.step;
  return 0;
}

int gs_ps_release(gs_ps* ps) { return Fail(ps->client->ReleaseShards()); }

void gs_ps_abort(gs_ps* ps, const char* reason) {
  const absl::Status status =
      absl::AbortedError(reason != nullptr ? reason : "aborted");
  ps->client->Cancel(status);
  absl::MutexLock lock(&ps->mu);
  if (ps->aborted.ok()) ps->aborted = status;
  if (ps->step != nullptr) ps->step->Cancel(status);
}

}  // extern "C"
