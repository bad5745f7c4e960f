#include "cli/plan/sim_flags.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/lab/lab_config.h"
#include "common/status_macros.h"
#include "common/units.h"
#include "study/model_profiles.h"
#include "study/sim/calibration.h"
#include "study/sim/plan_sweep.h"

namespace gradsync {
namespace cli {
namespace plan {
namespace {

// A row that parses a finite number >= min into `out`.
FlagSpec NumberFlag(std::string name, std::string value_name, std::string help,
                    double min, double* out) {
  const std::string flag = "--" + name;
  return FlagSpec(std::move(name), std::move(value_name), std::move(help),
                  [flag, min, out](absl::string_view v) {
                    ASSIGN_OR_RETURN(*out, ParseDoubleValue(flag, v, min));
                    return absl::OkStatus();
                  });
}

}  // namespace

void AddSimFlags(SimFlags* f, std::vector<FlagSpec>* flags) {
  const std::vector<FlagSpec> rows = {
      StringFlag("model-profile", "resnet50|vgg16|bert-large",
                 "the network (required)", &f->model_profile),
      NumberFlag("profile-scale", "F",
                 "every layer's parameters and FLOPs times F, in (0, 1] (1)", 0,
                 &f->profile_scale),
      IntFlag("batch", "samples per worker per step (32)", 1, &f->batch),
      NumberFlag("gpu-tflops", "T",
                 "sustained TFLOP/s of one GPU (default: --gpu's peak times "
                 "--gpu-efficiency)",
                 0, &f->gpu_tflops),
      StringFlag("gpu", "v100|a100|h100",
                 "the GPU whose datasheet bf16/fp16 peak sets the compute "
                 "(a100)",
                 &f->gpu),
      NumberFlag("gpu-efficiency", "F",
                 "the share of the peak a step sustains (0.4)", 0,
                 &f->gpu_efficiency),
      NumberFlag("compute-ms", "MS",
                 "one backward takes MS, spread over the layers by FLOPs, "
                 "no forward (the lab's emulated compute); overrides the "
                 "GPU",
                 0, &f->compute_ms),
      IntFlag("gpus-per-node", "workers (GPUs) per node, sharing its NIC (1)",
              1, &f->gpus_per_node),
      StringFlag("link", "RATE",
                 "each node's NIC, each way: 100gbit, 25gbit, 1gbit, "
                 "300gbyte (required)",
                 &f->link),
      StringFlag("node-link", "RATE",
                 "each GPU's link inside its node, each way (2400gbit = "
                 "300 GB/s)",
                 &f->node_link),
      StringFlag("grad-dtype", "fp32|bf16|fp16", "gradients on the wire (fp32)",
                 &f->grad_dtype),
      SizeFlag("bucket", "all-reduce buckets of at most SIZE (25M)", 4,
               &f->bucket_bytes),
      SizeFlag("first-bucket", "the first bucket's cap (0: like the others)", 0,
               &f->first_bucket_bytes),
      SizeFlag("partition",
               "PS: each server's slice (contiguous) or each layer (spread) "
               "in partitions of at most SIZE (4096000, BytePS's)",
               0, &f->partition_bytes),
      StringFlag("ps-placement", "contiguous|spread",
                 "PS: each server owns one slice of the gradient, as "
                 "gradsync's PS (contiguous), or the partitions go "
                 "round-robin over the servers, as BytePS's (spread)",
                 &f->ps_placement),
      StringFlag("ps-transport", "plane|grpc",
                 "the PS transport, for its CPU cost per byte (plane)",
                 &f->ps_transport),
      SwitchFlag("ps-unpipelined",
                 "PS: pull only after every push to the server is in",
                 &f->ps_unpipelined),
      SwitchFlag("ps-flat-push",
                 "PS with G > 1: every GPU pushes its own copy, instead of "
                 "reducing in the node first (BytePS)",
                 &f->ps_flat_push),
      IntFlag("server-cores", "cores of each PS server (16)", 1,
              &f->server_cores),
      StringFlag("calibration", "FILE",
                 "the simulator's calibration (JSON; default: documented "
                 "defaults, not fitted)",
                 &f->calibration),
  };
  flags->insert(flags->end(), rows.begin(), rows.end());
}

absl::StatusOr<double> ParseRateBytes(absl::string_view flag,
                                      absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(text);
  absl::string_view rest = lower;
  const bool bytes = absl::ConsumeSuffix(&rest, "byte");
  absl::StatusOr<int64_t> rate =
      lab::ParseLinkRate(bytes ? absl::StrCat(rest, "bit") : lower);
  if (!rate.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " '", text,
        "': give a rate in bits per second as tc does (100gbit, 25gbit, "
        "1gbit, 100mbit) or in bytes per second (300gbyte)"));
  }
  return static_cast<double>(*rate) / (bytes ? 1 : 8);
}

absl::StatusOr<std::vector<int>> ParseCounts(absl::string_view flag,
                                             absl::string_view text, int min) {
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " '", text, "': give A..B (the powers of two ",
                     "between), A,B,C or one number, each >= ", min));
  };
  auto number = [&](absl::string_view s, int* out) {
    return absl::SimpleAtoi(s, out) && *out >= min;
  };
  std::vector<int> counts;
  const std::vector<absl::string_view> range = absl::StrSplit(text, "..");
  if (range.size() == 2) {
    int lo = 0, hi = 0;
    if (!number(range[0], &lo) || !number(range[1], &hi) || hi < lo) {
      return bad();
    }
    counts = sim::PowersOfTwo(lo, hi);
    if (counts.empty() || counts.front() != lo) {
      counts.insert(counts.begin(), lo);
    }
    return counts;
  }
  if (range.size() != 1) return bad();
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int n = 0;
    if (!number(part, &n)) return bad();
    counts.push_back(n);
  }
  return counts;
}

absl::StatusOr<sim::SimWorkload> BuildWorkload(const SimFlags& f) {
  if (f.model_profile.empty()) {
    return absl::InvalidArgumentError(
        "name the network with --model-profile resnet50|vgg16|bert-large");
  }
  ASSIGN_OR_RETURN(const std::vector<ProfileTensor> tensors,
                   ModelProfile(f.model_profile));
  sim::ProfileCompute compute;
  compute.scale = f.profile_scale;
  compute.batch = f.batch;
  if (f.compute_ms >= 0) {
    compute.backward_total_s = f.compute_ms / 1e3;
  } else if (f.gpu_tflops > 0) {
    compute.sustained_tflops = f.gpu_tflops;
  } else {
    ASSIGN_OR_RETURN(const double peak, sim::GpuPeakTflops(f.gpu));
    if (!(f.gpu_efficiency > 0 && f.gpu_efficiency <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--gpu-efficiency ", f.gpu_efficiency,
                       ": give the share of the peak, in (0, 1]"));
    }
    compute.sustained_tflops = peak * f.gpu_efficiency;
  }
  return sim::WorkloadFromProfile(tensors, compute);
}

absl::StatusOr<sim::SimConfig> BuildConfig(const SimFlags& f) {
  if (f.link.empty()) {
    return absl::InvalidArgumentError(
        "give each node's NIC rate with --link (e.g. 100gbit)");
  }
  sim::SimConfig c;
  c.topology.gpus_per_node = f.gpus_per_node;
  ASSIGN_OR_RETURN(c.topology.nic_Bps, ParseRateBytes("--link", f.link));
  ASSIGN_OR_RETURN(c.topology.intra_Bps,
                   ParseRateBytes("--node-link", f.node_link));
  ASSIGN_OR_RETURN(c.grad_bytes_per_element, sim::ParseGradDtype(f.grad_dtype));
  c.bucket_bytes = static_cast<double>(f.bucket_bytes);
  c.first_bucket_bytes = static_cast<double>(f.first_bucket_bytes);
  c.partition_bytes = static_cast<double>(f.partition_bytes);
  {
    absl::StatusOr<sim::PsPlacement> placement =
        sim::ParsePsPlacement(f.ps_placement);
    if (!placement.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--ps-placement: ", placement.status().message()));
    }
    c.ps_placement = *placement;
  }
  ASSIGN_OR_RETURN(c.transport, sim::ParsePsTransport(f.ps_transport));
  c.ps_pipelined = !f.ps_unpipelined;
  c.ps_node_reduce = !f.ps_flat_push;
  c.server_cores = f.server_cores;
  if (!f.calibration.empty()) {
    absl::StatusOr<sim::SimCalibration> calibration =
        sim::LoadCalibration(f.calibration);
    if (!calibration.ok()) {
      // A file the command line names is input: a bad one is a usage
      // error (exit 2), whatever the reason.
      return absl::InvalidArgumentError(
          absl::StrCat("--calibration: ", calibration.status().message()));
    }
    c.calibration = *std::move(calibration);
  }
  return c;
}

std::string DescribeSetup(const SimFlags& f, const sim::SimConfig& config) {
  const sim::SimCalibration& cal = config.calibration;
  const std::string calibration =
      f.calibration.empty()
          ? "defaults (not fitted)"
          : absl::StrCat(
                f.calibration,
                cal.machine.empty() ? "" : absl::StrCat(", ", cal.machine),
                cal.date.empty() ? "" : absl::StrCat(", ", cal.date),
                cal.commit.empty() ? "" : absl::StrCat(", ", cal.commit));
  std::string compute;
  if (f.compute_ms >= 0) {
    compute = absl::StrFormat("backward %g ms", f.compute_ms);
  } else if (f.gpu_tflops > 0) {
    compute = absl::StrFormat("batch %d at %g TFLOP/s", f.batch, f.gpu_tflops);
  } else {
    absl::StatusOr<double> peak = sim::GpuPeakTflops(f.gpu);
    compute =
        absl::StrFormat("batch %d on %s at %g%% of %g TFLOP/s", f.batch, f.gpu,
                        100 * f.gpu_efficiency, peak.ok() ? *peak : 0.0);
  }
  return absl::StrCat(
      f.model_profile,
      f.profile_scale < 1 ? absl::StrFormat(" x %g", f.profile_scale) : "",
      ", ", compute, ", ", f.grad_dtype, " gradients; ",
      lab::DescribeLinkRate(
          static_cast<int64_t>(std::llround(config.topology.nic_Bps * 8))),
      " per node",
      config.topology.gpus_per_node > 1
          ? absl::StrCat(" of ", config.topology.gpus_per_node, " GPUs (",
                         lab::DescribeLinkRate(static_cast<int64_t>(
                             std::llround(config.topology.intra_Bps * 8))),
                         " each in the node; the PS ",
                         f.ps_flat_push ? "pushes from every GPU"
                                        : "reduces in the node first",
                         ")")
          : "",
      config.ps_placement == sim::PsPlacement::kSpread
          ? "; PS partitions spread round-robin over the servers (BytePS's)"
          : "",
      "; calibration: ", calibration);
}

}  // namespace plan
}  // namespace cli
}  // namespace gradsync
