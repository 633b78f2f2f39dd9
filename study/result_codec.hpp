#pragma once
// Study results as bytes and back, exactly (doubles as their bits), so
// that scenarios run in other processes (mpirun -np R kanscale study) give
// rank 0 the very results one process would have computed. The format is
// private to one build of kanscale: a version word guards against mixing.
#include <string>
#include <vector>

#include "sim/point.hpp"

namespace ks {

std::string encode_results(const std::vector<StudyResult>& results);
// Throws std::runtime_error on bytes that are not encode_results' output.
std::vector<StudyResult> decode_results(const std::string& bytes);

}  // namespace ks
