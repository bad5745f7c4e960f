#include "collectives/all_reduce_algorithm.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace gradsync {

absl::StatusOr<AllReduceAlgorithm> ParseAllReduceAlgorithm(
    absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "auto") return AllReduceAlgorithm::kAuto;
  if (n == "ring") return AllReduceAlgorithm::kRing;
  if (n == "hd" || n == "halving-doubling" || n == "rhd") {
    return AllReduceAlgorithm::kHalvingDoubling;
  }
  if (n == "hierarchical" || n == "hier") {
    return AllReduceAlgorithm::kHierarchical;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown all-reduce algorithm '", name,
                   "'; use auto, ring, hd or hierarchical"));
}

absl::string_view AllReduceAlgorithmName(AllReduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllReduceAlgorithm::kAuto:
      return "auto";
    case AllReduceAlgorithm::kRing:
      return "ring";
    case AllReduceAlgorithm::kHalvingDoubling:
      return "hd";
    case AllReduceAlgorithm::kHierarchical:
      return "hierarchical";
  }
  return "auto";
}

}  // namespace gradsync
