#pragma once
// A site file (configs/sites/*.yaml): how a cluster runs jobs, for
// `validate --emit DIR --site FILE`: the scheduler and its partition and
// account, the modules to load, the MPI launcher and its flags, how GPUs
// are bound to tasks, the shared scratch the run directory belongs on,
// the command that runs kanscale there, and whether jobs run as root.
// Format and keys: docs/validating.md, "Job scripts for a cluster".
#include <optional>
#include <string>
#include <vector>

namespace ks {

struct Site {
  std::string name, file;
  std::string scheduler;  // "slurm" or "none" (a plain host: mpirun)
  std::string partition, account, time_limit = "02:00:00";
  std::optional<int> cpus_per_task;
  std::vector<std::string> modules;
  bool load_modules = false;  // false: the module lines are written as comments to edit
  std::string launcher;       // "srun" (slurm) or "mpirun"
  std::vector<std::string> launcher_flags;
  std::string gpu_binding = "per_task";  // "per_task" (one GPU a task, on #SBATCH and srun alike) or "none"
  // where the run directory belongs (shared by the nodes): an absolute path,
  // or $NAME or ${NAME} with an optional /rest (a variable the cluster sets)
  std::string scratch;
  std::string kanscale = "kanscale";  // the command that runs kanscale on the cluster's nodes
  bool run_as_root = false;
};

// Reads and checks a site file; one InputError line (file, line, key) on bad input.
Site load_site(const std::string& path);

// The scratch path as a shell word: a leading $NAME or ${NAME} stays a
// variable ("${NAME}"), the rest is quoted.
std::string scratch_shell_word(const std::string& scratch);

}  // namespace ks
