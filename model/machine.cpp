#include "machine.hpp"

#include "units.hpp"

namespace ks {

std::string describe(const Machine& m) {
  if (m.empty()) return "an unrecorded machine";
  std::string s = m.cpu_model + ", " + std::to_string(m.cores) + (m.cores == 1 ? " core" : " cores");
  if (!m.isa.empty()) s += ", " + m.isa;
  if (m.memory_bytes > 0) s += ", " + format_bytes(m.memory_bytes);
  if (!m.gpu.empty() && m.gpu != "none") s += ", " + m.gpu;
  return s;
}

std::string machine_mismatch(const Machine& calibrated, const Machine& here) {
  if (calibrated.empty()) return "";
  std::string what;
  auto differs = [&](const std::string& name, const std::string& a, const std::string& b) {
    if (a != b) what += (what.empty() ? "" : ", ") + name + " " + a + " there, " + b + " here";
  };
  differs("CPU", calibrated.cpu_model, here.cpu_model);
  differs("cores", std::to_string(calibrated.cores), std::to_string(here.cores));
  differs("vector extensions", calibrated.isa.empty() ? "-" : calibrated.isa, here.isa.empty() ? "-" : here.isa);
  if (!here.gpu.empty()) differs("GPU", calibrated.gpu.empty() ? "none" : calibrated.gpu, here.gpu);
  return what.empty() ? "" : "the calibration was measured on another machine (" + what + "): its figures may not hold here";
}

}  // namespace ks
