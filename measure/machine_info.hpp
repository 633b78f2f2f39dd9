#pragma once
// The machine kanscale runs on (for the measurement files and the
// calibration's fingerprint), and how busy it is.
#include <string>

#include "model/machine.hpp"

namespace ks {

// CPU model, online cores, the vector extensions of /proc/cpuinfo's flags
// that the kernels can use, memory; `gpu` and `collective_library` as the
// caller knows them. Control characters become spaces (one line each).
Machine this_machine(const std::string& gpu, const std::string& collective_library);
// This machine's physical memory in bytes (0 when the system does not say).
double physical_memory_bytes();

// Runnable threads on the machine besides this process's own, from
// /proc/loadavg's running count (-1: unknown). Timings taken while other
// work runs mean less.
// `peers`: runnable threads that belong to the same job (the other ranks
// of an mpirun on this node), not counted.
int other_runnable_threads(int peers = 0);
// A one-line warning when other_runnable_threads(peers) > 0 ("" when quiet).
std::string busy_warning(const std::string& what, int peers = 0);

}  // namespace ks
