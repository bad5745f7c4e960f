#include "study/sim/calibration.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json.h"
#include "common/status_macros.h"
#include "study/sim/json_reader.h"

namespace gradsync {
namespace sim {
namespace {

constexpr CalibrationNumber kNumberFields[] = {
    {"alphaS", &SimCalibration::alpha_s},
    {"intraAlphaS", &SimCalibration::intra_alpha_s},
    {"linkEfficiency", &SimCalibration::link_efficiency},
    {"partitionOverheadS", &SimCalibration::partition_overhead_s},
    {"planeCpuSPerByte", &SimCalibration::plane_cpu_s_per_byte},
    {"grpcCpuSPerByte", &SimCalibration::grpc_cpu_s_per_byte},
    {"incastThresholdFlows", &SimCalibration::incast_threshold_flows},
    {"incastEfficiency", &SimCalibration::incast_efficiency},
};

struct StringField {
  const char* name;
  std::string SimCalibration::*field;
};

constexpr StringField kStringFields[] = {
    {"machine", &SimCalibration::machine},
    {"date", &SimCalibration::date},
    {"commit", &SimCalibration::commit},
};

// What the fit saw: numbers that are not parameters (the fit does not
// walk them), and the list of fitted members.
constexpr CalibrationNumber kRangeFields[] = {
    {"fitMaxWorkers", &SimCalibration::fit_max_workers},
    {"fitMinLinkBps", &SimCalibration::fit_min_link_Bps},
    {"fitMaxLinkBps", &SimCalibration::fit_max_link_Bps},
};
constexpr char kFittedName[] = "fitted";

[[nodiscard]] absl::Status NonNegative(const char* name, double value) {
  if (value >= 0 && std::isfinite(value)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "calibration ", name, " is ", value, "; it must be >= 0 and finite"));
}

[[nodiscard]] absl::Status Efficiency(const char* name, double value) {
  if (value > 0 && value <= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("calibration ", name, " is ", value,
                   "; it is a share of the rate, in (0, 1]"));
}

std::vector<std::string> KnownNames() {
  std::vector<std::string> names;
  for (const CalibrationNumber& f : kNumberFields) names.push_back(f.name);
  for (const StringField& f : kStringFields) names.push_back(f.name);
  for (const CalibrationNumber& f : kRangeFields) names.push_back(f.name);
  names.push_back(kFittedName);
  return names;
}

}  // namespace

absl::Status ValidateCalibration(const SimCalibration& c) {
  RETURN_IF_ERROR(NonNegative("alphaS", c.alpha_s));
  RETURN_IF_ERROR(NonNegative("intraAlphaS", c.intra_alpha_s));
  RETURN_IF_ERROR(Efficiency("linkEfficiency", c.link_efficiency));
  RETURN_IF_ERROR(NonNegative("partitionOverheadS", c.partition_overhead_s));
  RETURN_IF_ERROR(NonNegative("planeCpuSPerByte", c.plane_cpu_s_per_byte));
  RETURN_IF_ERROR(NonNegative("grpcCpuSPerByte", c.grpc_cpu_s_per_byte));
  RETURN_IF_ERROR(
      NonNegative("incastThresholdFlows", c.incast_threshold_flows));
  RETURN_IF_ERROR(Efficiency("incastEfficiency", c.incast_efficiency));
  for (const CalibrationNumber& f : kRangeFields) {
    RETURN_IF_ERROR(NonNegative(f.name, c.*f.field));
  }
  return absl::OkStatus();
}

bool WasFitted(const SimCalibration& c, absl::string_view name) {
  for (const std::string& f : c.fitted) {
    if (f == name) return true;
  }
  return false;
}

absl::StatusOr<SimCalibration> ParseCalibration(absl::string_view json) {
  ASSIGN_OR_RETURN(const JsonValue doc, ParseJson(json));
  if (!doc.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a calibration is a JSON object, not a ", JsonTypeName(doc.type())));
  }
  SimCalibration c;
  for (const auto& [name, value] : doc.members()) {
    bool known = false;
    for (const CalibrationNumber& f : kRangeFields) {
      if (name != f.name) continue;
      if (!value.is_number()) {
        return absl::InvalidArgumentError(
            absl::StrCat("calibration member \"", name, "\" is a ",
                         JsonTypeName(value.type()), "; it must be a number"));
      }
      c.*f.field = value.number();
      known = true;
    }
    if (name == kFittedName) {
      if (!value.is_array()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "calibration member \"fitted\" is a ", JsonTypeName(value.type()),
            "; it must be an array of member names"));
      }
      for (const JsonValue& item : value.items()) {
        if (!item.is_string()) {
          return absl::InvalidArgumentError(
              "calibration member \"fitted\" holds a non-string");
        }
        c.fitted.push_back(item.string());
      }
      known = true;
    }
    for (const CalibrationNumber& f : kNumberFields) {
      if (name != f.name) continue;
      if (!value.is_number()) {
        return absl::InvalidArgumentError(
            absl::StrCat("calibration member \"", name, "\" is a ",
                         JsonTypeName(value.type()), "; it must be a number"));
      }
      c.*f.field = value.number();
      known = true;
    }
    for (const StringField& f : kStringFields) {
      if (name != f.name) continue;
      if (!value.is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat("calibration member \"", name, "\" is a ",
                         JsonTypeName(value.type()), "; it must be a string"));
      }
      c.*f.field = value.string();
      known = true;
    }
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown calibration member \"", name, "\"; the members are ",
          absl::StrJoin(KnownNames(), ", ")));
    }
  }
  RETURN_IF_ERROR(ValidateCalibration(c));
  return c;
}

absl::StatusOr<SimCalibration> LoadCalibration(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    const int err = errno;
    const std::string message = absl::StrCat(
        "cannot read the calibration file ", path, ": ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(message)
                         : absl::FailedPreconditionError(message);
  }
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<SimCalibration> c = ParseCalibration(text.str());
  if (!c.ok()) return Annotate(c.status(), absl::StrCat("calibration ", path));
  return c;
}

std::string CalibrationToJson(const SimCalibration& c) {
  std::string out = "{";
  const char* separator = "";
  for (const CalibrationNumber& f : kNumberFields) {
    absl::StrAppend(&out, separator, JsonQuote(f.name), ":",
                    JsonNumber(c.*f.field));
    separator = ",";
  }
  for (const StringField& f : kStringFields) {
    absl::StrAppend(&out, separator, JsonQuote(f.name), ":",
                    JsonQuote(c.*f.field));
  }
  for (const CalibrationNumber& f : kRangeFields) {
    absl::StrAppend(&out, ",", JsonQuote(f.name), ":", JsonNumber(c.*f.field));
  }
  absl::StrAppend(&out, ",", JsonQuote(kFittedName), ":[");
  for (size_t i = 0; i < c.fitted.size(); ++i) {
    absl::StrAppend(&out, i ? "," : "", JsonQuote(c.fitted[i]));
  }
  return out + "]}";
}

absl::Span<const CalibrationNumber> CalibrationNumbers() {
  return kNumberFields;
}

}  // namespace sim
}  // namespace gradsync
