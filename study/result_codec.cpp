#include "result_codec.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace ks {
namespace {

constexpr std::uint64_t kMagic = 0x6b73726573756c74ULL;  // "ksresult"
constexpr std::uint64_t kVersion = 2;

class Writer {
 public:
  template <typename T>
  void pod(const T& v) {
    static_assert(std::is_arithmetic_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(const std::string& s) {
    pod(static_cast<std::uint64_t>(s.size()));
    out_ += s;
  }
  template <typename T, typename F>
  void list(const std::vector<T>& v, F each) {
    pod(static_cast<std::uint64_t>(v.size()));
    for (const T& x : v) each(x);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  template <typename T>
  T pod() {
    static_assert(std::is_arithmetic_v<T>);
    T v;
    need(sizeof v);
    std::memcpy(&v, s_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string str() {
    const auto n = pod<std::uint64_t>();
    need(n);
    std::string v = s_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  template <typename T, typename F>
  std::vector<T> list(F each) {
    const auto n = pod<std::uint64_t>();
    need(n);  // every element takes at least a byte
    std::vector<T> v;
    v.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) v.push_back(each());
    return v;
  }
  bool done() const { return pos_ == s_.size(); }

 private:
  void need(std::uint64_t n) const {
    if (n > s_.size() - pos_) throw std::runtime_error("study results: truncated or corrupt bytes");
  }
  const std::string& s_;
  std::size_t pos_ = 0;
};

void put(Writer& w, const Stat& s) {
  w.pod(static_cast<std::uint64_t>(s.n));
  for (double x : {s.median, s.p95, s.mean, s.iqr, s.cv, s.min, s.max}) w.pod(x);
}
Stat get_stat(Reader& r) {
  Stat s;
  s.n = r.pod<std::uint64_t>();
  for (double* x : {&s.median, &s.p95, &s.mean, &s.iqr, &s.cv, &s.min, &s.max}) *x = r.pod<double>();
  return s;
}

void put(Writer& w, const std::optional<Band>& b) {
  w.pod(static_cast<std::uint8_t>(b.has_value()));
  if (b) {
    w.pod(b->lo);
    w.pod(b->hi);
  }
}
std::optional<Band> get_band(Reader& r) {
  if (!r.pod<std::uint8_t>()) return std::nullopt;
  Band b;
  b.lo = r.pod<double>();
  b.hi = r.pod<double>();
  return b;
}

// MemoryEstimate's fields, in one order for both directions.
template <typename M>
auto memory_fields(M& m) {
  return std::array<decltype(&m.peak_bytes), 12>{
      &m.parameters_bytes, &m.gradients_bytes,  &m.buckets_bytes,    &m.optimizer_bytes, &m.activations_bytes,
      &m.transient_bytes,  &m.batch_bytes,      &m.buffers_bytes,    &m.collective_bytes, &m.runtime_bytes,
      &m.peak_bytes,       &m.capacity_bytes};
}

template <typename S>
auto scenario_fields(S& s) {
  return std::array<decltype(&s.speedup), 7>{&s.iteration_s, &s.speedup,        &s.overhead_exposed, &s.overhead_total,
                                             &s.samples_per_s, &s.epoch_s, &s.time_to_train_s};
}

void put(Writer& w, const BucketRow& b) {
  w.pod(b.index);
  w.list(b.params, [&](const std::string& p) { w.str(p); });
  w.pod(b.bytes);
  w.str(b.label);
  w.pod(b.start_s);
  w.pod(b.end_s);
}
BucketRow get_bucket(Reader& r) {
  BucketRow b;
  b.index = r.pod<int>();
  b.params = r.list<std::string>([&] { return r.str(); });
  b.bytes = r.pod<double>();
  b.label = r.str();
  b.start_s = r.pod<double>();
  b.end_s = r.pod<double>();
  return b;
}

void put(Writer& w, const TraceSlice& t) {
  w.pod(t.rank);
  w.pod(t.track);
  w.pod(t.iteration);
  w.str(t.name);
  w.str(t.category);
  w.pod(t.t0_s);
  w.pod(t.t1_s);
  w.pod(t.bytes);
}
TraceSlice get_slice(Reader& r) {
  TraceSlice t;
  t.rank = r.pod<int>();
  t.track = r.pod<int>();
  t.iteration = r.pod<std::int64_t>();
  t.name = r.str();
  t.category = r.str();
  t.t0_s = r.pod<double>();
  t.t1_s = r.pod<double>();
  t.bytes = r.pod<double>();
  return t;
}

void put(Writer& w, const ScalingPoint& p) {
  w.pod(p.gpus);
  w.pod(p.nodes);
  w.pod(p.batch_per_gpu);
  w.pod(p.dataset_size);
  w.pod(p.iterations_per_epoch);
  for (const Stat* s : {&p.iteration_s, &p.compute_s, &p.comm_s, &p.exposed_s, &p.first_iteration_s}) put(w, *s);
  for (double x : {p.overhead_exposed, p.overhead_total, p.samples_per_s, p.epoch_s, p.time_to_train_s, p.job_fixed_s, p.gpu_hours,
                   p.speedup, p.efficiency, p.extrapolation_sigma})
    w.pod(x);
  for (const double* x : memory_fields(p.memory)) w.pod(*x);
  w.list(p.first_plan, [&](const BucketRow& b) { put(w, b); });
  w.list(p.steady_plan, [&](const BucketRow& b) { put(w, b); });
  w.str(p.broadcast_label);
  w.pod(p.events);
  w.list(p.trace, [&](const TraceSlice& t) { put(w, t); });
  put(w, p.iteration_band);
  put(w, p.speedup_band);
  w.pod(static_cast<std::uint8_t>(p.scenario.has_value()));
  if (p.scenario)
    for (const Band* b : scenario_fields(*p.scenario)) {
      w.pod(b->lo);
      w.pod(b->hi);
    }
}
ScalingPoint get_point(Reader& r) {
  ScalingPoint p;
  p.gpus = r.pod<int>();
  p.nodes = r.pod<int>();
  p.batch_per_gpu = r.pod<std::int64_t>();
  p.dataset_size = r.pod<std::int64_t>();
  p.iterations_per_epoch = r.pod<std::int64_t>();
  for (Stat* s : {&p.iteration_s, &p.compute_s, &p.comm_s, &p.exposed_s, &p.first_iteration_s}) *s = get_stat(r);
  for (double* x : {&p.overhead_exposed, &p.overhead_total, &p.samples_per_s, &p.epoch_s, &p.time_to_train_s, &p.job_fixed_s, &p.gpu_hours,
                    &p.speedup, &p.efficiency, &p.extrapolation_sigma})
    *x = r.pod<double>();
  for (double* x : memory_fields(p.memory)) *x = r.pod<double>();
  p.first_plan = r.list<BucketRow>([&] { return get_bucket(r); });
  p.steady_plan = r.list<BucketRow>([&] { return get_bucket(r); });
  p.broadcast_label = r.str();
  p.events = r.pod<std::uint64_t>();
  p.trace = r.list<TraceSlice>([&] { return get_slice(r); });
  p.iteration_band = get_band(r);
  p.speedup_band = get_band(r);
  if (r.pod<std::uint8_t>()) {
    p.scenario.emplace();
    for (Band* b : scenario_fields(*p.scenario)) {
      b->lo = r.pod<double>();
      b->hi = r.pod<double>();
    }
  }
  return p;
}

}  // namespace

std::string encode_results(const std::vector<StudyResult>& results) {
  Writer w;
  w.pod(kMagic);
  w.pod(kVersion);
  w.list(results, [&](const StudyResult& s) {
    w.list(s.points, [&](const ScalingPoint& p) { put(w, p); });
    put(w, s.baseline);
    w.pod(s.parameters);
    w.str(s.collective_family);
    w.list(s.warnings, [&](const std::string& x) { w.str(x); });
    w.pod(s.interval_samples);
    w.str(s.interval_note);
    w.pod(s.interval_replays_reduced);
    w.pod(s.interval_replays_full);
    w.pod(s.interval_ranks_replayed);
    w.pod(s.unknown_samples);
    w.pod(s.unknown_skipped);
  });
  return w.take();
}

std::vector<StudyResult> decode_results(const std::string& bytes) {
  Reader r(bytes);
  if (r.pod<std::uint64_t>() != kMagic || r.pod<std::uint64_t>() != kVersion)
    throw std::runtime_error("study results: not this build's result bytes");
  auto out = r.list<StudyResult>([&] {
    StudyResult s;
    s.points = r.list<ScalingPoint>([&] { return get_point(r); });
    s.baseline = get_point(r);
    s.parameters = r.pod<std::int64_t>();
    s.collective_family = r.str();
    s.warnings = r.list<std::string>([&] { return r.str(); });
    s.interval_samples = r.pod<int>();
    s.interval_note = r.str();
    s.interval_replays_reduced = r.pod<std::uint64_t>();
    s.interval_replays_full = r.pod<std::uint64_t>();
    s.interval_ranks_replayed = r.pod<std::uint64_t>();
    s.unknown_samples = r.pod<int>();
    s.unknown_skipped = r.pod<int>();
    return s;
  });
  if (!r.done()) throw std::runtime_error("study results: trailing bytes");
  return out;
}

}  // namespace ks
