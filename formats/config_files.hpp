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
// A calibration file, applied on top of the datasheet calibration. A
// posterior one (source: posterior, kanscale study --infer) is refused unless
// `allow_posterior` (the commands that apply its settings: simulate).
Calibration load_calibration(const std::string& path, const Cluster& c, Precision precision, bool allow_posterior = false);
Calibration parse_calibration(const std::string& yaml_text, const std::string& name, const Cluster& c, Precision precision,
                              bool allow_posterior = false);
// What a pytorch workload on a CUDA cluster whose calibration has no
// PyTorch op classes takes its host costs from: the shipped priors'
// (configs/priors/gpu.yaml in kanscale's data directory, base/data_dir)
// eager per-op cost, on every dispatch, with its spread for one more CPU
// (issue 57, item 5: GPU-node evidence, not a CPU VM's CPU-tensor timings).
// Read once; InputError when it cannot be read.
const HostTerms& dispatch_prior_host_terms();
// The shipped PyTorch CPU calibration (configs/calibrations/pytorch-cpu.yaml).
std::string shipped_pytorch_calibration_path();
// `cal`, with the shipped host terms passed in when the prediction of `w`
// on `c` needs them (model/config's needs_default_host_terms): the edges
// that load a calibration for a prediction call it, so that nothing below
// reads a file nobody named.
Calibration with_default_host_terms(Calibration cal, const Cluster& c, const Workload& w);

// with_default_host_terms, and what an answer that watched no job must
// carry (issue 57): a calibration without live terms and without a model
// error takes the shipped calibration's unwatched error for the workload's
// implementation (pytorch: configs/calibrations/pytorch-cpu.yaml; kanscale:
// local-cpu.yaml) as its model error, labelled a CPU stand-in; a datasheet
// NCCL calibration takes the all-reduce error of the datasheet model on
// public measurements (configs/priors/gpu.yaml, every regime together: the
// gradient buckets' sizes span them) as its communication error; host terms
// from the dispatch prior bring its spread (Calibration::host_prior_sigma),
// and the compute's error then covers the device alone. Each is recorded with its
// source (Calibration::unwatched_source, priors_source). What the CLI
// predicts with; tests of the bare model use with_default_host_terms.
Calibration with_shipped_defaults(Calibration cal, const Cluster& c, const Workload& w);

}  // namespace ks
