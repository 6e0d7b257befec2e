// Decode quality of TAGC: measured by running the real kernels on synthetic
// gradients (`tagcsim kernels quality`), stored as a table, and read back by
// the simulator to report the expected gradient error of a policy.
#pragma once

#include "kernels/tagc.hpp"

#include <functional>
#include <span>
#include <string>
#include <vector>

namespace tagcsim::kernels {

// ------------------------------------------------------------- the model
struct QualityQuery {
  int ranks = 2;
  double sparsity = 0.8;  // per rank, fraction zeroed
  double overlap = 0;     // 0 independent .. 1 fully shared nonzero positions
  double ratio = 2;
  IndexEncoding encoding = IndexEncoding::Bit1Or;
  double shard_elements = 0;  // optional: shard length (sets the rows R); 0: a large shard
};
struct QualityEstimate {
  double load = 0;                // union density x ratio
  double recovered_fraction = 0;  // of the union's nonzeros, decoded exactly
  double relative_l2_error = 0;   // |decoded - exact sum| / |exact sum|
  std::string basis;              // what the numbers come from
  double decode_rounds = 0;       // peeling rounds (each one DecodeRound)
};

// Overlap model: each rank has k = (1 - sparsity) n nonzeros; a common set of
// overlap * k positions is shared by all ranks, the rest are drawn
// independently outside it. Union density, with d = 1 - sparsity:
//   d o + (1 - d o) (1 - (1 - p)^ranks),  p = d (1 - o) / (1 - d o)
// which is 1 - sparsity^ranks when independent and d when fully shared.
double union_density(int ranks, double sparsity, double overlap);

// From the stored table (data_dir()/tagc-quality.csv, read once).
// InputError for an invalid query (4-bit SUM past 15 ranks, ratio <= 1, ...).
QualityEstimate estimate_quality(const QualityQuery& q);

// ------------------------------------------------------------ the table
struct QualityPoint {
  std::string set;  // "curve" (peeling curve vs load) or "grid"
  IndexEncoding encoding = IndexEncoding::Bit1Or;
  int ranks = 2;
  double sparsity = 0, overlap = 0, ratio = 2;
  std::size_t blocks = 0, rows = 0;
  double union_density = 0, load = 0;        // measured: union nonzeros / counters
  double flags_lost = 0, flags_invented = 0;  // per union nonzero
  double recovered_fraction = 0, relative_l2_error = 0, decode_rounds = 0;
};
struct QualityTable {
  std::vector<QualityPoint> points;
  std::string source;  // file, and the command recorded in it
};
QualityTable parse_quality_csv(const std::string& text, const std::string& source_name);  // InputError
QualityTable load_quality_table(const std::string& path);                                 // InputError
std::string quality_csv(const std::vector<QualityPoint>& points, const std::string& header_comment);
QualityEstimate estimate_quality(const QualityQuery& q, const QualityTable& table);

// Peeling threshold of the curve with `rows` rows (0: the largest measured):
// the load where the recovered fraction falls through 0.5, and the largest
// load still recovering >= 99%.
struct PeelingThreshold {
  std::size_t rows = 0;
  double half_load = 0;
  double full_load = 0;
};
std::vector<PeelingThreshold> peeling_thresholds(const QualityTable& table);

// ------------------------------------------------------- the measurement
struct QualityCase {
  int ranks = 2;
  double sparsity = 0.8, overlap = 0;
  std::size_t blocks = 256;  // shard length in blocks of 1024
  unsigned seed = 1;
};
// Synthetic ranks (real top-k sparsify), then per encoding and ratio the
// real pipeline: index, aggregation, read, compress, sketch sum, decode.
// Encodings that aggregate to identical flags share one decode.
std::vector<QualityPoint> measure_quality(Engine& e, const QualityCase& c, std::span<const IndexEncoding> encodings,
                                          std::span<const double> ratios, const std::string& set = "grid");

// 0.05 .. 0.4, then 0.5 .. 1.2 in steps of 0.05 (the threshold region),
// then 1.3 .. 10.
std::vector<double> default_curve_loads();

struct QualityGrid {
  std::vector<int> ranks = {2, 4, 8, 16, 32, 64};
  std::vector<double> sparsity = {0.8, 0.9, 0.99};
  std::vector<double> overlap = {0.0, 0.5, 1.0};
  std::vector<double> ratio = {1.5, 2, 4, 10};
  std::vector<IndexEncoding> encodings = {IndexEncoding::Bit1Sum, IndexEncoding::Bit1Or, IndexEncoding::Bit4Sum,
                                          IndexEncoding::Bit8Max};
  std::size_t blocks = 256;
  // The peeling curve: 2 independent ranks, 1bit-or, these loads, for
  // shards of these row counts. Loads up to 1.2 use ratio 2; past that the
  // ratio grows (load / 0.6) so that any load is reachable.
  std::vector<std::size_t> curve_rows = {16, 64, 256, 1024};
  std::vector<double> curve_loads = default_curve_loads();
  unsigned seed = 1;
};
std::vector<QualityPoint> run_quality(Engine& e, const QualityGrid& g,
                                      const std::function<void(const std::string&)>& progress = {});

}  // namespace tagcsim::kernels
