// The sync paths and their switches (sync_path.h).
#include "worker/train/sync_path.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "jobspec/grad_dtype.h"
#include "proto/ps.pb.h"
#include "server/ps/client/ps_client.h"
#include "worker/train/checkpoint.h"
#include "worker/train/ring_sync.h"

namespace gradsync {
namespace {

ps::UpdateMode ToProto(PsUpdate update) {
  switch (update) {
    case PsUpdate::kAsync:
      return ps::UPDATE_MODE_ASYNC;
    case PsUpdate::kSsp:
      return ps::UPDATE_MODE_SSP;
    case PsUpdate::kSync:
      break;
  }
  return ps::UPDATE_MODE_SYNC;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SyncPathController>> SyncPathController::Create(
    const TrainerConfig& config, Communicator* comm, TrainModel* model,
    SwitchSource switches, DeviceCommFactory device_comms, int step_scalars,
    std::string* operation) {
  ASSIGN_OR_RETURN(Optimizer optimizer,
                   Optimizer::Create(config.optimizer, model->params().size()));
  std::unique_ptr<SyncPathController> controller(new SyncPathController(
      config, comm, model, std::move(switches), std::move(device_comms),
      step_scalars, operation, std::move(optimizer)));
  RingSyncOptions ring;
  ring.bucket_bytes = config.bucket_bytes;
  ring.wire_type = config.grad_dtype;
  ASSIGN_OR_RETURN(controller->ring_,
                   RingSync::Create(comm, model->grads(), ring));
  controller->sync_ = controller->ring_.get();
  return controller;
}

SyncPathController::SyncPathController(const TrainerConfig& config,
                                       Communicator* comm, TrainModel* model,
                                       SwitchSource switches,
                                       DeviceCommFactory device_comms,
                                       int step_scalars, std::string* operation,
                                       Optimizer optimizer)
    : config_(config),
      comm_(comm),
      model_(model),
      switches_(std::move(switches)),
      device_comms_(std::move(device_comms)),
      step_scalars_(step_scalars),
      operation_(operation),
      rank_(comm->rank()),
      world_(comm->size()),
      ps_addresses_(config.ps.addresses),
      optimizer_(std::move(optimizer)) {}

SyncPathController::~SyncPathController() = default;

void SyncPathController::AbortAfterFailure(const absl::Status& cause) {
  sync_->Abort(cause);
  if (sync_ != ring_.get()) ring_->Abort(cause);
}

absl::Status SyncPathController::OptimizerStep() {
  if (device_ring_ != nullptr) return device_ring_->OptimizerStep();
  return optimizer_.Step(model_->params(), model_->grads());
}

absl::StatusOr<uint64_t> SyncPathController::DeviceHash() {
  return device_ring_->HashParams();
}

absl::Status SyncPathController::DownloadParams() {
  return device_ring_->DownloadParams();
}

absl::Status SyncPathController::FinishPs(int64_t num_steps) {
  return LeavePs(num_steps, /*resume=*/false);
}

absl::Status SyncPathController::ImportOptimizerState(
    const OptimizerState& state) {
  return optimizer_.ImportState(state);
}

OptimizerState SyncPathController::ExportOptimizerState() const {
  return optimizer_.ExportState();
}

void SyncPathController::Abort(const absl::Status& reason) {
  absl::MutexLock lock(&abort_mu_);
  if (aborted_.ok()) {
    aborted_ = reason.ok() ? absl::CancelledError("aborted") : reason;
  }
  ring_->Abort(aborted_);
  if (ps_ != nullptr) ps_->Abort(aborted_);
  if (seeding_ != nullptr) seeding_->Cancel(aborted_);
  if (device_ring_ != nullptr) device_ring_->Abort(aborted_);
}

int64_t SyncPathController::HeardEpoch() const {
  return switches_.heard_epoch == nullptr ? 0 : switches_.heard_epoch->load();
}

absl::Status SyncPathController::NoteDecision(int64_t step,
                                              const SyncStats& stats) {
  if (stats.switch_epoch <= decided_epoch_) return absl::OkStatus();
  if (stats.switch_step <= step) {
    return absl::InternalError(absl::StrCat(
        "switch request ", stats.switch_epoch, " was decided for step ",
        stats.switch_step, ", which this rank has already run"));
  }
  if (pending_.has_value()) {
    return absl::InternalError(absl::StrCat(
        "switch request ", stats.switch_epoch, " was decided for step ",
        stats.switch_step, " while request ", pending_->epoch,
        " still waits for step ", pending_->step));
  }
  decided_epoch_ = stats.switch_epoch;
  pending_ = Decision{stats.switch_epoch, stats.switch_step};
  return absl::OkStatus();
}

absl::Status SyncPathController::TakePathOf(int64_t step, int64_t first_step,
                                            int64_t* epoch) {
  *epoch = 0;
  SyncPath target = path_;
  if (step == first_step) {
    // The spec's mode, then the scripted switches up to here (a resumed
    // job starts where the run that wrote its checkpoint was).
    target = config_.initial_path;
    for (const ScriptedSwitch& s : config_.switches) {
      if (s.step <= step) target = s.path;
    }
  }
  for (const ScriptedSwitch& s : config_.switches) {
    if (s.step == step) target = s.path;
  }
  if (pending_.has_value() && pending_->step < step) {
    return absl::InternalError(absl::StrCat("switch request ", pending_->epoch,
                                            " for step ", pending_->step,
                                            " was never acted on"));
  }
  if (pending_.has_value() && pending_->step == step) {
    *operation_ = absl::StrCat("reading switch request ", pending_->epoch);
    if (!switches_.directive) {
      return absl::FailedPreconditionError(
          "the ranks agreed on a runtime switch, but this rank has no "
          "source of switch directives");
    }
    ASSIGN_OR_RETURN(SwitchDirective directive,
                     switches_.directive(pending_->epoch,
                                         absl::Now() + config_.comm_timeout));
    if (directive.mode() == SYNC_MODE_PS) {
      target = SyncPath::kPs;
    } else if (directive.mode() == SYNC_MODE_RING) {
      target = SyncPath::kRing;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("switch request ", pending_->epoch, " names mode ",
                       static_cast<int>(directive.mode())));
    }
    if (path_ == SyncPath::kRing && directive.ps_addresses_size() > 0) {
      ps_addresses_.assign(directive.ps_addresses().begin(),
                           directive.ps_addresses().end());
    }
    *epoch = pending_->epoch;
    pending_.reset();
  }
  if (step == first_step && target == SyncPath::kPs) return EnterPs(step);
  if (step == first_step && config_.ring_backend == RingBackend::kNccl) {
    if (config_.resume_from.empty()) return StartDeviceRing(step, nullptr);
    // Resumed (even from a checkpoint of step 0, which another writer may
    // make): the device ring starts from the checkpoint's state.
    const OptimizerState state = optimizer_.ExportState();
    return StartDeviceRing(step, &state);
  }
  if (target == path_) return absl::OkStatus();
  return target == SyncPath::kPs ? EnterPs(step)
                                 : LeavePs(step, /*resume=*/true);
}

absl::Status SyncPathController::StartDeviceRing(int64_t step,
                                                 const OptimizerState* state) {
  *operation_ = absl::StrCat("NCCL communicator setup before step ", step);
  ASSIGN_OR_RETURN(std::unique_ptr<Communicator> device_comm,
                   device_comms_(step, absl::Now() + config_.comm_timeout));
  *operation_ = absl::StrCat("start of the NCCL ring before step ", step);
  DeviceRingOptions options;
  options.device_comm = std::move(device_comm);
  options.host_comm = comm_;
  options.optimizer = config_.optimizer;
  options.state = state;
  options.bucket_bytes = config_.bucket_bytes;
  options.wire_type = config_.grad_dtype;
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceRing> ring,
                   model_->StartDeviceRing(std::move(options)));
  {
    absl::MutexLock lock(&abort_mu_);
    device_ring_ = std::move(ring);
    if (!aborted_.ok()) device_ring_->Abort(aborted_);
  }
  sync_ = device_ring_->sync();
  return absl::OkStatus();
}

void SyncPathController::StopDeviceRing() {
  sync_ = ring_.get();
  std::unique_ptr<DeviceRing> ring;
  {
    absl::MutexLock lock(&abort_mu_);
    ring = std::move(device_ring_);
  }
  // Outside the lock: finalizing the NCCL communicator may take a while,
  // and Abort must not wait for it.
  ring.reset();
}

absl::Status SyncPathController::SeedShards(int64_t step, int num_shards,
                                            OptimizerState optimizer_state,
                                            PsClient* client) {
  if (rank_ >= num_shards) return absl::OkStatus();
  const absl::Span<const float> params = model_->params();
  ParameterState state;
  state.step = step;
  state.params.assign(params.begin(), params.end());
  state.optimizer = std::move(optimizer_state);
  ps::CreateShardRequest base;
  base.set_job_id(config_.ps.job_id);
  base.set_num_shards(num_shards);
  base.set_total_elements(static_cast<int64_t>(params.size()));
  base.set_num_workers(world_);
  *base.mutable_optimizer() = config_.ps.optimizer;
  base.set_mode(ToProto(config_.ps.update));
  base.set_staleness(config_.ps.staleness);
  base.set_first_step(step);
  base.set_seeded(true);
  base.set_wait_timeout_ms(absl::ToInt64Milliseconds(config_.comm_timeout));
  base.set_sum_gradients(config_.ps.update == PsUpdate::kSync);
  // The job's gradient type: a 16-bit job's shards take 16-bit gradients
  // and send 16-bit parameters (the seed above stays fp32).
  base.set_wire_dtype(GradDtypeName(config_.grad_dtype));
  for (int k = rank_; k < num_shards; k += world_) {
    RETURN_IF_ERROR(
        client->CreateAndSeedShard(static_cast<size_t>(k), base, state));
  }
  return absl::OkStatus();
}

absl::Status SyncPathController::EnterPs(int64_t step) {
  *operation_ =
      absl::StrCat("switch to the parameter server before step ", step);
  if (ps_addresses_.empty()) {
    return absl::FailedPreconditionError(
        "the coordinator placed no parameter-server shard for this job; "
        "start a gradsync-ps with --coordinator and switch again");
  }
  const absl::Time deadline = absl::Now() + config_.comm_timeout;
  absl::Span<float> params = model_->params();
  const size_t n = params.size();
  OptimizerState optimizer_state;
  if (device_ring_ != nullptr) {
    // The device holds the parameters and the optimizer state: bring
    // them to the host for the shards, then end the NCCL ring.
    RETURN_IF_ERROR(device_ring_->DownloadParams());
    ASSIGN_OR_RETURN(optimizer_state, device_ring_->ExportOptimizerState());
    StopDeviceRing();
  } else {
    optimizer_state = optimizer_.ExportState();
  }
  ASSIGN_OR_RETURN(
      std::vector<PsShardLocation> shards,
      PartitionedShardLocations(n, ps_addresses_, config_.ps.partition_bytes));
  const int num_shards = static_cast<int>(shards.size());
  PsClientOptions options;
  options.chunk_bytes = config_.ps.chunk_bytes;
  options.timeout = config_.comm_timeout;
  options.transport.congestion_control = config_.ps.tcp_congestion;
  options.transport.security = config_.ps.security;
  options.token = config_.ps.token;
  options.tensor_plane = config_.ps.tensor_plane;
  options.wire_dtype = config_.grad_dtype;
  ASSIGN_OR_RETURN(std::unique_ptr<PsClient> client,
                   PsClient::Create(config_.ps.job_id, rank_, n,
                                    std::move(shards), options));
  {
    absl::MutexLock lock(&abort_mu_);
    seeding_ = client.get();
    if (!aborted_.ok()) seeding_->Cancel(aborted_);
  }
  // Rank r seeds shards r, r + N, ...: the ranks' states are identical.
  const absl::Status seeded =
      SeedShards(step, num_shards, std::move(optimizer_state), client.get());
  {
    absl::MutexLock lock(&abort_mu_);
    seeding_ = nullptr;
  }
  RETURN_IF_ERROR(seeded);
  *operation_ = absl::StrCat("barrier after seeding the PS before step ", step);
  RETURN_IF_ERROR(comm_->BarrierAsync()->Wait(deadline));
  ASSIGN_OR_RETURN(std::unique_ptr<PsSync> ps,
                   PsSync::Create(std::move(client), comm_, model_->grads(),
                                  params, config_.ps.update, step_scalars_));
  {
    absl::MutexLock lock(&abort_mu_);
    ps_ = std::move(ps);
    if (!aborted_.ok()) ps_->Abort(aborted_);
  }
  sync_ = ps_.get();
  path_ = SyncPath::kPs;
  return absl::OkStatus();
}

absl::StatusOr<ParameterState> SyncPathController::FetchPsState(int64_t step) {
  ASSIGN_OR_RETURN(ParameterState state, ps_->client().FetchState(step));
  if (state.params.size() != model_->params().size()) {
    return absl::DataLossError(
        absl::StrCat("the PS returned ", state.params.size(),
                     " parameters; the model has ", model_->params().size()));
  }
  if (config_.ps.update == PsUpdate::kSync && state.step != step) {
    return absl::DataLossError(
        absl::StrCat("the PS returned the state of "
                     "step ",
                     state.step, " instead of ", step));
  }
  return state;
}

absl::Status SyncPathController::LeavePs(int64_t step, bool resume) {
  *operation_ =
      absl::StrCat("switch from the parameter server before step ", step);
  const absl::Time deadline = absl::Now() + config_.comm_timeout;
  ASSIGN_OR_RETURN(ParameterState state, FetchPsState(step));
  std::copy(state.params.begin(), state.params.end(), model_->params().begin());
  const bool device_ring = resume && config_.ring_backend == RingBackend::kNccl;
  if (!device_ring) RETURN_IF_ERROR(optimizer_.ImportState(state.optimizer));
  *operation_ =
      absl::StrCat("barrier after fetching the PS state before step ", step);
  RETURN_IF_ERROR(comm_->BarrierAsync()->Wait(deadline));
  if (rank_ == 0) {
    // Best effort: the coordinator also has the servers drop the shards of
    // jobs that ended.
    ps_->client().ReleaseShards().IgnoreError();
  }
  sync_ = ring_.get();
  {
    absl::MutexLock lock(&abort_mu_);
    ps_.reset();
  }
  path_ = SyncPath::kRing;
  // The device ring uploads the parameters and the optimizer state.
  if (device_ring) return StartDeviceRing(step, &state.optimizer);
  return absl::OkStatus();
}

absl::Status SyncPathController::Checkpoint(int64_t done, bool last,
                                            const RootedDir* dir,
                                            const std::string& name) {
  if (path_ == SyncPath::kRing) {
    if (dir == nullptr) return absl::OkStatus();
    if (device_ring_ != nullptr) {
      // Run downloads them after the last step itself.
      if (!last) RETURN_IF_ERROR(device_ring_->DownloadParams());
      ASSIGN_OR_RETURN(OptimizerState state,
                       device_ring_->ExportOptimizerState());
      return WriteCheckpoint(*dir, name, done, model_->params(), state);
    }
    return WriteCheckpoint(*dir, name, done, model_->params(),
                           optimizer_.ExportState());
  }
  // The optimizer state lives on the shards: the writers fetch it while the
  // others wait, so that no push of the next step changes it meanwhile.
  const absl::Time deadline = absl::Now() + config_.comm_timeout;
  RETURN_IF_ERROR(comm_->BarrierAsync()->Wait(deadline));
  if (dir != nullptr) {
    ASSIGN_OR_RETURN(ParameterState state, FetchPsState(done));
    RETURN_IF_ERROR(
        WriteCheckpoint(*dir, name, done, state.params, state.optimizer));
  }
  return comm_->BarrierAsync()->Wait(deadline);
}

std::string SyncPathController::PsTransport() const {
  return path_ == SyncPath::kPs && ps_ != nullptr ? ps_->client().transport()
                                                  : "";
}

}  // namespace gradsync
