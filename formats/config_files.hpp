#pragma once
// The configuration files (clusters, workloads, calibrations) read into the
// model's structs (model/config.hpp), strictly: one line per problem with
// FILE:LINE:COL and the key (formats/yaml_reader).
#include <string>

#include "model/config.hpp"

namespace ks {

Cluster load_cluster(const std::string& path);
Cluster parse_cluster(const std::string& yaml_text, const std::string& name);
Workload load_workload(const std::string& path);
Workload parse_workload(const std::string& yaml_text, const std::string& name);
// A calibration file, applied on top of the datasheet calibration.
Calibration load_calibration(const std::string& path, const Cluster& c, Precision precision);
Calibration parse_calibration(const std::string& yaml_text, const std::string& name, const Cluster& c,
                              Precision precision);

}  // namespace ks
