// Conversions between the parameter server's protobuf messages
// (proto/ps.proto, proto/job.proto) and the plain structs its logic uses.
//
// Errors: INVALID_ARGUMENT naming the field for requests that do not
// describe a valid shard (negative sizes, an unknown mode or optimizer,
// several or no init choices). Pure functions; thread-safe.
#ifndef GRADSYNC_SERVER_PS_DAEMON_PS_PROTO_H_
#define GRADSYNC_SERVER_PS_DAEMON_PS_PROTO_H_

#include <vector>

#include "absl/status/statusor.h"
#include "common/optimizer.h"
#include "proto/job.pb.h"
#include "proto/ps.pb.h"
#include "server/ps/daemon/ps_service.h"
#include "server/ps/shard/ps_shard.h"

namespace gradsync {

[[nodiscard]] absl::StatusOr<UpdateMode> UpdateModeFromProto(
    ps::UpdateMode mode);
ps::UpdateMode UpdateModeToProto(UpdateMode mode);

// CreateShardRequest -> ShardSpec (validated further by CreateShard).
[[nodiscard]] absl::StatusOr<ShardSpec> ShardSpecFromProto(
    const ps::CreateShardRequest& request);

// The shard's identity, counters and recent pushes.
void ShardStatsToProto(const PsShard& shard, ps::ShardStats* out);

// More step scalars than a rank could mean (a loss, a count, an epoch per
// rank...) make a malformed PushHeader.
inline constexpr int kMaxTrailerScalars = 1 << 16;

// A push's step scalars as its header gives them; with a trailer
// (trailer_scalars > 0), as many zeros, which the trailer replaces
// (ShardPush::SetScalars). INVALID_ARGUMENT for a trailer count outside
// [0, kMaxTrailerScalars], or one given beside scalars.
[[nodiscard]] absl::StatusOr<std::vector<double>> PushScalarsFromHeader(
    const ps::PushHeader& header);

// A push's learning rate (PushHeader.learning_rate): 0 or a finite number
// > 0; INVALID_ARGUMENT otherwise, before the push changes anything.
[[nodiscard]] absl::StatusOr<double> PushLearningRate(
    const ps::PushHeader& header);

// The reply's header for a pulled view of `shard`: version, range, step
// control.
ps::PullHeader PullHeaderFromView(const ShardView& view, const PsShard& shard);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_DAEMON_PS_PROTO_H_
