#pragma once
// The corpus of public GPU measurements (validation/corpus/, issue 57) and
// the GPU datasheets it names (configs/gpus/<model>.yaml): read once into
// plain structs, every problem one line naming file, line and key. Schema:
// validation/corpus/README.md.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/config.hpp"
#include "model/priors.hpp"

namespace ks {

// One GPU model's datasheet figures (configs/gpus/<name>.yaml). A figure the
// datasheet does not give is 0.
struct GpuSheet {
  std::string name;  // the file's stem, as entries name it
  std::string file;
  std::string model;
  double compute_capability = 0;
  double fp32_flops = 0, tf32_flops = 0;
  double memory_bandwidth_Bps = 0, memory_bytes = 0;
  double nvlink_Bps = 0;  // per GPU, both directions together, as datasheets state it
  int pcie_gen = 0, pcie_lanes = 0;
  // One direction of the GPU's PCIe link: lanes x the generation's rate per
  // lane after line coding (PCI-SIG: gen3 8 GT/s and gen4 16 GT/s and gen5
  // 32 GT/s, each 128b/130b), 0 when the sheet gives none.
  double pcie_Bps() const;
};

GpuSheet load_gpu_sheet(const std::string& path);
// The sheet's figures as a cluster's GPU (TF32 falls back on FP32; what the
// sheet does not give stays 0, and the launch and runtime costs are the
// cluster's to set).
GpuSpec gpu_spec_of(const GpuSheet& g);

// The system as the source states it; 0 or "" = not stated.
struct CorpusSystem {
  std::string gpu;  // a configs/gpus/ stem
  int gpus_per_node = 0, nodes = 0;
  std::string intra_node;  // nvswitch | nvlink | pcie
  std::string network;     // none | infiniband | roce | ethernet
  int nics_per_node = 0;
  double nic_Bps = 0;
  std::string nccl, cuda, torch, cpu;
  std::map<std::string, std::string> nccl_env;
  int ranks() const { return gpus_per_node * nodes; }
};

// What an entry's NCCL_ALGO or NCCL_PROTO selects, read as NCCL reads it (a
// comma list of its own names, any case; "^a,b": every name but those):
// `selected` in NCCL's spelling, every name when the variable is absent or
// empty; `unknown`, a word that is no NCCL name ("" when none).
struct NcclEnvList {
  std::vector<std::string> selected;
  bool negated = false;
  std::string unknown;
};
inline const std::vector<std::string> kNcclAlgos = {"Ring", "Tree", "CollNet", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
inline const std::vector<std::string> kNcclProtos = {"LL", "LL128", "Simple"};
NcclEnvList nccl_env_list(const std::map<std::string, std::string>& env, const std::string& var, const std::vector<std::string>& names);

struct NcclRow {
  double size_bytes = 0, time_us = 0, busbw_GBps = 0;
};
struct KanLayerRow {
  std::string impl;
  std::vector<long long> widths;  // empty: not stated
  std::optional<int> grid_size, spline_order, batch;
  std::string precision;
  std::optional<double> forward_ms, backward_ms, forward_backward_ms;
};
struct DispatchRow {
  std::string mode;  // eager | compiled (torch.compile) | device (a GPU tensor: dispatch and the device's own work)
  std::string op;
  double overhead_us = 0;
};

struct CorpusEntry {
  std::string id, file, kind;  // kind: nccl_allreduce | kan_layer | dispatch | ddp_scaling
  std::string address, date, where;
  std::string health;  // healthy | unhealthy | unknown
  std::string health_pointer, health_note;
  bool scored = false;
  std::string cls;  // nvswitch | nvlink | pcie | infiniband | roce | unmodelled | compute | dispatch | ddp
  CorpusSystem system;
  std::optional<GpuSheet> gpu;  // the named model's sheet (absent where no GPU is named)
  std::vector<NcclRow> nccl;
  std::vector<KanLayerRow> kan;
  std::vector<DispatchRow> dispatch;
  std::size_t ddp_rows = 0;
  // The machine, as one key (the source's site and the GPU model): entries
  // of one machine (another NCCL version, another node count, another run)
  // share it, so a leave-one-out leaves them all out.
  std::string system_key() const;
};

// Reads one entry; its GPU is looked up in `gpus_dir` (an unknown model is
// refused). Checks: the id is the file's stem, sizes positive and
// increasing, times positive, busbw = size/time x 2(n-1)/n within the
// printed rounding, and busbw at most twice the link's datasheet peak.
CorpusEntry load_corpus_entry(const std::string& path, const std::string& gpus_dir);
// Every *.yaml of `dir`, sorted by name (README.md and the like skipped).
std::vector<CorpusEntry> load_corpus(const std::string& dir, const std::string& gpus_dir);

// The priors file `kanscale fit --priors` writes.
NcclPriors load_nccl_priors(const std::string& path);

}  // namespace ks
