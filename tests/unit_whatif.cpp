// kanscale whatif on hand-checkable cases. The cluster's links have no
// bandwidth cost (1e21 B/s) and MPI all-reduces by recursive doubling, so an
// all-reduce on N ranks takes ceil(log2 N) link latencies: 0.1 ms within a
// node, 0.5 ms between nodes. The calibration times only the KAN layers,
// 2 us per (sample, input) forward and 1 us per (sample, input) of an input
// gradient backward (the first layer computes none), so compute is linear
// in the batch; every other op is free, as are jitter, interference and the
// host. With widths [4, 1] and batch 100 an iteration computes
// 100 x 4 x 2 us = 0.8 ms, and its one bucket is ready when backward
// ends, so the all-reduce is fully exposed:
//   N=1: 0.8 ms         N=2 on 1 node: 0.9 ms   N=2 on 2 nodes: 1.3 ms
//   N=4 on 2 nodes: 1.8 ms   N=8 on 4 nodes: 0.8 + 3 x 0.5 = 2.3 ms.
// 6,400 samples at 100 per GPU: 64 / N iterations per epoch; 10 epochs:
//   N=1: 512 ms; N=2: 288 ms (1 node) or 416 ms (2 nodes); N=4: 288 ms;
//   N=8: 184 ms. Efficiency 512 / (N x time): 0.889, 0.444, 0.348.
#include <doctest/doctest.h>

#include <limits>

#include "formats/yaml_reader.hpp"
#include "study/whatif.hpp"
#include "formats/config_files.hpp"

using namespace ks;

namespace {

std::string cluster_yaml(const char* name, const char* net_latency, const char* price) {
  return std::string("name: ") + name +
         "\nnodes: 4\ngpus_per_node: 2\n"
         "gpu: {model: test, fp32: \"10TFLOP/s\", memory_bandwidth: \"1000GB/s\", memory: \"1MiB\", kernel_launch: \"0s\", "
         "runtime_memory: \"0B\"}\n"
         "intra_node: {kind: shm, bandwidth: \"1000000000PB/s\", latency: \"0.1ms\"}\n"
         "network: {nics_per_node: 1, nic_bandwidth: \"1000000000PB/s\", latency: \"" +
         net_latency + "\"}\ncollectives: {family: mpi, version: \"test\"}\n" +
         // no fixed job costs: the times to train below are iterations alone
         "job: {startup: \"0s\", communicator_init: \"0s\", communicator_init_per_rank: \"0s\", source: \"none (a hand case)\"}\n" + price;
}

Workload workload(const char* widths, const char* ddp = "broadcast_buffers: false") {
  return parse_workload(std::string("name: hand\nkan: {widths: ") + widths +
                            ", grid_size: 5, spline_order: 3}\nbatch_per_gpu: 100\ndataset_size: 6400\nepochs: 10\n"
                            "implementation: kanscale\nddp: {" + ddp + "}\n",
                        "hand.yaml");
}

Calibration hand_calibration(const Cluster& c) {
  Calibration cal = datasheet_calibration(c, Precision::fp32);
  cal.name = "hand";
  cal.ops.clear();
  for (const char* op : {"load_batch", "kan_forward", "mse", "kan_backward", "bucket_copy", "copy_back", "adam"}) cal.ops[op] = OpCost{};
  cal.ops["kan_forward"].element_s = 2e-6;
  cal.ops["kan_backward"].element_s = 1e-6;
  cal.ops_cold.clear();
  MpiRegime r;
  r.max_bytes = std::numeric_limits<double>::infinity();
  r.algorithm = MpiAlgo::recursive_doubling;
  cal.mpi_regimes = {r};
  cal.mpi_broadcast.reset();
  cal.jitter_sigma = 0;
  cal.interference = 0;
  cal.host_overhead_s = 0;
  cal.model_error_sigma = 0;
  cal.memory_activation_factor = 0.0;  // memory: the model state and the grids only
  cal.memory_bytes_per_parameter.reset();
  cal.runtime_memory_bytes = 0;
  cal.runtime_memory_per_local_peer_bytes = 0;
  cal.memory_fixed_bytes = 0;
  cal.memory_collective_in_flight = 0;
  return cal;
}

WhatifBase base(const char* widths = "[4, 1]", const char* ddp = "broadcast_buffers: false") {
  WhatifBase b;
  WhatifCluster wc;
  wc.cluster = parse_cluster(cluster_yaml("A", "0.5ms", "price: {per_gpu_hour: 2.0, currency: EUR}\n"), "a.yaml");
  wc.label = "A";
  wc.calibration = hand_calibration(wc.cluster);
  b.clusters.push_back(wc);
  b.workload = workload(widths, ddp);
  b.options.iterations = 3;
  return b;
}

double num(const nlohmann::json& v) { return v.get<double>(); }
doctest::Approx rel(double x) { return doctest::Approx(x).epsilon(1e-9).scale(0); }

}  // namespace

TEST_CASE("whatif gpus: the fewest GPUs within the budget, its layout, and the closest when none meets") {
  WhatifBase b = base();
  GpusQuery q;
  q.epochs = 10;
  q.budget_s = 0.300;  // 2 GPUs on one node: 288 ms (on two nodes: 416 ms)
  WhatifAnswer a = whatif_gpus(b, q);
  REQUIRE(a.met);
  REQUIRE(a.chosen >= 0);
  const auto& row = a.rows[a.chosen];
  CHECK(row[0] == 2);
  CHECK(row[2] == 1);  // one node
  CHECK(num(row[7]) == rel(0.288));
  CHECK(num(row[8]) == rel(512.0 / (2 * 288)));
  // the table searched holds every layout: N=2 on two nodes, 416 ms
  bool two_nodes = false;
  for (const auto& r : a.rows)
    if (r[0] == 2 && r[2] == 2) two_nodes = num(r[7]) == rel(0.416);
  CHECK(two_nodes);
  // at efficiency >= 0.9 nothing meets: N=2 on one node comes closest
  // (max(288/300, 0.9/0.889) = 1.0125 against N=1's 512/300 = 1.71)
  q.min_efficiency = 0.9;
  a = whatif_gpus(b, q);
  CHECK_FALSE(a.met);
  CHECK(a.rows[a.chosen][0] == 2);
  CHECK(a.rows[a.chosen][2] == 1);
  CHECK(a.answer.find("closest") != std::string::npos);
  // 150 ms: even 8 GPUs take 184 ms; the closest is 8
  q.min_efficiency.reset();
  q.budget_s = 0.150;
  a = whatif_gpus(b, q);
  CHECK_FALSE(a.met);
  CHECK(a.rows[a.chosen][0] == 8);
  CHECK(num(a.rows[a.chosen][7]) == rel(0.184));
  CHECK(a.text().find("no candidate meets it") != std::string::npos);
}

TEST_CASE("whatif model: the largest hidden width and grid that fit, derived from the memory terms") {
  // Memory with the activations calibrated away: 20 B per parameter
  // (parameters, gradients, the bucket copy, Adam's two moments) plus the
  // grids, 4 B x in x (G + 2k + 1) per layer. Widths [4, h, 1], G=5, k=3:
  // 10 x (4h + h) = 50h parameters and 4 x 12 x (4 + h) B of grids:
  // peak 1,048h + 192 B <= 1 MiB = 1,048,576 B gives h = 1000 (1,048,192 B;
  // 1001 needs 1,049,240 B).
  WhatifBase b = base("[4, 8, 1]");
  ModelQuery q;
  q.vary = "widths";
  q.memory_headroom = 0;  // the derivation above is at the capacity itself
  WhatifAnswer a = whatif_model(b, q);
  REQUIRE(a.met);
  CHECK(a.rows[a.chosen][0] == 1000);
  CHECK(num(a.rows[a.chosen][5]) == 1048192.0);
  bool next = false;
  for (const auto& r : a.rows)
    if (r[0] == 1001) next = num(r[5]) == 1049240.0 && r[6] == false;
  CHECK(next);
  // with 10% headroom: 1.1 x (1,048h + 192) <= 1,048,576 gives h = 909
  // (1.1 x 952,824 = 1,048,106 B; 910 needs 1.1 x 953,872 = 1,049,259 B)
  q.memory_headroom = 0.10;
  a = whatif_model(b, q);
  REQUIRE(a.met);
  CHECK(a.rows[a.chosen][0] == 909);
  CHECK(a.answer.find("10% headroom") != std::string::npos);
  q.memory_headroom = 0;
  // Grid: widths [4, 4, 1]: 20 (G + 5) parameters, 32 (G + 7) B of grids:
  // 432 G + 2,224 <= 1,048,576 gives G = 2422, above kanscale's grid limit
  // (1000, model/limits.hpp): the search stops there and says so. With
  // 432 x 500 + 2,224 = 218,224 B of memory, G = 500 (501 needs 218,656 B).
  b = base("[4, 4, 1]");
  q.vary = "grid";
  a = whatif_model(b, q);
  REQUIRE(a.met);
  CHECK(a.rows[a.chosen][0] == 1000);
  b.clusters[0].cluster.gpu.memory_bytes = 432.0 * 500 + 2224;
  a = whatif_model(b, q);
  REQUIRE(a.met);
  CHECK(a.rows[a.chosen][0] == 500);
  CHECK(num(a.rows[a.chosen][5]) == 432.0 * 500 + 2224);
  // a GPU too small for any: not met, said so
  b.clusters[0].cluster.gpu.memory_bytes = 1000;
  a = whatif_model(b, q);
  CHECK_FALSE(a.met);
  CHECK(a.answer.find("not even") != std::string::npos);
  // no hidden layer to grow
  CHECK_THROWS_AS(whatif_model(base("[4, 1]"), ModelQuery{}), InputError);
}

TEST_CASE("whatif bucket-cap: more buckets pay more latency when nothing is left to overlap") {
  // Widths [4, 4, 1] on 2 GPUs of one node (all-reduce 0.1 ms), first
  // bucket 160 B: forward 2 x 400 x 2 us = 1.6 ms; the last layer's
  // gradients (128 + 16 + 16 B) fill bucket 0, ready when its backward (an
  // input gradient: 400 x 1 us) ends at 2.0 ms, all-reduced 2.0-2.1 ms. The
  // first layer's (512 + 64 + 64 B; no input gradient, free) are ready at
  // 2.0 ms too and wait for bucket 0:
  //  - cap 1 MiB: one more bucket, 2.1-2.2 ms: iteration 2.2 ms;
  //  - cap 64 B: three more (each >= 64 B closes one), 2.1-2.4 ms: 2.4 ms.
  // The copies cost nothing here, so gradient_as_bucket_view ties: the tie
  // goes to the view, and to the larger cap.
  WhatifBase b = base("[4, 4, 1]", "broadcast_buffers: false, first_bucket: \"160B\"");
  BucketQuery q;
  q.gpus = 2;
  q.caps = {64, 1024.0 * 1024};
  WhatifAnswer a = whatif_bucket_cap(b, q);
  REQUIRE(a.rows.size() == 4);
  for (const auto& r : a.rows) {
    CAPTURE(r[0].dump());
    CHECK(r[2] == (num(r[0]) == 64 ? 4 : 2));
    CHECK(num(r[3]) == rel(num(r[0]) == 64 ? 2.4e-3 : 2.2e-3));
  }
  CHECK(num(a.rows[a.chosen][0]) == 1024.0 * 1024);
  CHECK(a.rows[a.chosen][1] == true);
}

TEST_CASE("whatif cluster: fewest GPU-hours and least money can be different clusters") {
  // Cluster B: 0.1 ms between nodes too, at 5 EUR per GPU-hour against A's
  // 2. Budget 200 ms for 10 epochs:
  //  - A: only 8 GPUs (184 ms): 8 x 0.184 / 3600 = 4.089e-4 GPU-h, 8.18e-4 EUR;
  //  - B: 4 GPUs on 2 nodes: (0.8 + 2 x 0.1) ms x 160 = 160 ms:
  //    1.778e-4 GPU-h, 8.89e-4 EUR (8 GPUs: 88 ms but 1.956e-4 GPU-h).
  // Fewest GPU-hours: B on 4; least money: A on 8.
  WhatifBase b = base();
  WhatifCluster wb;
  wb.cluster = parse_cluster(cluster_yaml("B", "0.1ms", "price: {per_gpu_hour: 5.0, currency: EUR}\n"), "b.yaml");
  wb.label = "B";
  wb.calibration = hand_calibration(wb.cluster);
  b.clusters.push_back(wb);
  ClusterQuery q;
  q.epochs = 10;
  q.budget_s = 0.200;
  WhatifAnswer a = whatif_cluster(b, q);
  REQUIRE(a.met);
  CHECK(a.rows[a.chosen][0] == "A");
  CHECK(a.rows[a.chosen][1] == 8);
  CHECK(num(a.rows[a.chosen][5]) == rel(8 * 0.184 / 3600));
  CHECK(num(a.rows[a.chosen][7]) == rel(2.0 * 8 * 0.184 / 3600));
  CHECK(a.answer.find("cheapest in money: 'A'") != std::string::npos);
  CHECK(a.answer.find("fewest GPU-hours: 'B' with 4 GPU(s)") != std::string::npos);
  // without prices: GPU-hours only, B
  for (auto& c : b.clusters) c.cluster.price_per_gpu_hour.reset();
  a = whatif_cluster(b, q);
  CHECK(a.rows[a.chosen][0] == "B");
  CHECK(a.rows[a.chosen][1] == 4);
  // an unmeetable budget: the closest
  q.budget_s = 0.050;
  a = whatif_cluster(b, q);
  CHECK_FALSE(a.met);
  CHECK(a.rows[a.chosen][0] == "B");
  CHECK(a.rows[a.chosen][1] == 8);  // 88 ms, the fastest
}

TEST_CASE("whatif change: a before/after table; a change that moves nothing answers 0% with the bound that holds it") {
  // 4 GPUs on 2 nodes: 0.8 + 2 x 0.5 = 1.8 ms; network latency doubled:
  // 0.8 + 2 x 1.0 = 2.8 ms; 10 epochs of 16 iterations: 288 -> 448 ms.
  WhatifBase b = base();
  WhatifAnswer a = whatif_change(b, 4, {{"network.latency", "2x"}});
  const auto& it = a.rows[a.chosen];
  CHECK(it[0] == "iteration");
  CHECK(num(it[2]) == rel(1.8e-3));
  CHECK(num(it[3]) == rel(2.8e-3));
  bool ttt = false;
  for (const auto& r : a.rows)
    if (r[0] == "time_to_train") ttt = num(r[2]) == rel(0.288) && num(r[3]) == rel(0.448);
  CHECK(ttt);
  CHECK(a.reasoning.front().find("mostly exposed communication") != std::string::npos);
  // two changes together: the batch doubled as well: compute 1.6 ms,
  // 8 iterations per epoch: (1.6 + 2.0) ms x 80 = 288 ms
  a = whatif_change(b, 4, {{"network.latency", "2x"}, {"batch_per_gpu", "2x"}});
  CHECK(num(a.rows[a.chosen][3]) == rel(3.6e-3));
  // on one node the inter-node latency is not used: an answer of 0%, with why
  a = whatif_change(b, 2, {{"network.latency", "2x"}});
  CHECK(a.answer.find("network.latency=2x: 0% at 2 GPU(s)") == 0);
  CHECK(a.answer.find("stays within one node") != std::string::npos);
  CHECK(num(a.rows[a.chosen][2]) == num(a.rows[a.chosen][3]));
  // the workload's own bucket cap: nothing moves, and the plan says why
  a = whatif_change(b, 4, {{"bucket_cap", "25MiB"}});
  CHECK(a.answer.find("bucket_cap=25MiB: 0%") == 0);
  CHECK(a.answer.find("the bucket plan is the same") != std::string::npos);
  // a factor on a host overhead of 0 leaves it at 0: 0%, and what to give instead
  a = whatif_change(b, 4, {{"host_overhead", "2x"}});
  CHECK(a.answer.find("host_overhead=2x: 0%") == 0);
  CHECK(a.answer.find("leaves it at 0; give a time") != std::string::npos);
  // one change that moves and one that does not: the answer is the first's, the other named
  a = whatif_change(b, 2, {{"network.latency", "2x"}, {"batch_per_gpu", "2x"}});
  CHECK(a.answer.find(": 0%") == std::string::npos);
  CHECK(num(a.rows[a.chosen][3]) > num(a.rows[a.chosen][2]));
  CHECK(a.reasoning.front().find("alone, network.latency=2x moves nothing") == 0);
  // NCCL's restrictions on an MPI cluster
  CHECK_THROWS_WITH_AS(whatif_change(b, 4, {{"nccl_algo", "ring"}}), doctest::Contains("MPI collectives"), InputError);
  CHECK_THROWS_WITH_AS(whatif_change(b, 4, {{"nonsense", "1"}}), doctest::Contains("unknown key"), InputError);
  CHECK_THROWS_WITH_AS(whatif_change(b, 4, {{"network.latency", "2"}}), doctest::Contains("factor"), InputError);
}

TEST_CASE("whatif's budget under uncertainty: the probability of meeting it and the choice at a quantile, by hand") {
  // samples 1, 2, ..., 10 s: 7 of them within 7.5 s; the 0.9 quantile
  // (nearest rank: the smallest with 90% at or below) is 9 s, the 0.5 one 5 s
  ScalingPoint p;
  p.time_to_train_s = 5.5;
  for (int s = 10; s >= 1; --s) p.time_to_train_samples.push_back(s);
  CHECK(*probability_within(p, 7.5) == rel(0.7));
  CHECK(*probability_within(p, 0.5) == 0.0);
  CHECK(time_to_train_at(p, 0.9) == rel(9.0));
  CHECK(time_to_train_at(p, 0.5) == rel(5.0));
  CHECK(time_to_train_at(p, std::nullopt) == rel(5.5));  // --confidence point: the prediction
  // a budget of 8.5 s is met on the prediction and at the median, not at 0.9
  CHECK(time_to_train_at(p, std::nullopt) <= 8.5);
  CHECK(time_to_train_at(p, 0.5) <= 8.5);
  CHECK(time_to_train_at(p, 0.9) > 8.5);
  // no samples: the point prediction, and no probability
  ScalingPoint none;
  none.time_to_train_s = 3;
  CHECK(time_to_train_at(none, 0.9) == rel(3.0));
  CHECK_FALSE(probability_within(none, 3).has_value());

  // the hand calibration records no uncertainty: whatif gpus says it judged
  // on the point prediction, and the interval columns are empty
  WhatifBase b = base();
  b.options.interval_samples = 50;
  GpusQuery q;
  q.epochs = 10;
  q.budget_s = 0.300;
  const WhatifAnswer a = whatif_gpus(b, q);
  REQUIRE(a.met);
  CHECK(a.rows[a.chosen][0] == 2);
  CHECK(a.rows[a.chosen][11].is_null());
  bool said = false;
  for (const auto& r : a.reasoning) said = said || r.find("judged on the point prediction") != std::string::npos;
  CHECK(said);
}
