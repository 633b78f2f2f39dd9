#pragma once
// Typed configuration: clusters, workloads and calibrations, as plain
// structs in SI units, and the pure functions on them. The files are read
// into them once, at the edge (formats/config_files).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "machine.hpp"

namespace ks {

enum class LinkKind { nvlink, pcie, shm };
// gloo: torch.distributed's CPU backend (ProcessGroupGloo), what PyTorch DDP uses on CPUs
enum class CollFamily { nccl, mpi, gloo };
enum class Algo { ring, tree };
enum class Proto { ll, ll128, simple };
enum class Precision { fp32, tf32 };
// pytorch: efficient-kan's KAN under PyTorch DDP (what users run; "efficient-kan" is its
// former name); kanscale: kanscale's own trainer (measure/trainer).
enum class Implementation { pytorch, kanscale };
enum class CpuVendor { intel, amd, other };

const char* to_string(LinkKind k);
const char* to_string(Algo a);
const char* to_string(Proto p);
const char* to_string(Precision p);
const char* to_string(Implementation i);

struct GpuSpec {
  std::string model;
  double compute_capability = 0;    // e.g. 8.0
  double fp32_flops = 0;            // FLOP/s, datasheet peak
  double tf32_flops = 0;            // FLOP/s, datasheet peak (tensor cores)
  double memory_bandwidth_Bps = 0;  // datasheet peak
  double memory_bytes = 0;          // capacity
  double kernel_launch_s = 0;       // fixed cost per kernel (launch and dispatch)
  // Kernel launches a stream queues before the next launch blocks the host
  // (the replay's host track). Default: about 1,000, as measured with
  // back-to-back launches of a 190 us kernel (launches took 4-5 us for the
  // first ~1,000, then each waited for a kernel to finish: NVIDIA developer
  // forums, "CUDA stream are blocked when launch lots of kernels (>1000)",
  // 2018); cluster key gpu.launch_queue_depth.
  int launch_queue_depth = 1024;
  double runtime_memory_bytes = 0;  // context and allocator overhead per process
};

struct IntraNodeLink {
  LinkKind kind = LinkKind::pcie;
  double bandwidth_Bps = 0;  // per GPU, one direction, as the collective library models it
  double latency_s = 0;
};

// Inter-node network; the fabric is assumed non-blocking (full bisection).
struct Network {
  int nics_per_node = 1;
  double nic_bandwidth_Bps = 0;
  double latency_s = 0;
  std::string kind;  // infiniband | roce | ethernet | "" (the file's network.kind: which priors apply)
};

struct CollectiveLibrary {
  CollFamily family = CollFamily::nccl;
  std::string version;              // nccl: "2.14.3"; mpi: free text
  std::vector<Algo> algorithms;     // allowed (like NCCL_ALGO)
  std::vector<Proto> protocols;     // allowed (like NCCL_PROTO)
  int channels = 0;                 // nccl: channels per communicator
  // nccl: what the chosen algorithm and protocol achieve of NCCL's own
  // model at each node count, by node class (index c: up to 2^c nodes),
  // a factor on the collective's time; NCCL still picks by its model.
  // Empty or past its end: 1. Set by the nccl_at_<N>nodes settings.
  std::vector<double> node_factor;
  double node_factor_at(int nodes) const;
};

// The node class of a layout: c for 2^(c-1) < nodes <= 2^c (0 for one node).
int node_class(int nodes);

// A job's fixed costs, paid once per job on top of its iterations (time to
// train): start-up (processes launched, the interpreter and its imports,
// the device context) and the communicator's initialisation, which grows
// with the ranks it joins. Each term has its source: the cluster file's
// `job:` keys, or the documented defaults of docs/models.md, "A job's fixed
// costs" (job_costs_default).
struct JobCosts {
  double startup_s = 0;
  double communicator_init_s = 0;           // fixed part, a job of two or more ranks
  double communicator_init_per_rank_s = 0;  // x the job's ranks
  std::string source;                       // where the figures come from
  bool defaulted = false;                   // the documented defaults, not the cluster file's
  double communicator_init(int ranks) const { return ranks > 1 ? communicator_init_s + communicator_init_per_rank_s * ranks : 0.0; }
  // A job of `ranks` running `impl`: its start-up, and the communicator's
  // set-up at two ranks or more. The defaults' start-up imports torch;
  // kanscale's own trainer starts as the mpi family's default measures it
  // (docs/models.md).
  double total(int ranks, Implementation impl = Implementation::pytorch) const;
};

// The documented defaults of a cluster without `job:` keys, by collective
// family (docs/models.md, "A job's fixed costs", for their sources).
JobCosts job_costs_default(CollFamily family);

struct Cluster {
  std::string name;
  std::string file;
  int nodes = 0;
  int gpus_per_node = 0;
  GpuSpec gpu;
  CpuVendor cpu_vendor = CpuVendor::intel;
  IntraNodeLink intra;
  Network net;
  CollectiveLibrary collectives;
  JobCosts job;
  // optional `price: {per_gpu_hour: 2.40, currency: EUR}`
  std::optional<double> price_per_gpu_hour;
  std::string currency;
};

// Which torch's ops a PyTorch job dispatches (model/kan_model's op list; their counts per class
// are what a torch.profiler trace holds; tests/unit_torch_trace.cpp checks
// them against real traces):
//   torch1: Debian's torch 1.13, as this project is built and measured on;
//   torch2: torch 2.x as checked on 2.11.0: zero_grad sets the gradients to
//     None (so AccumulateGrad steals the first gradient, no add), DDP's hook
//     writes grad/world into the bucket itself (reducer::mul_out), indexing
//     skips full slices (grid[:, :-1] is one slice, not two), Adam's first
//     moment is one lerp_ (not mul_, add_), and DDP's first bucket is
//     bucket_cap when bucket_cap_mb is given (model/buckets);
//   torch2_foreach: torch 2 on a GPU, where Adam takes its foreach path (one
//     _foreach_* op per step of the update for all parameters; the step
//     counts stay on the CPU), checked on 2.11 with foreach=True on a CPU.
enum class TorchOpSet { torch1, torch2, torch2_foreach };

struct DdpSettings {
  double bucket_cap_bytes = 25.0 * 1024 * 1024;   // torch: bucket_cap_mb=25 (MiB)
  double first_bucket_bytes = 1.0 * 1024 * 1024;  // torch: _DEFAULT_FIRST_BUCKET_BYTES
  bool bucket_cap_given = false;                   // torch 2 then makes the first bucket bucket_cap too
  bool gradient_as_bucket_view = false;
  bool find_unused_parameters = false;
  bool broadcast_buffers = true;
};

// Samples are counted in 64-bit integers and in doubles (epoch times): the
// dataset stays exact in both (2^53), and weak scaling's N x dataset_size
// is checked where it is formed.
constexpr std::int64_t kMaxDatasetSize = std::int64_t{1} << 53;

struct Workload {
  std::string name;
  std::string file;
  std::vector<std::int64_t> widths;  // [in, h1, ..., out]
  int grid_size = 5;
  int spline_order = 3;
  std::string task;
  std::int64_t batch_per_gpu = 0;
  std::optional<std::int64_t> global_batch;  // for --scaling strong-global-batch
  std::int64_t dataset_size = 0;             // samples at one GPU
  int epochs = 1;
  // Time per epoch outside every iteration, the same at any GPU count:
  // evaluation, data loading, checkpoints, the sampler's shuffle (kanscale
  // train reports its own as "per epoch ... fixed"). Key epoch_overhead.
  double epoch_overhead_s = 0;
  double learning_rate = 1e-3;
  std::uint64_t seed = 0;
  Precision precision = Precision::fp32;
  Implementation implementation = Implementation::pytorch;
  // key torch: the version the job runs ("2.11"); "" : the calibration's
  // (its torch ops' measured_with), else 1.13 (model/kan_model's TorchOpSet)
  std::string torch_version;
  // (not a key) the op set a reader found in the job's own trace; it wins
  // over torch_version
  std::optional<TorchOpSet> torch_ops;
  DdpSettings ddp;
};

// Cost of one kernel class: time = fixed + f(flops / flop_rate, bytes / byte_rate)
// where f is max (roofline, datasheet) or sum (fitted linear model).
struct OpCost {
  double fixed_s = 0;
  double flop_rate = 0;  // FLOP/s
  double byte_rate = 0;  // B/s
  bool roofline = true;
  double element_s = 0;  // per (sample, input) basis evaluation (fitted kanscale layers)
  double weight_s = 0;   // per spline weight (in*out*C) the layer rearranges (fitted kanscale layers)
  // The byte term at the working set's bandwidth (fitted warm kanscale
  // layers, where the kernels file has a cache probe): byte_rate is the rate
  // at the probe's fastest level, and an op's bytes pay the probe's bandwidth
  // at their own size: bytes x (fastest / bw(bytes)) / byte_rate
  // (cache_probe_scale; op_time_s applies it, the fit fitted it so).
  bool bytes_at_working_set = false;
  // A fitted op's coefficient covariance (op_coefficients' order); empty:
  // not recorded (datasheet values, older files).
  std::vector<std::vector<double>> cov{};
  double time_s(double flops, double bytes, double elements = 0, double weights = 0) const;
};

// A fitted op's coefficients, in the fit's order: a layer's (fixed s,
// s per FLOP, s per byte, s per element, s per weight), any other op's
// (fixed s, s per byte); a rate of 0 (no term) is a coefficient of 0.
std::vector<double> op_coefficients(const OpCost& c, bool layer);
// The inverse: sets the terms from coefficients (negative ones count as 0,
// except with `signed_terms`: a calibration drawn from the fit's covariance). A
// coefficient below 0 is kept, so that anticorrelated terms still sum to
// about the fitted time; the op's time is then clamped at 0 as a whole.
// Clamping each coefficient instead biases every draw upward (a term drawn
// below 0 becomes 0 while its anticorrelated partner stays high).
void set_op_coefficients(OpCost& c, bool layer, const std::vector<double>& coef, bool signed_terms = false);

// NCCL tuning constants; the defaults come from the configured NCCL version,
// a fitted calibration can replace them.
struct NcclConstants {
  double base_latency_us[2][3] = {};   // [algo][proto]
  double hw_latency_us[3][2][3] = {};  // [nvlink, pci, net][algo][proto]
  double ll_max_bw_GBps[2][3] = {};    // [volta-or-intel, ampere-or-amd][1 node, 2 nodes, 3+ nodes]
  double per_ch_max_tree_bw_GBps[2][3] = {};  // [volta, ampere][...]
  double ll128_max_bw_per_ch_GBps = 0;
  double ampere_bus_bw_cap_GBps = 0;   // busBw cap when all GPUs are sm_80
  double ring_plateau_factor = 1.0;    // ring/Simple multi-node latency factor
  double tree_correction[3][23] = {};  // [proto][log2(bytes/64)]
};

// OpenMPI-like all-reduce: per message-size regime an algorithm with a
// latency-bandwidth (alpha-beta) cost at the slowest link level used.
enum class MpiAlgo { recursive_doubling, ring };
const char* to_string(MpiAlgo a);
struct MpiRegime {
  double max_bytes = 0;  // regime applies to messages < max_bytes (last: infinity)
  MpiAlgo algorithm = MpiAlgo::ring;
  std::optional<double> latency_s;      // per step; default: the link's latency
  std::optional<double> bandwidth_Bps;  // default: the link's bandwidth
  // The non-blocking call's own CPU time on the issuing rank: launch +
  // bytes / launch_byte_rate (fitted from a --nonblocking sweep; unset: 0).
  std::optional<double> launch_s;
  std::optional<double> launch_Bps;
  // the latency-bandwidth fit's covariance over (latency s, s per byte); empty: not recorded
  std::vector<std::vector<double>> cov{};
};

// A fitted collective whose every step costs latency + bytes / bandwidth.
struct AlphaBetaTerm {
  double latency_s = 0;
  std::optional<double> bandwidth_Bps;     // unset: the link's
  std::vector<std::vector<double>> cov{};  // as MpiRegime's
};

// An MPI broadcast measured on its own (kanscale measure broadcast): a
// binomial tree of ceil(log2 n) steps. Unset: the all-reduce regime's terms
// for the size.
using MpiBroadcast = AlphaBetaTerm;

// How a non-blocking MPI collective progresses while its ranks compute
// (kanscale bench progress): it moves in steps, max(min_steps, ceil(bytes /
// chunk)) of them, each an equal share of its time; a step runs on its own,
// but the next starts only once every rank has been inside MPI since (a
// poll, a launch, or the final wait). Unset: a collective progresses on its
// own (NCCL's kernels, or a library with a progress thread).
struct MpiProgress {
  int min_steps = 1;       // at most 4096 (so too the steps a chunk gives)
  double chunk_bytes = 0;  // bytes one step moves at most; 0: no limit
  // the compute's slowdown while a step runs (a second of work takes 1 +
  // interference), measured with the same benchmark; when set, the replay
  // uses it in place of compute.interference for MPI collectives
  std::optional<double> interference{};
};
int mpi_progress_steps(const MpiProgress& p, double bytes);

// An alpha-beta term's coefficients (latency s, s per byte; no bandwidth: 0)
// and the inverse (a coefficient of 0 or less leaves the bandwidth unset).
std::vector<double> alpha_beta_coefficients(const std::optional<double>& latency_s, const std::optional<double>& bandwidth_Bps);
void set_alpha_beta(std::optional<double>& latency_s, std::optional<double>& bandwidth_Bps, const std::vector<double>& coef);

// A PyTorch op class's fitted cost (kanscale fit on kanscale measure
// torch-ops records): calls x fixed + elements x per_element, where
// `elements` is the class's own size measure (measure/python/kanscale_torch/
// op_bench.py lists them).
struct TorchOpCost {
  double fixed_s = 0, element_s = 0;
  std::vector<std::vector<double>> cov{};  // over (fixed s, s per element); empty: not recorded
  double time_s(double calls, double elements) const { return calls * fixed_s + elements * element_s; }
};

// One collective of the gloo family: gloo's ring all-reduce (2(n-1) steps,
// 2(n-1)/n x bytes) or its binomial broadcast (ceil(log2 n) steps of the
// whole message).
using GlooTerm = AlphaBetaTerm;

// The host's share of PyTorch's ops, for a device that runs them behind the
// host (a pytorch workload on a CUDA cluster: sim/replay's host track): each
// op class's fixed cost per call from the calibration's PyTorch fit (Python,
// the dispatcher, autograd's bookkeeping; its per-element cost is the CPU's
// arithmetic and is left out). Or, where no PyTorch fit is at hand (a
// GPU node nobody measured), one cost per dispatch: every op of the list
// that torch dispatches (each op with a torch_class: a kernel's op, a view,
// an autograd node) costs per_dispatch_s on the host, the eager per-op cost
// public measurements give for a CPU (configs/priors/gpu.yaml's dispatch
// prior), with `sigma` its lognormal spread for one more CPU.
struct HostTerms {
  std::map<std::string, TorchOpCost> ops;
  double per_dispatch_s = 0;  // > 0: every dispatch costs this, and ops are unused
  double sigma = 0;           // per_dispatch_s's lognormal spread (the interval's priors part)
  bool has_launch = false;    // ops' fixed costs hold the kernels' launches (Calibration::torch_host_has_launch)
  std::string from;  // the calibration and the machine it was measured on, or the prior
};

// A posterior calibration (source: posterior; written by kanscale study
// --infer): settings (study/settings keys, as text) of a datasheet
// calibration, conditioned on a source's findings: the point the
// prediction takes, and draws whose spread is its band. Read by formats,
// applied by study/posterior (the model never sees the keys).
struct PosteriorSettings {
  struct Entry {
    std::string key, value;
    std::string where;  // file:line: key '...', for an error about the value
  };
  std::string conditioned_on;  // what the settings were conditioned on
  std::string band_without;    // the finding left out of the draws' inference ("" : none)
  std::vector<Entry> point;
  std::vector<std::vector<Entry>> draws;
  bool empty() const { return point.empty() && draws.empty(); }
};

struct Calibration {
  std::string name;
  PosteriorSettings posterior;  // source: posterior only
  // The host terms a pytorch workload on a CUDA cluster takes when this
  // calibration has no PyTorch op classes of its own: passed in from the
  // edge (formats' with_default_host_terms, the shipped PyTorch CPU
  // calibration), never read by the model or the simulator.
  std::optional<HostTerms> default_host_terms;
  std::string source;        // "datasheet" (derived; also a file's "posterior": PosteriorSettings) or "fitted"
  std::string derived_from;  // cluster file or measurement files
  int concurrency = 1;       // ranks per node the compute terms were measured at
  Machine machine;           // where a fitted calibration's measurements were taken (empty: not recorded)
  OpCost gemm;
  OpCost elementwise;
  std::map<std::string, OpCost> ops;  // fitted cost per op class (implementation kanscale), caches warm
  std::map<std::string, OpCost> ops_cold;  // the same with the caches evicted (when measured)
  // Read bandwidth against buffer size (bytes, B/s), measured with every
  // rank of a node reading at once: where an iteration's working set falls
  // on it says how far its ops are from warm toward cold.
  std::vector<std::pair<double, double>> cache_probe;
  double host_overhead_s = 0;  // per iteration
  // What live trainer runs on the calibration's own shapes cost beyond the
  // microbenchmarks' prediction, per ranks on a node: every compute op's
  // time x compute_factor, plus host_overhead_s per iteration, plus
  // per_bucket_s per steady bucket (PyTorch: what each bucket's all-reduce
  // costs the rank beyond the sweep's time: the reducer's hand-off to gloo's
  // worker thread, its future's callback), and every gradient all-reduce's
  // time x comm_factor (the trainer's all-reduces, launched between its
  // ops, against the sweep's back-to-back ones). The study uses the term
  // with the most ranks up to its ranks per node.
  struct LiveTerm {
    int ranks = 1;
    double compute_factor = 1, host_overhead_s = 0, per_bucket_s = 0, comm_factor = 1;
  };
  std::vector<LiveTerm> live_terms;
  // The live runs' remaining relative spread around the corrected prediction
  // (RMS of log(measured / predicted)): the intervals' model error.
  double model_error_sigma = 0;
  // The live runs' run-to-run drift (a random effect per run: the whole
  // machine faster or slower that run), lognormal sigma; 0: not measured.
  double drift_sigma = 0;
  // The live runs' all-reduce time around the communication factor's
  // prediction, out of sample (lognormal sigma): the intervals' error on
  // every gradient all-reduce. 0: not measured.
  double comm_error_sigma = 0;
  // The compute's error where no job was watched (no live terms): RMS of
  // log(measured / microbenchmark-only prediction) over a calibration's live
  // runs (key live.unwatched_error_sigma). A calibration without live runs
  // borrows a shipped one's as its model error (formats' with_shipped_defaults).
  double unwatched_error_sigma = 0;
  // What the intervals carry beyond the calibration's own fits, each with its
  // source (set at the edge, formats' with_shipped_defaults): the compute's
  // unwatched error, the collectives' prior spread (configs/priors/gpu.yaml).
  double unwatched_sigma_applied = 0, priors_sigma_applied = 0;
  std::string unwatched_source, priors_source;
  // The host's per-dispatch cost's spread where it comes from the dispatch
  // prior (default_host_terms' sigma, set with it at the edge): a lognormal
  // factor on every op's host time, drawn as host_scale (1: none). The
  // compute's model error then scales the device's time alone, so that the
  // host is not given two errors for one cost.
  double host_prior_sigma = 0;
  double host_scale = 1;
  // Peak memory against the memory model over a calibration's live runs
  // (RMS of log(measured / predicted); key live.memory_error_sigma): the
  // memory interval's lognormal sigma. A calibration without it borrows a
  // shipped one's where it transfers (memory_source says which, or why none).
  double memory_error_sigma = 0;
  std::string memory_source;
  // what a calibration's live runs held beyond the memory model, per rank
  // (key live.memory_extra), and their error with none (key
  // live.unwatched_memory_sigma: what a calibration without live runs borrows)
  double memory_live_extra_bytes = 0, unwatched_memory_sigma = 0;
  // A rank's compute speed that persists through a run, lognormal sigma:
  // the spread of the ranks' own medians in the live multi-rank runs
  // (rank_spread_sigma). The point prediction gives the ranks
  // rank_spread_factors, an interval sample draws them. 0: not measured.
  double rank_sigma = 0;
  double compute_scale = 1;  // a drawn model error and drift (uncertainty draws only); 1: none
  double comm_scale = 1;     // a drawn communication error (uncertainty draws only); 1: none
  double jitter_sigma = 0;     // lognormal sigma of a rank's per-iteration compute factor
  double interference = 0;     // compute slowdown fraction while the rank's collective runs
  NcclConstants nccl;
  std::optional<double> nccl_bus_bw_intra_Bps;  // overrides the cluster-derived values
  std::optional<double> nccl_bus_bw_inter_Bps;
  std::vector<MpiRegime> mpi_regimes;
  std::optional<MpiBroadcast> mpi_broadcast;
  std::optional<MpiProgress> mpi_progress;
  // gloo (PyTorch's CPU backend): all-reduce and broadcast, when fitted
  std::optional<GlooTerm> gloo_allreduce, gloo_broadcast;
  // which collective family's terms the file gave ("mpi", "nccl", "gloo",
  // several or none): terms of another family than the cluster's are not used
  bool has_mpi_terms = false, has_nccl_terms = false, has_gloo_terms = false;
  // PyTorch's op classes (implementation pytorch), fitted; empty: none
  std::map<std::string, TorchOpCost> torch_ops;
  std::string torch_fingerprint;  // the torch, BLAS and Python they were measured with
  // A GPU job's traces (calibrate --from-trace): per op class, the device's
  // time for its kernels (calls x fixed + elements x per_element, in place
  // of the datasheet roofline of the class's ops); and whether torch_ops'
  // host costs already hold the kernels' launches (the traced host ops
  // did launch them: the cluster's kernel_launch is not added again)
  std::map<std::string, TorchOpCost> torch_device_ops;
  bool torch_host_has_launch = false;
  double runtime_memory_bytes = 0;  // one rank per node
  // added per other rank on the node (fitted from runs at several ranks per node)
  double runtime_memory_per_local_peer_bytes = 0;
  // the communication library's memory per byte all-reduced while a
  // non-blocking all-reduce is in flight (kanscale bench interference)
  double memory_collective_in_flight = 0;
  // Fitted memory terms (kanscale fit); unset: the memory model's own
  // accounting (4 bytes per parameter per copy, factor 1 on activations).
  double memory_fixed_bytes = 0;
  std::optional<double> memory_bytes_per_parameter;
  std::optional<double> memory_activation_factor;
};


// How far from cache-warm toward cache-cold a working set runs: the rise of
// the measured read time per byte at that size (the bandwidth bw(ws)
// log-linearly interpolated in size), from the best (in cache) to the worst
// (in memory): (1/bw(ws) - 1/best) / (1/worst - 1/best), in [0, 1]; 0
// without a probe.
double cold_fraction_for(const Calibration& cal, double working_set_bytes);

// The probe's read bandwidth at `bytes` (log-linear in size between its
// points, its end values beyond them); 0 without at least two points.
double probe_bandwidth(const std::vector<std::pair<double, double>>& probe, double bytes);
// How much slower than at the probe's fastest level `bytes` are read where
// they fall on it: fastest / bw(bytes), at least 1; 1 without a probe.
double cache_probe_scale(const std::vector<std::pair<double, double>>& probe, double bytes);

// The live term for a node with `ranks_per_node` ranks (null: none).
const Calibration::LiveTerm* live_term_for(const Calibration& cal, int ranks_per_node);

// A prediction for more ranks than its calibration's live runs measured:
// the live terms (compute and communication factors, the per-bucket cost)
// and the ranks' spread (Blom's order statistics) are carried from
// `measured_ranks` to `predicted_ranks` without a measurement. Its
// interval widens by a lognormal `sigma` on the iteration's compute and
// communication: `per_doubling_sigma` x log2(predicted / measured).
struct Extrapolation {
  int measured_ranks = 0, predicted_ranks = 0;
  double per_doubling_sigma = 0, sigma = 0;
  std::string source;  // where per_doubling_sigma comes from
  bool applies() const { return sigma > 0; }
};
// Until a run at 4-16 ranks measures it (issue 56's scaling check): the
// shipped local-cpu calibration's live compute factor moved from 1.066 at
// one rank to 1.128 at two (configs/calibrations/local-cpu.yaml, 6 Dec
// 2026): log(1.128 / 1.066) = 0.057 in one doubling of the ranks. A
// calibration whose own terms moved more per doubling gives its own figure.
inline constexpr double kExtrapolationPriorPerDoubling = 0.057;
// Extrapolation from the largest rank count of `cal`'s live terms to
// `ranks`; none (sigma 0) without live terms or within what they measured.
Extrapolation extrapolation_for(const Calibration& cal, int ranks);

// Whether a workload's ops run on a host track and a device track (a
// pytorch workload on a CUDA cluster, NCCL collectives: sim/replay).
bool host_track_applies(const Cluster& c, const Workload& w);
// Whether such a prediction needs host terms the calibration lacks.
bool needs_default_host_terms(const Cluster& c, const Workload& w, const Calibration& cal);

// The calibration a cluster file implies from datasheet numbers alone.
Calibration datasheet_calibration(const Cluster& c, Precision precision);
// Empty, or a warning that the calibration's collective terms are of
// another family than the cluster's (so they are not used).
std::string collective_family_mismatch(const Cluster& c, const Calibration& cal);
const char* to_string(CollFamily f);

// Refuses (InputError) a calibration that cannot cost the workload's
// implementation: a PyTorch workload with a calibration fitted from
// kanscale's kernels only, which says which calibration to make.
void check_calibration_covers(const Workload& w, const Calibration& cal, const std::string& calibration_file);

// NCCL's tuning constants for a version string ("2.14.3"); throws
// InputError naming `where` for versions kanscale carries no table for.
NcclConstants nccl_constants_for(const std::string& version, const std::string& where);

}  // namespace ks
