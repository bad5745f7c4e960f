#include "server/ps/daemon/ps_service.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/model_init/mlp_layout.h"
#include "common/status_macros.h"
#include "security/secret.h"
#include "server/ps/transport/shard_range.h"

namespace gradsync {
namespace {

std::string ShardName(const std::string& job_id, int shard) {
  return absl::StrCat("ps shard ", shard, " of job '", job_id, "'");
}

absl::Status CheckRange(const ShardSpec& spec) {
  const PsShardConfig& config = spec.config;
  if (spec.total_elements == 0) {
    return absl::InvalidArgumentError(
        "total_elements is 0; the job's parameter vector must not be empty");
  }
  if (config.shard >= spec.num_shards) {
    return absl::InvalidArgumentError(absl::StrCat("shard index ", config.shard,
                                                   " is outside [0, ",
                                                   spec.num_shards, ")"));
  }
  ASSIGN_OR_RETURN(
      const ShardRange balanced,
      BalancedShardRange(spec.total_elements, spec.num_shards, config.shard));
  if (balanced.begin != config.begin || balanced.end != config.end) {
    return absl::InvalidArgumentError(absl::StrCat(
        ShardName(config.job_id, config.shard), " was given elements [",
        config.begin, ", ", config.end, "), but the balanced split of ",
        spec.total_elements, " elements into ", spec.num_shards,
        " shards gives it [", balanced.begin, ", ", balanced.end,
        "); compute ranges with BalancedShardRange"));
  }
  return absl::OkStatus();
}

// The shard's initial parameters (kZeros, kMlp).
[[nodiscard]] absl::StatusOr<std::vector<float>> InitialParameters(
    const ShardSpec& spec) {
  const PsShardConfig& config = spec.config;
  std::vector<float> params(config.end - config.begin, 0.0f);
  if (spec.init.kind != ShardInit::Kind::kMlp) return params;
  ASSIGN_OR_RETURN(const MlpLayout layout,
                   MlpLayout::Create(spec.init.layer_sizes));
  if (layout.num_parameters() != spec.total_elements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the MLP's layer sizes give ", layout.num_parameters(),
        " parameters, but total_elements is ", spec.total_elements));
  }
  RETURN_IF_ERROR(InitializeParameters(layout, spec.init.seed, config.begin,
                                       absl::MakeSpan(params)));
  return params;
}

}  // namespace

PsService::~PsService() { ReleaseAll(); }

void PsService::RequireTokens() {
  absl::MutexLock lock(&key_mu_);
  require_tokens_ = true;
}

void PsService::SetShardKey(std::string key) {
  absl::MutexLock lock(&key_mu_);
  shard_key_ = std::move(key);
}

absl::StatusOr<std::string> PsService::JobToken(
    absl::string_view job_id) const {
  std::string key;
  {
    absl::MutexLock lock(&key_mu_);
    if (!require_tokens_) return std::string();
    key = shard_key_;
  }
  if (key.empty()) {
    return absl::UnavailableError(
        "this parameter server has not registered with its coordinator yet, "
        "so it cannot check who may use a job's shards; retry in a moment");
  }
  return PsTokenForJob(key, job_id);
}

absl::Status PsService::CheckToken(absl::string_view job_id,
                                   absl::string_view token) const {
  ASSIGN_OR_RETURN(const std::string expected, JobToken(job_id));
  if (expected.empty() || SecretsEqual(token, expected)) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "the call for job ", job_id, "'s shards ",
      token.empty() ? "carries no token"
                    : "carries a token that is not the job's",
      "; only the job's own ranks (with the token their assignment brought) "
      "may create, use or release them"));
}

absl::Status PsService::CreateShard(const ShardSpec& given) {
  ShardSpec spec = given;
  spec.config.compute = compute_;
  const PsShardConfig& config = spec.config;
  RETURN_IF_ERROR(ValidatePsShardConfig(config));
  RETURN_IF_ERROR(CheckRange(spec));
  const Key key(config.job_id, config.shard);
  auto exists = [&]() {
    return absl::AlreadyExistsError(
        absl::StrCat(ShardName(config.job_id, config.shard),
                     " already exists; release it before creating it again"));
  };
  {
    absl::MutexLock lock(&mu_);
    if (shards_.count(key) > 0) return exists();
  }
  // Built without the lock: generating a large slice takes a while.
  std::shared_ptr<PsShard> shard;
  if (spec.init.kind == ShardInit::Kind::kSeeded) {
    ASSIGN_OR_RETURN(shard, PsShard::CreateAwaitingSeed(config));
  } else {
    ASSIGN_OR_RETURN(std::vector<float> params, InitialParameters(spec));
    ASSIGN_OR_RETURN(shard, PsShard::Create(config, std::move(params)));
  }
  absl::MutexLock lock(&mu_);
  if (!shards_.emplace(key, std::move(shard)).second) return exists();
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<PsShard>> PsService::FindShard(
    const std::string& job_id, int shard) const {
  absl::MutexLock lock(&mu_);
  auto it = shards_.find(Key(job_id, shard));
  if (it == shards_.end()) {
    return absl::NotFoundError(absl::StrCat(
        ShardName(job_id, shard),
        " is not on this parameter server; was it created (CreateShard), "
        "or already released?"));
  }
  return it->second;
}

absl::StatusOr<std::vector<std::shared_ptr<PsShard>>> PsService::FindShards(
    const std::string& job_id, int shard) const {
  if (shard >= 0) {
    ASSIGN_OR_RETURN(std::shared_ptr<PsShard> one, FindShard(job_id, shard));
    return std::vector<std::shared_ptr<PsShard>>{std::move(one)};
  }
  std::vector<std::shared_ptr<PsShard>> found;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = shards_.lower_bound(Key(job_id, -1));
         it != shards_.end() && it->first.first == job_id; ++it) {
      found.push_back(it->second);
    }
  }
  if (found.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "job '", job_id, "' has no shards on this parameter server"));
  }
  return found;
}

absl::StatusOr<int> PsService::Release(const std::string& job_id, int shard) {
  std::vector<std::shared_ptr<PsShard>> released;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = shards_.lower_bound(Key(job_id, shard < 0 ? -1 : shard));
         it != shards_.end() && it->first.first == job_id &&
         (shard < 0 || it->first.second == shard);) {
      released.push_back(std::move(it->second));
      it = shards_.erase(it);
    }
    for (const std::shared_ptr<PsShard>& s : released) {
      released_.push_back(s);
      if (released_.size() > kMaxUnreportedReleases) released_.pop_front();
    }
  }
  if (released.empty()) {
    return absl::NotFoundError(
        shard < 0 ? absl::StrCat("job '", job_id,
                                 "' has no shards on this parameter server")
                  : absl::StrCat(ShardName(job_id, shard),
                                 " is not on this parameter server"));
  }
  // Outside mu_: Release wakes the shard's waiters.
  for (const std::shared_ptr<PsShard>& s : released) s->Release();
  return static_cast<int>(released.size());
}

void PsService::ReleaseAll() {
  std::map<Key, std::shared_ptr<PsShard>> all;
  {
    absl::MutexLock lock(&mu_);
    all.swap(shards_);
  }
  for (auto& entry : all) entry.second->Release();
}

std::vector<std::shared_ptr<PsShard>> PsService::AllShards() const {
  std::vector<std::shared_ptr<PsShard>> all;
  absl::MutexLock lock(&mu_);
  for (const auto& entry : shards_) all.push_back(entry.second);
  return all;
}

std::vector<std::shared_ptr<PsShard>> PsService::UnreportedReleases() const {
  absl::MutexLock lock(&mu_);
  return std::vector<std::shared_ptr<PsShard>>(released_.begin(),
                                               released_.end());
}

void PsService::ForgetReleased(size_t n) {
  absl::MutexLock lock(&mu_);
  // Releases that came meanwhile may have pushed reported ones out.
  n = std::min(n, released_.size());
  released_.erase(released_.begin(), released_.begin() + n);
}

size_t PsService::num_shards() const {
  absl::MutexLock lock(&mu_);
  return shards_.size();
}

}  // namespace gradsync
