#include "study/sim/sim_config.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace gradsync {
namespace sim {
namespace {

[[nodiscard]] absl::Status PositiveRate(const char* name, double rate) {
  if (rate > 0 && std::isfinite(rate)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      name, " is ", rate, " bytes/s; it must be positive and finite"));
}

}  // namespace

absl::string_view SimLayoutName(SimLayout layout) {
  switch (layout) {
    case SimLayout::kRing:
      return "ring";
    case SimLayout::kHalvingDoubling:
      return "hd";
    case SimLayout::kHierarchical:
      return "hierarchical";
    case SimLayout::kPsSeparate:
      return "ps";
    case SimLayout::kPsColocated:
      return "ps-colocated";
  }
  return "?";
}

absl::StatusOr<SimLayout> ParseSimLayout(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "halving-doubling") return SimLayout::kHalvingDoubling;
  if (lower == "hier") return SimLayout::kHierarchical;
  for (SimLayout layout : AllSimLayouts()) {
    if (lower == SimLayoutName(layout)) return layout;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown layout '", name,
                   "'; use ring, hd, hierarchical, ps or ps-colocated"));
}

std::vector<SimLayout> AllSimLayouts() {
  return {SimLayout::kRing, SimLayout::kHalvingDoubling,
          SimLayout::kHierarchical, SimLayout::kPsSeparate,
          SimLayout::kPsColocated};
}

bool IsPsLayout(SimLayout layout) {
  return layout == SimLayout::kPsSeparate || layout == SimLayout::kPsColocated;
}

absl::string_view PsTransportName(PsTransport transport) {
  return transport == PsTransport::kGrpc ? "grpc" : "plane";
}

absl::StatusOr<PsTransport> ParsePsTransport(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "plane") return PsTransport::kPlane;
  if (lower == "grpc") return PsTransport::kGrpc;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown PS transport '", name, "'; use plane or grpc"));
}

absl::string_view PsPlacementName(PsPlacement placement) {
  return placement == PsPlacement::kSpread ? "spread" : "contiguous";
}

absl::StatusOr<PsPlacement> ParsePsPlacement(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "contiguous") return PsPlacement::kContiguous;
  if (lower == "spread") return PsPlacement::kSpread;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown PS placement '", name, "'; use contiguous or spread"));
}

absl::StatusOr<int> ParseGradDtype(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "fp32") return 4;
  if (lower == "bf16" || lower == "fp16") return 2;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown gradient type '", name, "'; use fp32, bf16 or fp16"));
}

absl::Status ValidateSimConfig(const SimConfig& c) {
  const SimTopology& t = c.topology;
  if (t.workers < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("workers is ", t.workers, "; it must be >= 1"));
  }
  if (t.gpus_per_node < 1 || t.workers % t.gpus_per_node != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        t.workers, " workers do not fill nodes of ", t.gpus_per_node,
        " GPUs; give a worker count that is a multiple of the "
        "GPUs per node"));
  }
  RETURN_IF_ERROR(PositiveRate("the NIC rate", t.nic_Bps));
  if (t.gpus_per_node > 1) {
    RETURN_IF_ERROR(PositiveRate("the intra-node link rate", t.intra_Bps));
  }
  if (c.grad_bytes_per_element != 2 && c.grad_bytes_per_element != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("gradient elements of ", c.grad_bytes_per_element,
                     " bytes; use 4 (fp32) or 2 (bf16, fp16)"));
  }
  if (!(c.bucket_bytes >= c.grad_bytes_per_element) ||
      !std::isfinite(c.bucket_bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bucket of ", c.bucket_bytes,
                     " bytes; it must hold at least one element"));
  }
  if (c.first_bucket_bytes != 0 &&
      !(c.first_bucket_bytes >= c.grad_bytes_per_element)) {
    return absl::InvalidArgumentError(
        absl::StrCat("first bucket of ", c.first_bucket_bytes,
                     " bytes; 0 (like the others) or at least one element"));
  }
  if (c.partition_bytes != 0 &&
      !(c.partition_bytes >= c.grad_bytes_per_element)) {
    return absl::InvalidArgumentError(
        absl::StrCat("partition of ", c.partition_bytes,
                     " bytes; 0 (one per server) or at least one element"));
  }
  if (IsPsLayout(c.layout)) {
    if (c.servers < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("servers is ", c.servers, "; a PS needs >= 1"));
    }
    if (c.layout == SimLayout::kPsColocated && c.servers > t.nodes()) {
      return absl::InvalidArgumentError(
          absl::StrCat(c.servers, " colocated servers on ", t.nodes(),
                       " nodes; colocated servers are at most one per node"));
    }
    if (c.server_cores < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("server cores is ", c.server_cores, "; need >= 1"));
    }
    if (c.max_server_classes < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "max server classes is ", c.max_server_classes, "; need >= 1"));
    }
  }
  return ValidateCalibration(c.calibration);
}

double ServerCpuSecondsPerByte(const SimConfig& config) {
  return config.transport == PsTransport::kGrpc
             ? config.calibration.grpc_cpu_s_per_byte
             : config.calibration.plane_cpu_s_per_byte;
}

}  // namespace sim
}  // namespace gradsync
