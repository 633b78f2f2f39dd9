#include "eval.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <vector>

#include "checkpoint.hpp"
#include "kan.hpp"
#include "kan_cpu.hpp"
#include "formats/yaml_reader.hpp"

namespace ks {

int run_eval(const std::string& checkpoint, const std::string& input_csv, int threads) {
  set_cpu_threads(threads);
  KanNet net = load_model(checkpoint, nullptr, nullptr, nullptr);
  const int in = net.layers.front().in, out = net.layers.back().out;
  // One row of `in` numbers per line; an optional header line of `in` column
  // names first. Empty lines and '#' comments are skipped; an empty cell (a
  // trailing comma) or a row of another width is an error, with its line.
  const std::string text = read_input_file(input_csv, "a CSV file of inputs");
  std::vector<float> X;
  std::stringstream lines(text);
  std::string line;
  int lineno = 0;
  bool seen_row = false;
  const std::string want = std::to_string(in) + " comma-separated value" + (in == 1 ? "" : "s");
  while (std::getline(lines, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const std::string where = input_csv + ":" + std::to_string(lineno) + ": ";
    std::vector<std::string> cells;
    std::size_t from = 0;
    for (;;) {
      const std::size_t comma = line.find(',', from);
      cells.push_back(line.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
    for (std::size_t c = 0; c < cells.size(); ++c)
      if (cells[c].find_first_not_of(" \t") == std::string::npos)
        throw InputError(where + "column " + std::to_string(c + 1) + " is empty" +
                         (c + 1 == cells.size() ? " (a trailing comma?)" : "") + "; expected " + want);
    std::vector<float> row;
    bool numeric = true;
    std::size_t numbers = 0;  // cells that read as numbers: a header has none
    for (const auto& cell : cells) {
      char* end = nullptr;
      errno = 0;
      const float v = std::strtof(cell.c_str(), &end);
      while (end && (*end == ' ' || *end == '\t')) ++end;
      if (end == cell.c_str() || *end != '\0') {
        numeric = false;
        continue;
      }
      ++numbers;
      if (!std::isfinite(v) || errno == ERANGE)
        throw InputError(where + "\"" + cell + "\" is not a finite number within float range");
      row.push_back(v);
    }
    if (!numeric && numbers > 0)
      throw InputError(where + "a row of numbers with a cell that is not one (\"" + line + "\"); expected " + want +
                       (lineno == 1 ? " (a header names every column, with no number)" : ""));
    if (!numeric && !seen_row && X.empty() && lineno == 1) {
      if (static_cast<int>(cells.size()) != in)
        throw InputError(where + "the header names " + std::to_string(cells.size()) + " column(s); the checkpoint's KAN takes " + want);
      seen_row = true;  // the header; rows follow
      continue;
    }
    if (!numeric) throw InputError(where + "expected " + want + " (numbers), got \"" + line + "\"");
    if (static_cast<int>(row.size()) != in)
      throw InputError(where + "expected " + std::to_string(in) + " values, got " + std::to_string(row.size()));
    seen_row = true;
    X.insert(X.end(), row.begin(), row.end());
  }
  const int B = static_cast<int>(X.size() / static_cast<std::size_t>(in));
  if (B == 0) throw InputError(input_csv + ": no rows of inputs (expected lines of " + want + ")");
  KanCpuNet cpu(net);
  std::vector<float> T(static_cast<std::size_t>(B) * out, 0.0f);
  cpu.forward(X.data(), T.data(), B);
  // a checkpoint whose weights are not finite predicts nothing: say so rather than print nan
  for (std::size_t i = 0; i < static_cast<std::size_t>(B) * out; ++i)
    if (!std::isfinite(cpu.output()[i]))
      throw InputError(checkpoint + ": the prediction for row " + std::to_string(i / out + 1) + " is not a finite number "
                       "(the checkpoint's weights are not finite, or the inputs are far outside its grid)");
  std::cout << std::setprecision(9);
  for (int o = 0; o < out; ++o) std::cout << (o ? "," : "") << "y" << o;
  std::cout << "\n";
  for (int s = 0; s < B; ++s) {
    for (int o = 0; o < out; ++o) std::cout << (o ? "," : "") << cpu.output()[static_cast<std::size_t>(s) * out + o];
    std::cout << "\n";
  }
  return 0;
}

}  // namespace ks
