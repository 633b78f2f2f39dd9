// kanscale eval's input CSV (one row of inputs per line, an optional
// header): ks::run_eval, with a small checkpoint (a [3, 4, 2] KAN) written
// once into the temporary directory.
#include <fstream>

#include "fuzz_target.hpp"
#include "measure/kan.hpp"
#include "measure/safetensors.hpp"
#include "measure/eval.hpp"

namespace {

std::string checkpoint() {
  ks::KanNet net = ks::init_kan({3, 4, 2}, 5, 3, 1);
  ks::StFile f;
  for (auto& t : ks::kan_state_refs(net)) f.tensors[t.name] = ks::StTensor{t.shape, std::vector<float>(t.data, t.data + t.size())};
  f.metadata = {{"kan_widths", "3,4,2"}, {"kan_grid_size", "5"}, {"kan_spline_order", "3"}};
  const std::string path = ks::fuzz::temp_dir() + "/model.safetensors";
  std::ofstream(path, std::ios::binary) << ks::safetensors_bytes(f);
  return path;
}

}  // namespace

KS_FUZZ_TARGET(eval_csv) {
  static const std::string model = checkpoint();
  const ks::fuzz::QuietCout quiet;  // the predictions
  const std::string path = ks::fuzz::write_temp("input.csv", data, size);
  ks::fuzz::expect_no_crash([&] { ks::run_eval(model, path, 1); });
}
