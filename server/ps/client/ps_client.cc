#include "server/ps/client/ps_client.h"

#include <grpcpp/client_context.h>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collectives/half.h"
#include "common/grpc_connect.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "common/tcp_congestion.h"
#include "proto/ps.pb.h"
#include "server/ps/client/ps_client_stream.h"
#include "server/ps/transport/raw_tensor_rpc.h"
#include "server/ps/transport/shard_range.h"
#include "server/ps/transport/tensor_stream.h"

namespace gradsync {

absl::StatusOr<std::vector<PsShardLocation>> BalancedShardLocations(
    size_t total_elements, const std::vector<std::string>& addresses) {
  ASSIGN_OR_RETURN(
      const std::vector<ShardRange> ranges,
      BalancedShardRanges(total_elements, static_cast<int>(addresses.size())));
  std::vector<PsShardLocation> locations;
  for (size_t k = 0; k < addresses.size(); ++k) {
    locations.push_back(PsShardLocation{addresses[k], static_cast<int>(k),
                                        ranges[k].begin, ranges[k].end});
  }
  return locations;
}

std::vector<std::string> PartitionAddresses(
    size_t total_elements, const std::vector<std::string>& addresses,
    size_t partition_bytes) {
  if (addresses.empty() || partition_bytes == 0) return addresses;
  const size_t servers = addresses.size();
  const size_t largest = (total_elements + servers - 1) / servers;
  const size_t partition_floats =
      std::max<size_t>(1, partition_bytes / sizeof(float));
  size_t per_server = (largest + partition_floats - 1) / partition_floats;
  // No empty partition, and no more shards than a job may have.
  per_server =
      std::max<size_t>(1, std::min({per_server, total_elements / servers,
                                    kMaxPartitionsPerJob / servers}));
  std::vector<std::string> expanded;
  expanded.reserve(servers * per_server);
  for (const std::string& address : addresses) {
    expanded.insert(expanded.end(), per_server, address);
  }
  return expanded;
}

[[nodiscard]] absl::StatusOr<std::vector<PsShardLocation>>
PartitionedShardLocations(size_t total_elements,
                          const std::vector<std::string>& addresses,
                          size_t partition_bytes) {
  return BalancedShardLocations(
      total_elements,
      PartitionAddresses(total_elements, addresses, partition_bytes));
}

int ServerCount(const std::vector<PsShardLocation>& shards) {
  int servers = 0;
  for (size_t k = 0; k < shards.size(); ++k) {
    if (k == 0 || shards[k].address != shards[k - 1].address) ++servers;
  }
  return servers;
}

PsClient::PsClient(std::string job_id, int rank, size_t total,
                   const PsClientOptions& options)
    : core_(std::move(job_id), rank, total, options) {}

PsClient::~PsClient() = default;

int PsClient::num_servers() const {
  int servers = 0;
  for (size_t k = 0; k < core_.shards.size(); ++k) {
    if (k == 0 || core_.shards[k].location.address !=
                      core_.shards[k - 1].location.address) {
      ++servers;
    }
  }
  return servers;
}

absl::StatusOr<std::unique_ptr<PsClient>> PsClient::Create(
    std::string job_id, int rank, size_t total_elements,
    std::vector<PsShardLocation> shards, const PsClientOptions& options) {
  if (rank < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is negative"));
  }
  RETURN_IF_ERROR(
      ResolveChunkBytes(static_cast<int64_t>(options.chunk_bytes)).status());
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("the PS client timeout must be > 0");
  }
  if (options.wire_dtype != DataType::kFloat32 &&
      options.wire_dtype != DataType::kBFloat16 &&
      options.wire_dtype != DataType::kFloat16) {
    return absl::InvalidArgumentError(
        absl::StrCat("the PS client's gradient wire type is ",
                     DataTypeName(options.wire_dtype),
                     "; use float (fp32), bfloat16 or half (fp16)"));
  }
  RETURN_IF_ERROR(CheckCongestionControl(options.transport.congestion_control));
  if (shards.empty()) {
    return absl::InvalidArgumentError("a PS client needs at least one shard");
  }
  size_t next = 0;
  for (const PsShardLocation& location : shards) {
    if (location.begin != next || location.end <= location.begin) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shard ", location.shard, " covers [", location.begin, ", ",
          location.end, "); shards must tile [0, ", total_elements,
          ") in order, and this one should start at ", next));
    }
    next = location.end;
  }
  if (next != total_elements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the shards cover [0, ", next, ") of ", total_elements, " elements"));
  }
  std::unique_ptr<PsClient> client(
      new PsClient(std::move(job_id), rank, total_elements, options));
  // One channel (one TCP connection) per server: its partitions take
  // turns on it (ps_step.h), so the connection stays busy, and warm,
  // through the whole step instead of idling between one partition's turn
  // and the next step's.
  std::shared_ptr<grpc::Channel> channel;
  for (PsShardLocation& location : shards) {
    if (client->core_.shards.empty() ||
        client->core_.shards.back().location.address != location.address) {
      channel = CreatePsChannel(location.address, options.transport);
    }
    Shard& shard = client->core_.shards.emplace_back();
    shard.location = std::move(location);
    shard.channel = channel;
  }
  client->core_.last_versions.assign(client->core_.shards.size(), 0);
  return client;
}

PsClientStats PsClient::stats() const {
  PsClientStats stats;
  stats.calls = core_.calls.load();
  stats.bytes_sent = core_.bytes_sent.load();
  stats.bytes_received = core_.bytes_received.load();
  stats.credit_waits = core_.credit_waits.load();
  return stats;
}

absl::Status PsClient::ForEachShard(
    const std::function<absl::Status(size_t)>& fn) {
  core_.calls.fetch_add(1);
  std::vector<absl::Status> results(core_.shards.size());
  std::vector<std::thread> threads;
  auto connect_and_run = [this, &fn](size_t k) {
    const absl::Status connected = ConnectShard(k);
    return connected.ok() ? fn(k) : connected;
  };
  for (size_t k = 1; k < core_.shards.size(); ++k) {
    threads.emplace_back(
        [&connect_and_run, &results, k]() { results[k] = connect_and_run(k); });
  }
  results[0] = connect_and_run(0);
  for (std::thread& t : threads) t.join();
  for (size_t k = 0; k < core_.shards.size(); ++k) {
    if (!results[k].ok()) return core_.CancelledOr(NameShard(k, results[k]));
  }
  return absl::OkStatus();
}

absl::Status PsClient::ConnectShard(size_t k) {
  return ConnectChannel(core_.shards[k].channel.get(),
                        absl::Now() + core_.options.timeout,
                        [this]() { return core_.cancelled(); });
}

absl::Status PsClient::NameShard(size_t k, const absl::Status& status) const {
  return ShardError(core_.shards[k].location, "", status);
}

absl::StatusOr<std::unique_ptr<PsStep>> PsClient::StartStep(
    int64_t step, absl::Span<const float> grads, absl::Span<float> params,
    PsStepControl control) {
  if (grads.size() != core_.total || params.size() != core_.total) {
    return absl::InvalidArgumentError(absl::StrCat(
        "StartStep needs ", core_.total, " gradients and parameters; got ",
        grads.size(), " and ", params.size()));
  }
  const float* g = grads.data();
  const float* p = params.data();
  if (g < p + params.size() && p < g + grads.size()) {
    return absl::InvalidArgumentError(
        "StartStep: the gradient and parameter buffers overlap; the "
        "parameters arrive while gradients are still being sent");
  }
  if (control.late_scalars > 0 && !control.scalars.empty()) {
    return absl::InvalidArgumentError(
        "StartStep: give the step's scalars either in the control or later "
        "(late_scalars and SetScalars), not both");
  }
  bool idle = false;
  if (!core_.step_in_flight.compare_exchange_strong(idle, true)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "rank ", core_.rank, ": StartStep of step ", step,
        " while another step is in flight; Finish or drop it first"));
  }
  if (core_.options.tensor_plane) {
    if (absl::Status resolved = ResolveTensorPlanes(); !resolved.ok()) {
      core_.step_in_flight.store(false);
      return resolved;
    }
    core_.DropClosedPlanes();
  }
  core_.calls.fetch_add(1);
  return PsStep::Launch(core_, step, grads, params, std::move(control),
                        absl::Now() + core_.options.timeout);
}

absl::Status PsClient::PushPull(int64_t step, absl::Span<const float> grads,
                                absl::Span<float> params) {
  if (grads.size() != core_.total || params.size() != core_.total) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PushPull needs ", core_.total, " gradients and parameters; got ",
        grads.size(), " and ", params.size()));
  }
  const float* g = grads.data();
  const float* p = params.data();
  const bool overlap = g < p + params.size() && p < g + grads.size();
  const bool wire16 = core_.options.wire_dtype != DataType::kFloat32;
  if (overlap && wire16) {
    return absl::InvalidArgumentError(
        "PushPull of a 16-bit job needs gradients and parameters that do not "
        "overlap");
  }
  if (!overlap && (num_servers() < static_cast<int>(core_.shards.size()) ||
                   core_.options.tensor_plane || wire16)) {
    // Partitions: PsStep pushes them in turn per server (ps_step.h); the
    // tensor plane and 16-bit gradients are PsStep's too.
    ASSIGN_OR_RETURN(std::unique_ptr<PsStep> ps_step,
                     StartStep(step, grads, params, PsStepControl()));
    ps_step->Ready(0, core_.total);
    return ps_step->Finish(absl::Now() + core_.options.timeout).status();
  }
  const absl::Time deadline = absl::Now() + core_.options.timeout;
  return ForEachShard([&](size_t k) {
    const PsShardLocation& l = core_.shards[k].location;
    return PushPullShard(k, step, /*pull_only=*/false,
                         grads.subspan(l.begin, l.end - l.begin),
                         params.subspan(l.begin, l.end - l.begin), deadline);
  });
}

absl::Status PsClient::Pull(int64_t step, absl::Span<float> params) {
  if (params.size() != core_.total) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Pull needs ", core_.total, " parameters; got ", params.size()));
  }
  const absl::Time deadline = absl::Now() + core_.options.timeout;
  return ForEachShard([&](size_t k) {
    const PsShardLocation& l = core_.shards[k].location;
    return PushPullShard(k, step, /*pull_only=*/true, {},
                         params.subspan(l.begin, l.end - l.begin), deadline);
  });
}

void PsClient::Cancel(const absl::Status& reason) { core_.Cancel(reason); }

absl::Status PsClient::PushPullShard(size_t k, int64_t step, bool pull_only,
                                     absl::Span<const float> grads,
                                     absl::Span<float> params,
                                     absl::Time deadline) {
  const PsShardLocation& location = core_.shards[k].location;
  SendPin pin;
  absl::Status status;
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    LiveCall live(&core_, &context);
    if (!live.status().ok()) return live.status();
    std::unique_ptr<RawClientStream> stream =
        StartPushPull(core_.shards[k].channel.get(), &context);
    ps::PushHeader header;
    header.set_job_id(core_.job_id);
    header.set_token(core_.options.token);
    header.set_shard(location.shard);
    header.set_rank(core_.rank);
    header.set_step(step);
    header.set_chunk_bytes(static_cast<int64_t>(core_.options.chunk_bytes));
    header.set_pull_only(pull_only);
    const absl::Span<const float> tensors[] = {grads};
    const bool sent = WriteTensors(
        stream.get(), &header,
        pull_only ? absl::Span<const absl::Span<const float>>() : tensors,
        core_.options.chunk_bytes, pin.pin());
    if (sent) {
      core_.bytes_sent.fetch_add(grads.size() * sizeof(float));
      stream->WritesDone();
    }

    bool complete = false;
    // A 16-bit job's parameters (only a pull comes here: PushPull sends
    // 16-bit gradients through PsStep) arrive in 2-byte elements.
    const DataType wire = core_.options.wire_dtype;
    std::vector<uint16_t> wire_params(
        wire == DataType::kFloat32 ? 0 : params.size());
    if (sent) {
      ps::PullHeader reply;
      status =
          wire_params.empty()
              ? ReadPullReply(stream.get(), location, params, &reply,
                              &core_.bytes_received, &complete)
              : ReadPullReply(stream.get(), location,
                              absl::Span<char>(
                                  reinterpret_cast<char*>(wire_params.data()),
                                  wire_params.size() * sizeof(uint16_t)),
                              sizeof(uint16_t), &reply, &core_.bytes_received,
                              &complete);
      core_.last_versions[k] = reply.version();
    }
    status = FinishPushPull(&context, stream.get(), std::move(status), sent,
                            complete, location);
    if (status.ok() && wire == DataType::kBFloat16) {
      BFloat16ToFloats(wire_params.data(), params.data(), params.size());
    } else if (status.ok() && wire == DataType::kFloat16) {
      Float16ToFloats(wire_params.data(), params.data(), params.size());
    }
  }
  RETURN_IF_ERROR(pin.Release());
  return status;
}

}  // namespace gradsync
