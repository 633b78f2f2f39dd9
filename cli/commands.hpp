#pragma once
#include <string>
#include <vector>

namespace ks::cli {
int simulate(const std::vector<std::string>& args, const std::string& cmdline);
int bench(const std::vector<std::string>& args, const std::string& cmdline);
int bench_kernels(const std::vector<std::string>& args);
int bench_study(const std::vector<std::string>& args);
int bench_trace(const std::vector<std::string>& args);
int whatif(const std::vector<std::string>& args);
int bench_interference(const std::vector<std::string>& args, const std::string& cmdline);
int bench_progress(const std::vector<std::string>& args, const std::string& cmdline);
int bench_overlap(const std::vector<std::string>& args, const std::string& cmdline);
int measure(const std::vector<std::string>& args, const std::string& cmdline);
int fit(const std::vector<std::string>& args, const std::string& cmdline);
int model(const std::vector<std::string>& args, const std::string& cmdline);
int validate(const std::vector<std::string>& args, const std::string& cmdline);
int calibrate(const std::vector<std::string>& args, const std::string& cmdline);
int study(const std::vector<std::string>& args, const std::string& cmdline);
int import_cmd(const std::vector<std::string>& args, const std::string& cmdline);
int train(const std::vector<std::string>& args, const std::string& cmdline);
int eval(const std::vector<std::string>& args, const std::string& cmdline);
}  // namespace ks::cli
