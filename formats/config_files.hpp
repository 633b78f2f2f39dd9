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
// The shipped PyTorch CPU calibration (configs/calibrations/pytorch-cpu.yaml
// in kanscale's data directory, base/data_dir) as host terms: what a
// pytorch workload on a CUDA cluster whose calibration has no PyTorch op
// classes takes its host costs from. Read once; InputError when it cannot be
// read.
const HostTerms& shipped_pytorch_host_terms();
// Where that file is.
std::string shipped_pytorch_calibration_path();
// `cal`, with the shipped host terms passed in when the prediction of `w`
// on `c` needs them (model/config's needs_default_host_terms): the edges
// that load a calibration for a prediction call it, so that nothing below
// reads a file nobody named.
Calibration with_default_host_terms(Calibration cal, const Cluster& c, const Workload& w);

}  // namespace ks
