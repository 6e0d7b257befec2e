// Kernel time per stage, for the simulator: measured (the JSON that
// `tagcsim kernels bench` writes) or from a bandwidth model.
#pragma once

#include "kernels/tagc.hpp"

#include <optional>
#include <string>
#include <vector>

namespace tagcsim::kernels {

// What one run of a stage costs, per element of gradient (fp32), as the
// kernels of this library implement it. Bytes are logical traffic: each
// load or store counts its size, each atomic read-modify-write 8 bytes.
//   sparsify_bisect   24 + 4 * probes  (EF add 12, one read per probe, apply 12);
//                     kBisectProbes = 5 probes, each a host sync
//   sparsify_topk     36  (EF add + first radix pass 12, 3 more passes 12, apply 12); no host sync
//   index_create      4 + index bytes/element (1/8, 1/2 or 1)
//   index_read        8 + index bytes/element
//   compress          4 + 24 * d + 4 / ratio  (load; 3 atomics per element with nonzero bits,
//                     d = the union density once the index is read in; zero the sketch)
//   compress_batched  as compress
//   decode_round      22 + 53 * p  (state, 3 mappings, a counter, 2 stores; the p peeled
//                     subtract 3 x (8 + 8)); one host sync
//   estimate          1 + 16 * u  (state; the u unknown read 3 counters, store 1)
// The model takes the bench's operating point: 80% sparsity per rank, union
// density d = 0.36 (2 ranks), ratio 2 (load 0.72), p = 0.5, u = d.
struct StageCost {
  double bytes_per_element = 0;
  int launches = 0;    // kernel launches per run
  int host_syncs = 0;  // device-to-host round trips per run
};
StageCost stage_cost(Stage s, IndexEncoding enc = IndexEncoding::Bit1Or);

struct KernelProfile {
  std::string device, backend, source;  // source: "measured: <command>, <date>" or "bandwidth model: ..."
  double memory_bandwidth = 0;          // bytes/s the fractions are relative to
  // Bandwidth-model parameters, used for stages (or encodings) not measured.
  double efficiency = 0.6;          // fraction of memory_bandwidth a streaming kernel reaches
  double launch_latency = 4e-6;     // s per kernel launch
  double host_sync_latency = 10e-6; // s per device-to-host round trip

  struct Point {
    double elements = 0;
    double seconds = 0;
  };
  struct Series {
    Stage stage = Stage::Compress;
    std::optional<IndexEncoding> encoding;  // index stages only; 1-bit kernels serve both 1-bit encodings
    std::vector<Point> points;              // ascending elements
  };
  std::vector<Series> series;

  // Time of one stage on one GPU for a gradient of `elements` fp32 values:
  // log-log interpolation between measured points; past the largest point,
  // linear in size; below the smallest, that point's time (latency floor);
  // the bandwidth model where the stage was not measured.
  double seconds(Stage s, double elements, IndexEncoding enc = IndexEncoding::Bit1Or) const;
  double model_seconds(Stage s, double elements, IndexEncoding enc = IndexEncoding::Bit1Or) const;
  const Series* find(Stage s, IndexEncoding enc) const;
};

// Each stage's stage_cost() bytes / (memory_bandwidth * efficiency) plus
// launch and host-sync latencies.
KernelProfile bandwidth_model(const std::string& device, double memory_bandwidth, double efficiency);

// The bench JSON (format "tagcsim-kernel-profile/1"); InputError on a bad file.
KernelProfile load_profile(const std::string& json_path);

// Directory of the committed data (calibrate/profiles): $TAGCSIM_DATA_DIR if
// set, else <source dir>/calibrate/profiles.
std::string data_dir();

}  // namespace tagcsim::kernels
