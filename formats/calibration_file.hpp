#pragma once
// A fitted calibration (model/fitted_calibration.hpp) as YAML:
// write_calibration writes what parse_calibration (formats/config_files)
// reads back; a term the file leaves out keeps the cluster's datasheet
// value there.
#include <string>

#include "model/fitted_calibration.hpp"
#include "formats/config_files.hpp"

namespace ks {

// The YAML text; `header` (comment lines, each starting with '#') comes
// first: the version and command that made it (fit_header).
std::string write_calibration(const CalibrationFile& f, const std::string& header);
// "# Fitted by kanscale VERSION (COMMIT) on DATE" and "# COMMAND_LINE" (formats/provenance).
std::string fit_header(const std::string& command_line);

// A fit's quality as the calibration records it: R^2, residuals, held-out
// errors and standard errors, and (with_cov) the coefficients' covariance,
// which parse_calibration reads for prediction intervals.
std::string fit_quality(const LinearFit& f, bool with_cov = true);

}  // namespace ks
