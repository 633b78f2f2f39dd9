#include "checkpoint.hpp"

#include <sstream>
#include <stdexcept>

#include "formats/provenance.hpp"
#include "model/kan_model.hpp"
#include "base/output_files.hpp"
#include "formats/yaml_reader.hpp"
#include "safetensors.hpp"

namespace ks {

namespace {

std::int64_t meta_int(const std::string& file, const std::string& key, const std::string& value) {
  std::size_t pos = 0;
  long long v = 0;
  try {
    v = std::stoll(value, &pos);
  } catch (...) {
    pos = 0;
  }
  if (pos == 0 || pos != value.size()) throw InputError(file + ": metadata '" + key + "' is not an integer: \"" + value + "\"");
  return v;
}

std::string model_metadata_key(const KanNet& net) {
  std::string s;
  for (auto w : net.widths()) s += (s.empty() ? "" : ",") + std::to_string(w);
  return s;
}

}  // namespace

std::string optimizer_state_path(const std::string& checkpoint) {
  const std::string ext = ".safetensors";
  if (checkpoint.size() > ext.size() && checkpoint.compare(checkpoint.size() - ext.size(), ext.size(), ext) == 0)
    return checkpoint.substr(0, checkpoint.size() - ext.size()) + ".optim.safetensors";
  return checkpoint + ".optim.safetensors";
}

void save_checkpoint(const std::string& path, KanNet& net, const Adam& adam, const TrainOptions& o, int world,
                     std::int64_t step) {
  StFile model;
  for (auto& t : kan_state_refs(net)) model.tensors[t.name] = StTensor{t.shape, std::vector<float>(t.data, t.data + t.size())};
  model.metadata = {{"format", "pt"},
                    {kProvenanceKey, describe(provenance())},
                    {"kan_widths", model_metadata_key(net)},
                    {"kan_grid_size", std::to_string(net.layers[0].G)},
                    {"kan_spline_order", std::to_string(net.layers[0].k)},
                    {"step", std::to_string(step)}};
  StFile state;
  const auto params = kan_parameter_refs(net);
  for (std::size_t p = 0; p < params.size(); ++p) {
    state.tensors["exp_avg." + params[p].name] = StTensor{params[p].shape, adam.exp_avg[p]};
    state.tensors["exp_avg_sq." + params[p].name] = StTensor{params[p].shape, adam.exp_avg_sq[p]};
  }
  state.metadata = {{"step", std::to_string(step)},
                    {"seed", std::to_string(o.seed)},
                    {"world_size", std::to_string(world)},
                    {"batch_per_gpu", std::to_string(o.workload.batch_per_gpu)},
                    {"dataset_size", std::to_string(o.workload.dataset_size)},
                    {"task", o.workload.task},
                    {"lr", std::to_string(adam.lr)},
                    {"threads", std::to_string(o.threads)},
                    {"rng", "counter-based: every draw is a function of (seed, stream, index); the step is the state"},
                    {"kan_widths", model_metadata_key(net)}};
  write_files_atomic({{optimizer_state_path(path), safetensors_bytes(state)}, {path, safetensors_bytes(model)}});
}

// Loads a checkpoint's model into a net of the same shape.
KanNet load_model(const std::string& path, const Workload* expect, int* G_out, int* k_out) {
  const StFile f = read_safetensors(path);
  auto meta = [&](const std::string& k) {
    auto it = f.metadata.find(k);
    if (it == f.metadata.end()) throw InputError(path + ": checkpoint metadata lacks '" + k + "' (not written by kanscale?)");
    return it->second;
  };
  std::vector<std::int64_t> widths;
  std::stringstream ss(meta("kan_widths"));
  std::string item;
  while (std::getline(ss, item, ',')) {
    widths.push_back(meta_int(path, "kan_widths", item));
    if (widths.back() < 1 || widths.back() > YamlMap::kIntMax)
      throw InputError(path + ": metadata 'kan_widths': " + item + " is not a width from 1 to " + std::to_string(YamlMap::kIntMax));
  }
  const std::int64_t G64 = meta_int(path, "kan_grid_size", meta("kan_grid_size"));
  const std::int64_t k64 = meta_int(path, "kan_spline_order", meta("kan_spline_order"));
  if (G64 < 1 || G64 > YamlMap::kIntMax)
    throw InputError(path + ": metadata 'kan_grid_size': expected 1 to " + std::to_string(YamlMap::kIntMax) + ", got " + meta("kan_grid_size"));
  if (k64 < 1 || k64 > 16) throw InputError(path + ": metadata 'kan_spline_order': expected 1 to 16, got " + meta("kan_spline_order"));
  const int G = static_cast<int>(G64), k = static_cast<int>(k64);
  if (widths.size() < 2) throw InputError(path + ": metadata 'kan_widths': checkpoint metadata describes no valid KAN");
  // The metadata must agree with the tensors the file holds before the net
  // is allocated: a small file claiming wide layers is refused at once.
  const KanShape shape{widths, G, k};
  if (const std::string why = kan_size_problem(shape); !why.empty()) throw InputError(path + ": metadata 'kan_widths': " + why);
  for (const auto& p : kan_parameters(shape)) {
    auto it = f.tensors.find(p.name);
    if (it == f.tensors.end()) throw InputError(path + ": checkpoint lacks tensor '" + p.name + "'");
    if (static_cast<std::int64_t>(it->second.data.size()) != p.numel)
      throw InputError(path + ": tensor '" + p.name + "' holds " + std::to_string(it->second.data.size()) +
                       " values; metadata 'kan_widths', 'kan_grid_size' and 'kan_spline_order' describe " + std::to_string(p.numel));
  }
  if (expect && (expect->widths != widths || expect->grid_size != G || expect->spline_order != k)) {
    throw InputError(path + ": checkpoint holds a KAN of widths [" + meta("kan_widths") + "], G=" + std::to_string(G) +
                     ", k=" + std::to_string(k) + "; the workload asks for another");
  }
  KanNet net = init_kan(widths, G, k, 0);
  for (auto& t : kan_state_refs(net)) {
    auto it = f.tensors.find(t.name);
    if (it == f.tensors.end()) throw InputError(path + ": checkpoint lacks tensor '" + t.name + "'");
    if (it->second.shape != t.shape) throw InputError(path + ": tensor '" + t.name + "' has the wrong shape");
    std::copy(it->second.data.begin(), it->second.data.end(), t.data);
  }
  if (G_out) *G_out = G;
  if (k_out) *k_out = k;
  return net;
}

void save_on_rank0(const TrainOptions& o, Comm& host, KanNet& net, const Adam& adam, std::int64_t step) {
  std::string error;
  if (host.rank() == 0) {
    try {
      save_checkpoint(o.checkpoint, net, adam, o, host.size(), step);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (host.allreduce_max(error.empty() ? 0.0 : 1.0) > 0)
    throw std::runtime_error(host.rank() == 0 ? error : "rank 0 could not write the checkpoint");
}

std::int64_t resume_checkpoint(const TrainOptions& o, int world, KanNet& net, Adam& adam) {
  const Workload& w = o.workload;
  net = load_model(o.resume, &w, nullptr, nullptr);
  const auto prefs = kan_parameter_refs(net);
  const StFile st = read_safetensors(optimizer_state_path(o.resume));
  auto meta = [&](const std::string& k) {
    auto it = st.metadata.find(k);
    if (it == st.metadata.end()) throw InputError(optimizer_state_path(o.resume) + ": lacks metadata '" + k + "'");
    return it->second;
  };
  const std::string sp = optimizer_state_path(o.resume);
  // Everything that decides the arithmetic or the data order must match
  // for the continuation to be bit-identical.
  auto same = [&](const std::string& key, const std::string& now_value, const char* why) {
    if (meta(key) != now_value)
      throw InputError(sp + ": saved with " + key + " " + meta(key) + ", resumed with " + now_value + " (" + why + ")");
  };
  same("world_size", std::to_string(world), "the data shards would differ");
  same("seed", std::to_string(o.seed), "the data order would differ");
  same("batch_per_gpu", std::to_string(w.batch_per_gpu), "the batches would differ");
  same("dataset_size", std::to_string(w.dataset_size), "the data would differ");
  same("task", w.task, "the data would differ");
  same("lr", std::to_string(w.learning_rate), "the updates would differ");
  same("threads", std::to_string(o.threads), "sums split over threads round differently");
  const std::int64_t start_step = meta_int(sp, "step", meta("step"));
  const StFile model_file = read_safetensors(o.resume);
  if (model_file.metadata.count("step") == 0 || model_file.metadata.at("step") != meta("step"))
    throw InputError(o.resume + ": the model and " + sp + " are from different steps");
  adam.step = start_step;
  for (std::size_t p = 0; p < prefs.size(); ++p) {
    for (const char* which : {"exp_avg.", "exp_avg_sq."}) {
      auto it = st.tensors.find(which + prefs[p].name);
      if (it == st.tensors.end() || it->second.data.size() != prefs[p].size())
        throw InputError(optimizer_state_path(o.resume) + ": missing or mismatched '" + which + prefs[p].name + "'");
      (std::string(which) == "exp_avg." ? adam.exp_avg[p] : adam.exp_avg_sq[p]) = it->second.data;
    }
  }
  return start_step;
}

}  // namespace ks
