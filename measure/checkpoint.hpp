#pragma once
// Checkpoints of the live trainer: the model as safetensors under
// PyTorch's state_dict names (efficient-kan's), Adam's moments in a sibling
// file, and a resume that refuses a checkpoint whose continuation would not
// be bit-identical.
#include <cstdint>
#include <string>

#include "adam.hpp"
#include "comm.hpp"
#include "kan.hpp"
#include "model/config.hpp"
#include "trainer.hpp"

namespace ks {

// The optimizer state's file beside a checkpoint (x.safetensors ->
// x.optim.safetensors).
std::string optimizer_state_path(const std::string& checkpoint);

// Writes the model and the optimizer state (atomically, both or neither).
void save_checkpoint(const std::string& path, KanNet& net, const Adam& adam, const TrainOptions& o, int world,
                     std::int64_t step);

// Rank 0 writes o.checkpoint; every rank learns whether it worked, so a
// failure ends all of them with rank 0's message instead of leaving the
// others waiting.
void save_on_rank0(const TrainOptions& o, Comm& host, KanNet& net, const Adam& adam, std::int64_t step);

// A checkpoint's model, its shape read from the metadata and checked
// against the tensors (and against `expect` when given).
KanNet load_model(const std::string& path, const Workload* expect, int* G_out, int* k_out);

// --resume: loads o.resume's model into `net` and its optimizer state into
// `adam` (initialised for the same shapes); every setting that decides the
// arithmetic or the data order must match the saved one. Returns the step.
std::int64_t resume_checkpoint(const TrainOptions& o, int world, KanNet& net, Adam& adam);

}  // namespace ks
