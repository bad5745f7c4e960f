#include "collectives/all_reduce_algorithm.h"

#include <cstdint>
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

AllReduceAlgorithm ChooseAllReduceAlgorithm(const AllReduceChoice& choice) {
  const AllReduceAlgorithm configured = choice.configured;
  if (configured == AllReduceAlgorithm::kRing ||
      configured == AllReduceAlgorithm::kHalvingDoubling) {
    return configured;
  }
  if (choice.hosts > 0) {  // a communicator with a hierarchy to run
    if (configured == AllReduceAlgorithm::kHierarchical) {
      return AllReduceAlgorithm::kHierarchical;
    }
    const bool worth_it = choice.hosts > 1 && choice.largest_host > 1;
    if (worth_it && choice.bytes >= choice.hierarchical_min_bytes) {
      return AllReduceAlgorithm::kHierarchical;
    }
  }
  return choice.bytes <= choice.halving_doubling_max_bytes
             ? AllReduceAlgorithm::kHalvingDoubling
             : AllReduceAlgorithm::kRing;
}

bool MayChooseHierarchical(AllReduceAlgorithm configured) {
  AllReduceChoice choice;
  choice.configured = configured;
  choice.bytes = SIZE_MAX;
  choice.hosts = 2;
  choice.largest_host = 2;
  return ChooseAllReduceAlgorithm(choice) == AllReduceAlgorithm::kHierarchical;
}

}  // namespace gradsync
