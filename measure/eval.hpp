#pragma once
// kanscale eval: a checkpoint's predictions for the rows of a CSV file.
#include <string>

namespace ks {

// Prints one CSV row of outputs (y0, y1, ...) per input row; throws
// InputError naming the file and line for a row that is not `in` numbers.
int run_eval(const std::string& checkpoint, const std::string& input_csv, int threads);

}  // namespace ks
