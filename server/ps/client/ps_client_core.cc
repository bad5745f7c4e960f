// PsClientCore (ps_client_core.h): the cancel machinery and the tensor
// plane connections that PsClient and its PsStep share.
#include "server/ps/client/ps_client_core.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gradsync {

PsClientCore::PsClientCore(std::string job_id, int rank, size_t total,
                           const PsClientOptions& options)
    : job_id(std::move(job_id)), rank(rank), total(total), options(options) {}

PsClientCore::~PsClientCore() = default;

std::vector<PsClientCore::ServerRun> PsClientCore::ServerRuns() const {
  std::vector<ServerRun> runs;
  for (size_t k = 0; k < shards.size(); ++k) {
    if (!runs.empty() &&
        shards[k].location.address == shards[k - 1].location.address) {
      runs.back().last = k;
    } else {
      runs.push_back({k, k});
    }
  }
  return runs;
}

PsClientCore::LiveCall::LiveCall(PsClientCore* core,
                                 grpc::ClientContext* context)
    : core_(core), context_(context) {
  absl::MutexLock lock(&core_->cancel_mu_);
  status_ = core_->cancelled_;
  core_->live_.push_back(context_);
}

PsClientCore::LiveCall::~LiveCall() {
  absl::MutexLock lock(&core_->cancel_mu_);
  std::vector<grpc::ClientContext*>& live = core_->live_;
  live.erase(std::find(live.begin(), live.end(), context_));
}

void PsClientCore::Cancel(const absl::Status& reason) {
  {
    absl::MutexLock lock(&cancel_mu_);
    if (cancelled_.ok()) {
      cancelled_ = reason.ok() ? absl::CancelledError("cancelled") : reason;
    }
    // TryCancel only flags the call; it neither blocks nor calls back.
    for (grpc::ClientContext* context : live_) context->TryCancel();
  }
  cancel_flag_.store(true);
  ShutdownPlanes();
}

absl::Status PsClientCore::cancelled() const {
  absl::MutexLock lock(&cancel_mu_);
  return cancelled_;
}

absl::Status PsClientCore::CancelledOr(absl::Status status) const {
  if (status.ok()) return status;
  absl::MutexLock lock(&cancel_mu_);
  if (cancelled_.ok()) return status;
  return absl::Status(cancelled_.code(),
                      absl::StrCat("ps call cancelled: ", cancelled_.message(),
                                   " (", status.message(), ")"));
}

void PsClientCore::SetPlaneSlots(size_t slots) {
  absl::MutexLock lock(&plane_mu_);
  planes_.resize(slots);
}

absl::StatusOr<TensorPlaneChannel*> PsClientCore::PlaneChannel(
    size_t k, absl::Time deadline) {
  const Shard& shard = shards[k];
  absl::MutexLock lock(&plane_mu_);
  std::unique_ptr<TensorPlaneChannel>& channel = planes_[shard.plane_slot];
  if (channel == nullptr) {
    PlaneIdentity identity;
    identity.job_id = job_id;
    identity.rank = rank;
    identity.token = options.token;
    absl::StatusOr<std::unique_ptr<TensorPlaneChannel>> connected =
        TensorPlaneChannel::Connect(shard.tensor_address,
                                    options.transport.congestion_control,
                                    identity, deadline, &cancel_flag_);
    if (!connected.ok()) return CancelledOr(connected.status());
    channel = *std::move(connected);
  }
  return channel.get();
}

void PsClientCore::ShutdownPlanes() {
  absl::MutexLock lock(&plane_mu_);
  for (const std::unique_ptr<TensorPlaneChannel>& channel : planes_) {
    if (channel != nullptr) channel->Shutdown();
  }
}

void PsClientCore::DropClosedPlanes() {
  absl::MutexLock lock(&plane_mu_);
  for (std::unique_ptr<TensorPlaneChannel>& channel : planes_) {
    if (channel != nullptr && channel->PeerClosed()) channel.reset();
  }
}

void PsClientCore::DropPlanes() {
  absl::MutexLock lock(&plane_mu_);
  for (std::unique_ptr<TensorPlaneChannel>& channel : planes_) channel.reset();
}

}  // namespace gradsync
