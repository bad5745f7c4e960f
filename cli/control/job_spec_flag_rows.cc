#include "cli/control/job_spec_flag_rows.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/control/shell_words.h"
#include "collectives/all_reduce_algorithm.h"
#include "common/code_points.h"
#include "common/flags.h"
#include "common/status_macros.h"
#include "jobspec/grad_dtype.h"
#include "jobspec/sync_mode_name.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

[[nodiscard]] absl::Status OneOf(
    absl::string_view flag, absl::string_view value,
    std::initializer_list<absl::string_view> allowed) {
  for (absl::string_view name : allowed) {
    if (value == name) return absl::OkStatus();
  }
  std::string list;
  for (absl::string_view name : allowed) {
    absl::StrAppend(&list, list.empty() ? "" : ", ", name);
  }
  return absl::InvalidArgumentError(
      absl::StrCat(flag, " is '", value, "'; use one of ", list));
}

// `path` made absolute against the current directory.
std::string AbsolutePath(absl::string_view path) {
  if (!path.empty() && path[0] == '/') return std::string(path);
  char cwd[4096];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) return std::string(path);
  return path.empty() || path == "." ? std::string(cwd)
                                     : absl::StrCat(cwd, "/", path);
}

// --switch-at STEP:MODE: adds the switch, keeping them in step order.
[[nodiscard]] absl::Status AddScriptedSwitch(absl::string_view value,
                                             JobSpec* spec) {
  const size_t colon = value.find(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--switch-at wants STEP:MODE (MODE ring or ps), e.g. "
                     "100:ring; got '",
                     value, "'"));
  }
  ASSIGN_OR_RETURN(int64_t step, ParseIntValue("--switch-at (the step)",
                                               value.substr(0, colon), 1));
  ASSIGN_OR_RETURN(
      const SyncMode mode,
      ParseSyncModeName(value.substr(colon + 1), "--switch-at (the mode)"));
  auto* switches = spec->mutable_switches();
  auto at =
      std::find_if(switches->begin(), switches->end(),
                   [step](const SwitchSpec& s) { return s.step() >= step; });
  if (at != switches->end() && at->step() == step) {
    return absl::InvalidArgumentError(
        absl::StrCat("--switch-at names step ", step, " twice"));
  }
  SwitchSpec added;
  added.set_step(step);
  added.set_mode(mode);
  const int index = static_cast<int>(at - switches->begin());
  *switches->Add() = std::move(added);
  for (int i = switches->size() - 1; i > index; --i) {
    switches->SwapElements(i, i - 1);
  }
  return absl::OkStatus();
}

// The rows: one per flag. Integer ranges here catch typos; the coordinator
// checks the whole spec (batch >= ranks, fashion-mnist's widths, ...).
const SpecFlagRow kSpecRows[] = {
    {"name", "NAME", "job name (default <model>-<dataset>)", "name",
     [](absl::string_view v, JobSpec* s) {
       if (std::optional<std::string> problem = UnsafeTextProblem(v)) {
         return absl::InvalidArgumentError(
             absl::StrCat("--name ", *problem, "; use printable characters"));
       }
       s->set_name(std::string(v));
       return absl::OkStatus();
     }},
    {"workers", "N", "ranks, one per device (1)", "num_workers",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(int64_t n, ParseIntValue("--workers", v, 1));
       if (n > INT32_MAX) {
         return absl::InvalidArgumentError("--workers is too large");
       }
       s->set_num_workers(static_cast<int32_t>(n));
       return absl::OkStatus();
     }},
    {"model", "mlp|synthetic", "mlp or synthetic (mlp)", "model.kind",
     [](absl::string_view v, JobSpec* s) {
       RETURN_IF_ERROR(OneOf("--model", v, {"mlp", "synthetic"}));  // or
       // --entrypoint
       s->mutable_model()->set_kind(std::string(v));
       return absl::OkStatus();
     }},
    {"entrypoint", "COMMAND",
     "run your own program on every rank instead of a built-in model, e.g. "
     "\"python3 train.py --epochs 3\" (split as a shell would, run "
     "without one; docs/pytorch.md)",
     "model.kind,model.entrypoint.argv",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(std::vector<std::string> argv, SplitShellWords(v));
       s->mutable_model()->set_kind("entrypoint");
       auto* out = s->mutable_model()->mutable_entrypoint()->mutable_argv();
       out->Clear();
       for (std::string& a : argv) out->Add(std::move(a));
       return absl::OkStatus();
     }},
    {"workdir", "DIR",
     "--entrypoint: the directory its processes start in, on every worker "
     "(default: the current one)",
     "model.entrypoint.workdir",
     [](absl::string_view v, JobSpec* s) {
       s->mutable_model()->mutable_entrypoint()->set_workdir(AbsolutePath(v));
       return absl::OkStatus();
     }},
    {"step-deadline-s", "N",
     "--entrypoint: kill a rank that reports no step for N s (600; -1: "
     "never, for scripts that do not call gradsync.torch.report)",
     "model.entrypoint.step_deadline_ms",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(int64_t n, ParseIntValue("--step-deadline-s", v, -1));
       s->mutable_model()->mutable_entrypoint()->set_step_deadline_ms(
           n < 0 ? -1 : n * 1000);
       return absl::OkStatus();
     }},
    {"layers", "W,W,...", "mlp widths, input first (784,256,256,10)",
     "model.layer_sizes",
     [](absl::string_view v, JobSpec* s) {
       s->mutable_model()->clear_layer_sizes();
       for (absl::string_view part : absl::StrSplit(v, ',')) {
         ASSIGN_OR_RETURN(int64_t width,
                          ParseIntValue("--layers (each width)", part, 1));
         s->mutable_model()->add_layer_sizes(width);
       }
       return absl::OkStatus();
     }},
    {"synthetic-floats", "F", "synthetic model: gradient elements, e.g. 25M",
     "model.synthetic_floats",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(int64_t n, ParseCountValue("--synthetic-floats", v, 1));
       s->mutable_model()->set_synthetic_floats(n);
       return absl::OkStatus();
     }},
    {"model-profile", "resnet50|vgg16|bert-large",
     "synthetic model shaped as resnet50, vgg16 or bert-large (its layer "
     "sizes and compute order)",
     "model.kind,model.profile",
     [](absl::string_view v, JobSpec* s) {
       RETURN_IF_ERROR(
           OneOf("--model-profile", v, {"resnet50", "vgg16", "bert-large"}));
       s->mutable_model()->set_kind("synthetic");
       s->mutable_model()->set_profile(std::string(v));
       return absl::OkStatus();
     }},
    {"profile-scale", "X",
     "--model-profile: shrink every layer to X of its size, in (0, 1] (1)",
     "model.profile_scale",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(double x, ParseDoubleValue("--profile-scale", v, 0));
       if (x <= 0 || x > 1) {
         return absl::InvalidArgumentError(
             absl::StrCat("--profile-scale ", v, " is not in (0, 1]"));
       }
       s->mutable_model()->set_profile_scale(x);
       return absl::OkStatus();
     }},
    {"compute-ms", "T", "synthetic model: emulated compute per step",
     "model.synthetic_compute_ms",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(double ms, ParseDoubleValue("--compute-ms", v, 0));
       s->mutable_model()->set_synthetic_compute_ms(ms);
       return absl::OkStatus();
     }},
    {"dataset", "fashion-mnist|synthetic",
     "fashion-mnist or synthetic (fashion-mnist)", "dataset.name",
     [](absl::string_view v, JobSpec* s) {
       RETURN_IF_ERROR(OneOf("--dataset", v, {"fashion-mnist", "synthetic"}));
       s->mutable_dataset()->set_name(std::string(v));
       return absl::OkStatus();
     }},
    {"data-path", "DIR", "directory of the IDX files", "dataset.path",
     [](absl::string_view v, JobSpec* s) {
       s->mutable_dataset()->set_path(std::string(v));
       return absl::OkStatus();
     }},
    {"optimizer", "sgd|momentum|adam|adamw",
     "sgd, momentum, adam or adamw (sgd)", "optimizer.name",
     [](absl::string_view v, JobSpec* s) {
       RETURN_IF_ERROR(
           OneOf("--optimizer", v, {"sgd", "momentum", "adam", "adamw"}));
       s->mutable_optimizer()->set_name(std::string(v));
       return absl::OkStatus();
     }},
    {"lr", "X", "learning rate (sgd 0.1, momentum 0.05, adam 0.001)",
     "optimizer.learning_rate",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(double lr, ParseDoubleValue("--lr", v, 0));
       if (lr == 0) return absl::InvalidArgumentError("--lr must be > 0");
       s->mutable_optimizer()->set_learning_rate(lr);
       return absl::OkStatus();
     }},
    {"momentum", "X", "momentum factor (0.9)", "optimizer.momentum",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(double m, ParseDoubleValue("--momentum", v, 0));
       s->mutable_optimizer()->set_momentum(m);
       return absl::OkStatus();
     }},
    {"nesterov", "", "Nesterov momentum", "optimizer.nesterov",
     [](absl::string_view, JobSpec* s) {
       s->mutable_optimizer()->set_nesterov(true);
       return absl::OkStatus();
     }},
    {"weight-decay", "X", "L2 weight decay (0)", "optimizer.weight_decay",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(double wd, ParseDoubleValue("--weight-decay", v, 0));
       s->mutable_optimizer()->set_weight_decay(wd);
       return absl::OkStatus();
     }},
    {"batch-size", "N", "global batch per step, split over ranks (256)",
     "batch_size",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(int64_t n, ParseIntValue("--batch-size", v, 1));
       s->set_batch_size(n);
       return absl::OkStatus();
     }},
    {"steps", "N", "optimizer steps (100)", "steps",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(int64_t n, ParseIntValue("--steps", v, 1));
       s->set_steps(n);
       return absl::OkStatus();
     }},
    {"epochs", "X", "passes over the data (instead of --steps)", "epochs",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(double e, ParseDoubleValue("--epochs", v, 0));
       if (e == 0) return absl::InvalidArgumentError("--epochs must be > 0");
       s->set_epochs(e);
       return absl::OkStatus();
     }},
    {"seed", "N", "seed of initialisation and shuffling (0)", "seed",
     [](absl::string_view v, JobSpec* s) {
       uint64_t seed = 0;
       if (!absl::SimpleAtoi(v, &seed)) {
         return absl::InvalidArgumentError(
             absl::StrCat("--seed wants an unsigned integer, got '", v, "'"));
       }
       s->set_seed(seed);
       return absl::OkStatus();
     }},
    {"bucket-mb", "MB", "all-reduce bucket size in MiB (25)", "bucket_bytes",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(double mb, ParseDoubleValue("--bucket-mb", v, 0));
       const double bytes = std::round(mb * 1024 * 1024);
       if (bytes < 1 || bytes > 1e15) {
         return absl::InvalidArgumentError(absl::StrCat(
             "--bucket-mb wants a size in MiB > 0, got '", v, "'"));
       }
       s->set_bucket_bytes(static_cast<int64_t>(bytes));
       return absl::OkStatus();
     }},
    {"accumulate", "N", "micro-batches per step (1)", "grad_accumulation_steps",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(int64_t n, ParseIntValue("--accumulate", v, 1));
       if (n > INT32_MAX) {
         return absl::InvalidArgumentError("--accumulate is too large");
       }
       s->set_grad_accumulation_steps(static_cast<int32_t>(n));
       return absl::OkStatus();
     }},
    {"eval-every", "N", "evaluate every N steps (0: at the end)",
     "eval_every_steps",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(int64_t n, ParseIntValue("--eval-every", v, 0));
       s->set_eval_every_steps(n);
       return absl::OkStatus();
     }},
    {"blas-threads", "N", "BLAS threads per rank (1)", "blas_threads",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(int64_t n, ParseIntValue("--blas-threads", v, 1));
       if (n > 1024) {
         return absl::InvalidArgumentError("--blas-threads is above 1024");
       }
       s->set_blas_threads(static_cast<int32_t>(n));
       return absl::OkStatus();
     }},
    {"mode", "ring|ps|auto",
     "gradient sync: ring, ps, or auto (measure both, settle on the faster, "
     "re-measure now and then) (ring)",
     "mode,auto_mode.enabled",
     [](absl::string_view v, JobSpec* s) {
       RETURN_IF_ERROR(OneOf("--mode", v, {"ring", "ps", "auto"}));
       // auto starts on the ring; the coordinator's policy measures both.
       const bool automatic = v == "auto";
       ASSIGN_OR_RETURN(const SyncMode mode,
                        automatic ? absl::StatusOr<SyncMode>(SYNC_MODE_RING)
                                  : ParseSyncModeName(v, "--mode"));
       s->set_mode(mode);
       s->mutable_auto_mode()->set_enabled(automatic);
       return absl::OkStatus();
     }},
    {"auto-recheck-every", "N",
     "--mode auto: steps between re-measurements (200; -1: never)",
     "auto_mode.recheck_every",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(int64_t n,
                        ParseIntValue("--auto-recheck-every", v, -1));
       s->mutable_auto_mode()->set_recheck_every(n == 0 ? -1 : n);
       return absl::OkStatus();
     }},
    {"auto-probe-steps", "N", "--mode auto: steps measured per path (5)",
     "auto_mode.probe_steps",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(int64_t n, ParseIntValue("--auto-probe-steps", v, 1));
       if (n > 1000) {
         return absl::InvalidArgumentError("--auto-probe-steps is above 1000");
       }
       s->mutable_auto_mode()->set_probe_steps(static_cast<int32_t>(n));
       return absl::OkStatus();
     }},
    {"ps-partition-bytes", "N",
     "PS: pipeline each server's slice in partitions of N bytes (4M)",
     "ps.partition_bytes",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(const uint64_t n,
                        ParseSizeValue("--ps-partition-bytes", v, 1));
       if (n < 4096 || n > (uint64_t{1} << 30)) {
         return absl::InvalidArgumentError(
             absl::StrCat("--ps-partition-bytes ", v, " is not in 4K..1G"));
       }
       s->mutable_ps()->set_partition_bytes(static_cast<int64_t>(n));
       return absl::OkStatus();
     }},
    {"ps-shards", "K", "PS shards (0: one per parameter server)", "ps.shards",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(int64_t n, ParseIntValue("--ps-shards", v, 0));
       if (n > INT32_MAX) {
         return absl::InvalidArgumentError("--ps-shards is too large");
       }
       s->mutable_ps()->set_shards(static_cast<int32_t>(n));
       return absl::OkStatus();
     }},
    {"sync", "sync|async|ssp", "PS updates: sync, async or ssp (sync)",
     "ps.sync",
     [](absl::string_view v, JobSpec* s) {
       RETURN_IF_ERROR(OneOf("--sync", v, {"sync", "async", "ssp"}));
       s->mutable_ps()->set_sync(std::string(v));
       return absl::OkStatus();
     }},
    {"staleness", "S", "--sync ssp: most steps a rank runs ahead (0)",
     "ps.staleness",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(int64_t n, ParseIntValue("--staleness", v, 0));
       if (n > INT32_MAX) {
         return absl::InvalidArgumentError("--staleness is too large");
       }
       s->mutable_ps()->set_staleness(static_cast<int32_t>(n));
       return absl::OkStatus();
     }},
    {"ps-chunk-bytes", "N", "PS push/pull message size, e.g. 256K (1M)",
     "ps.chunk_bytes",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(const uint64_t n,
                        ParseSizeValue("--ps-chunk-bytes", v, 1));
       // The coordinator checks the exact range (job_spec.cc); this only
       // keeps the value an int64.
       if (n > (uint64_t{1} << 30)) {
         return absl::InvalidArgumentError(absl::StrCat(
             "--ps-chunk-bytes wants at most 1G (the coordinator takes up "
             "to 64M), got '",
             v, "'"));
       }
       s->mutable_ps()->set_chunk_bytes(static_cast<int64_t>(n));
       return absl::OkStatus();
     }},
    {"ps-placement", "any|separate|colocated",
     "PS servers: any, separate (hosts without ranks) or colocated (the "
     "ranks' hosts) (any)",
     "ps.placement",
     [](absl::string_view v, JobSpec* s) {
       RETURN_IF_ERROR(
           OneOf("--ps-placement", v, {"any", "separate", "colocated"}));
       s->mutable_ps()->set_placement(std::string(v));
       return absl::OkStatus();
     }},
    {"ps-transport", "plane|grpc",
     "PS step tensors over the tensor plane (HMAC-authenticated plain TCP) "
     "or gRPC streams (encrypted under TLS) (each worker's --ps-transport, "
     "default plane)",
     "ps.transport",
     [](absl::string_view v, JobSpec* s) {
       RETURN_IF_ERROR(OneOf("--ps-transport", v, {"plane", "grpc"}));
       s->mutable_ps()->set_transport(std::string(v));
       return absl::OkStatus();
     }},
    {"switch-at", "STEP:MODE",
     "from STEP on sync through MODE (ring|ps); repeatable", "switches",
     &AddScriptedSwitch},
    {"device", "cpu|cuda", "cpu or cuda (cpu)", "device",
     [](absl::string_view v, JobSpec* s) {
       RETURN_IF_ERROR(OneOf("--device", v, {"cpu", "cuda"}));
       s->set_device(std::string(v));
       return absl::OkStatus();
     }},
    {"ring-backend", "auto|tcp|nccl",
     "the ring's transport: auto (nccl for an mlp on cuda), tcp or nccl",
     "ring_backend",
     [](absl::string_view v, JobSpec* s) {
       RETURN_IF_ERROR(OneOf("--ring-backend", v, {"auto", "tcp", "nccl"}));
       s->set_ring_backend(std::string(v));
       return absl::OkStatus();
     }},
    {"ring-algo", "auto|ring|hd|hierarchical",
     "the TCP ring's all-reduce algorithm, forced on every bucket (auto: "
     "by size and placement; not with nccl)",
     "ring_algorithm",
     [](absl::string_view v, JobSpec* s) {
       // The names `gradsync bench --algo` takes; the coordinator checks
       // the combination with the ring backend.
       absl::StatusOr<AllReduceAlgorithm> algorithm =
           ParseAllReduceAlgorithm(v);
       if (!algorithm.ok()) {
         return absl::InvalidArgumentError(
             absl::StrCat("--ring-algo is '", v,
                          "'; use one of auto, ring, hd, "
                          "hierarchical"));
       }
       s->set_ring_algorithm(std::string(AllReduceAlgorithmName(*algorithm)));
       return absl::OkStatus();
     }},
    {"grad-dtype", "fp32|bf16|fp16",
     "gradients on the wire (host rings, NCCL and the PS): fp32, or 16 bits "
     "summed in fp32 where received (fp16 clamps at +-65504)",
     "grad_dtype",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(const DataType type, ParseGradDtype(v));
       s->set_grad_dtype(GradDtypeName(type));
       return absl::OkStatus();
     }},
    {"checkpoint-dir", "DIR", "write checkpoints here", "checkpoint.directory",
     [](absl::string_view v, JobSpec* s) {
       s->mutable_checkpoint()->set_directory(std::string(v));
       return absl::OkStatus();
     }},
    {"checkpoint-every", "N", "checkpoint every N steps (0: at the end)",
     "checkpoint.every_steps",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(int64_t n, ParseIntValue("--checkpoint-every", v, 0));
       s->mutable_checkpoint()->set_every_steps(n);
       return absl::OkStatus();
     }},
    {"checkpoint-on-every-host", "",
     "the lowest rank on each host writes the checkpoints there too (no "
     "shared storage)",
     "checkpoint.on_every_host",
     [](absl::string_view, JobSpec* s) {
       s->mutable_checkpoint()->set_on_every_host(true);
       return absl::OkStatus();
     }},
    {"max-restarts", "N",
     "on failure, resubmit the job from its newest checkpoint up to N times",
     "max_restarts",
     [](absl::string_view v, JobSpec* s) {
       ASSIGN_OR_RETURN(int64_t n, ParseIntValue("--max-restarts", v, 0));
       s->set_max_restarts(static_cast<int32_t>(std::min<int64_t>(n, 1 << 30)));
       return absl::OkStatus();
     }},
    {"resume-from", "FILE",
     "start from this checkpoint (a path on at least one worker's host): its "
     "step, parameters and optimizer state",
     "checkpoint.resume_from",
     [](absl::string_view v, JobSpec* s) {
       if (v.empty()) {
         return absl::InvalidArgumentError(
             "--resume-from needs a checkpoint file, e.g. "
             "ckpt/step-100.ckpt");
       }
       s->mutable_checkpoint()->set_resume_from(std::string(v));
       return absl::OkStatus();
     }},
};

}  // namespace

absl::Span<const SpecFlagRow> JobSpecFlagRows() { return kSpecRows; }

}  // namespace control
}  // namespace cli
}  // namespace gradsync
