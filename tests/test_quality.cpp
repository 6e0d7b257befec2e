// Specification of what the simulator reads from the kernels (issue 3):
// the decode-quality measurement and model (the load definition,
// measurements with the real kernels, the stored table, the peeling
// threshold), and the kernel-time profiles (bandwidth model, bench JSON).
#include "common/input.hpp"
#include "kernels/bench.hpp"
#include "kernels/profile.hpp"
#include "kernels/quality.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

using namespace tagcsim::kernels;
using tagcsim::InputError;

namespace {

QualityPoint find(const std::vector<QualityPoint>& pts, IndexEncoding enc, double ratio) {
  for (const auto& p : pts)
    if (p.encoding == enc && p.ratio == ratio) return p;
  FAIL("no point for " << to_string(enc) << " at ratio " << ratio);
  return {};
}

const QualityTable& committed_table() {
  static const QualityTable t = load_quality_table(data_dir() + "/tagc-quality.csv");
  return t;
}

}  // namespace

TEST_CASE("load = union density x ratio, and independent patterns give 1 - sparsity^ranks") {
  CHECK(union_density(2, 0.8, 0.0) == doctest::Approx(0.36));
  CHECK(union_density(2, 0.8, 0.0) * 2 == doctest::Approx(0.72));
  CHECK(union_density(4, 0.8, 0.0) * 2 == doctest::Approx(1.1808));  // 1 - 0.8^4 = 0.5904
  CHECK(union_density(64, 0.8, 1.0) == doctest::Approx(0.2));         // fully shared: one rank's density
  // Half shared, 2 ranks: 0.1 shared, the rest each 0.1 of the remaining 0.9:
  // p = 0.1 / 0.9, union = 0.1 + 0.9 (1 - (1 - p)^2) = 0.28889.
  CHECK(union_density(2, 0.8, 0.5) == doctest::Approx(0.288889).epsilon(1e-5));
}

TEST_CASE("measured with the real kernels: below the threshold every exact encoding recovers everything") {
  auto e = make_engine(Backend::Cpu);
  const double ratios[] = {2.0};
  auto pts = measure_quality(*e, QualityCase{2, 0.9, 0.0, 256, 5}, kAllEncodings, ratios);
  REQUIRE(pts.size() == 4);
  auto exact = find(pts, IndexEncoding::Bit1Or, 2.0);
  CHECK(exact.union_density == doctest::Approx(union_density(2, 0.9, 0.0)).epsilon(0.01));
  CHECK(exact.rows == 128);
  CHECK(exact.load == doctest::Approx(0.38).epsilon(0.01));
  CHECK(exact.flags_lost == 0);
  CHECK(exact.flags_invented == 0);
  CHECK(exact.recovered_fraction == 1.0);
  CHECK(exact.relative_l2_error < 1e-6);  // what is left is the 1-ulp flag bit
  // 4-bit SUM and 8-bit MAX aggregate to the same flags: the same decode.
  for (auto enc : {IndexEncoding::Bit4Sum, IndexEncoding::Bit8Max}) {
    auto p = find(pts, enc, 2.0);
    CHECK(p.recovered_fraction == exact.recovered_fraction);
    CHECK(p.relative_l2_error == exact.relative_l2_error);
  }
  // The reference's 1-bit SUM loses the flags the two ranks share.
  auto lossy = find(pts, IndexEncoding::Bit1Sum, 2.0);
  CHECK(lossy.flags_lost > 0.03);
  CHECK(lossy.recovered_fraction < 0.95);
  CHECK(lossy.relative_l2_error > 0.1);
}

TEST_CASE("measured: past the threshold peeling stalls, and fully shared patterns keep the load low") {
  auto e = make_engine(Backend::Cpu);
  const IndexEncoding enc[] = {IndexEncoding::Bit8Max};
  const double ratios[] = {2.0};
  // 4 independent ranks at 80%: load 1.18.
  auto high = measure_quality(*e, QualityCase{4, 0.8, 0.0, 256, 6}, enc, ratios);
  REQUIRE(high.size() == 1);
  CHECK(high[0].load == doctest::Approx(1.18).epsilon(0.02));
  CHECK(high[0].recovered_fraction < 0.3);
  // The same ranks with identical positions: load 0.4, lossless.
  auto shared = measure_quality(*e, QualityCase{4, 0.8, 1.0, 256, 7}, enc, ratios);
  CHECK(shared[0].load == doctest::Approx(0.4).epsilon(0.01));
  CHECK(shared[0].recovered_fraction == 1.0);
  // 4-bit SUM past 15 ranks is no policy: not measured.
  const IndexEncoding four[] = {IndexEncoding::Bit4Sum};
  CHECK(measure_quality(*e, QualityCase{16, 0.99, 0.0, 8, 8}, four, ratios).empty());
}

TEST_CASE("the stored table: the peeling threshold lands near a load of 0.82 for 3 hashes") {
  const auto& t = committed_table();
  auto th = peeling_thresholds(t);
  REQUIRE(th.size() >= 3);
  const auto& largest = th.back();
  MESSAGE("peeling threshold at " << largest.rows << " rows: half recovered at load " << largest.half_load
                                  << ", >= 99% up to " << largest.full_load);
  CHECK(largest.rows >= 1024);
  CHECK(largest.half_load > 0.78);
  CHECK(largest.half_load < 0.88);
  CHECK(largest.full_load >= 0.7);
  // Small shards (few rows) peel worse: finite-size effects.
  CHECK(th.front().full_load < largest.full_load);
}

TEST_CASE("estimate_quality: 2 ranks at 80% sparsity and ratio 2 decode, 4 ranks do not") {
  QualityQuery two{2, 0.8, 0.0, 2.0, IndexEncoding::Bit1Or};
  auto e2 = estimate_quality(two);
  CHECK(e2.load == doctest::Approx(0.72));
  CHECK(e2.recovered_fraction > 0.95);
  CHECK(e2.relative_l2_error < 0.1);
  CHECK(e2.decode_rounds > 1);
  CHECK(e2.basis.find("tagc-quality.csv") != std::string::npos);
  QualityQuery four{4, 0.8, 0.0, 2.0, IndexEncoding::Bit1Or};
  auto e4 = estimate_quality(four);
  CHECK(e4.load == doctest::Approx(1.1808));
  CHECK(e4.recovered_fraction < 0.3);
  CHECK(e4.relative_l2_error > 0.5);
  // The exact encodings agree; the lossy 1-bit SUM is worse.
  auto e8 = estimate_quality({2, 0.8, 0.0, 2.0, IndexEncoding::Bit8Max});
  CHECK(e8.recovered_fraction == e2.recovered_fraction);
  auto lossy = estimate_quality({2, 0.8, 0.0, 2.0, IndexEncoding::Bit1Sum});
  CHECK(lossy.recovered_fraction < e2.recovered_fraction - 0.2);
  CHECK(lossy.relative_l2_error > e2.relative_l2_error);
  CHECK(lossy.basis.find("lossy") != std::string::npos);
  // A small shard (32 rows at ratio 2) recovers less at the same load.
  auto small = estimate_quality({2, 0.8, 0.0, 2.0, IndexEncoding::Bit1Or, 64.0 * 1024});
  CHECK(small.recovered_fraction < e2.recovered_fraction);
}

TEST_CASE("estimate_quality rejects policies that cannot work") {
  CHECK_THROWS_WITH_AS(estimate_quality({16, 0.8, 0.0, 2.0, IndexEncoding::Bit4Sum}),
                       doctest::Contains("more than 15 ranks"), InputError);
  CHECK_NOTHROW(estimate_quality({15, 0.8, 0.0, 2.0, IndexEncoding::Bit4Sum}));
  CHECK_THROWS_WITH_AS(estimate_quality({2, 0.8, 0.0, 1.0, IndexEncoding::Bit1Or}), doctest::Contains("greater than 1"),
                       InputError);
  CHECK_THROWS_AS(estimate_quality({2, 1.0, 0.0, 2.0, IndexEncoding::Bit1Or}), InputError);
  CHECK_THROWS_AS(estimate_quality({2, 0.8, 1.5, 2.0, IndexEncoding::Bit1Or}), InputError);
}

TEST_CASE("the quality table reader names the file and line of a bad entry") {
  const std::string header =
      "set,encoding,ranks,sparsity,overlap,ratio,blocks,rows,union_density,load,flags_lost,flags_invented,"
      "recovered_fraction,relative_l2_error,decode_rounds\n";
  auto t = parse_quality_csv("# command: x\n" + header + "curve,1bit-or,2,0.8,0,2,256,128,0.36,0.72,0,0,1,1e-7,9\n",
                             "q.csv");
  REQUIRE(t.points.size() == 1);
  CHECK(t.points[0].rows == 128);
  CHECK(t.source == "q.csv (command: x)");
  CHECK_THROWS_WITH_AS(parse_quality_csv(header + "curve,1bit-or,2,0.8,0,2,256,128,0.36,zero,0,0,1,1e-7,9\n", "q.csv"),
                       doctest::Contains("q.csv:2: column load"), InputError);
  CHECK_THROWS_WITH_AS(parse_quality_csv(header + "grid,2bit-xor,2,0.8,0,2,256,128,0.36,0.7,0,0,1,1e-7,9\n", "q.csv"),
                       doctest::Contains("q.csv:2"), InputError);
  CHECK_THROWS_AS(parse_quality_csv("set,encoding\n", "q.csv"), InputError);
  CHECK_THROWS_AS(load_quality_table("/nonexistent/tagc-quality.csv"), InputError);
  // A table without a peeling curve cannot answer.
  auto no_curve = parse_quality_csv(header, "empty.csv");
  CHECK_THROWS_AS(estimate_quality({2, 0.8, 0.0, 2.0, IndexEncoding::Bit1Or}, no_curve), InputError);
}

TEST_CASE("the data directory is the source tree's calibrate/profiles unless TAGCSIM_DATA_DIR says otherwise") {
  const char* old = std::getenv("TAGCSIM_DATA_DIR");
  std::string saved = old ? old : "";
  unsetenv("TAGCSIM_DATA_DIR");
  CHECK(data_dir() == std::string(TAGCSIM_SOURCE_DIR) + "/calibrate/profiles");
  setenv("TAGCSIM_DATA_DIR", "/tmp/elsewhere", 1);
  CHECK(data_dir() == "/tmp/elsewhere");
  if (old)
    setenv("TAGCSIM_DATA_DIR", saved.c_str(), 1);
  else
    unsetenv("TAGCSIM_DATA_DIR");
}

TEST_CASE("bandwidth model: bytes per element / (bandwidth x efficiency) + launch and sync latencies") {
  auto p = bandwidth_model("H100", 2e12, 0.5);
  // index_create, 1-bit: 4 + 1/8 bytes per element, one launch.
  CHECK(p.seconds(Stage::IndexCreate, 1e6, IndexEncoding::Bit1Or) == doctest::Approx(4.125e6 / 1e12 + 4e-6));
  // 8-bit index: 5 bytes per element.
  CHECK(p.seconds(Stage::IndexCreate, 1e6, IndexEncoding::Bit8Max) == doctest::Approx(5e6 / 1e12 + 4e-6));
  // Bisection: 24 + 4 x 5 probes bytes, 12 launches, 5 host syncs.
  CHECK(stage_cost(Stage::SparsifyBisect).bytes_per_element == 44);
  CHECK(stage_cost(Stage::SparsifyBisect).host_syncs == kBisectProbes);
  CHECK(p.seconds(Stage::SparsifyBisect, 1e6) == doctest::Approx(44e6 / 1e12 + 12 * 4e-6 + 5 * 10e-6));
  CHECK(stage_cost(Stage::SparsifyTopk).host_syncs == 0);
  CHECK(p.source.find("bandwidth model") == 0);
  CHECK_THROWS_AS(bandwidth_model("x", 0, 0.5), InputError);
  CHECK_THROWS_AS(bandwidth_model("x", 1e12, 1.5), InputError);
}

TEST_CASE("measured profile: log-log interpolation, linear past the largest point, floor below the smallest") {
  KernelProfile p = bandwidth_model("dev", 1e12, 0.5);
  p.series.push_back({Stage::Compress, std::nullopt, {{1e3, 1e-5}, {1e5, 1e-3}}});
  CHECK(p.seconds(Stage::Compress, 1e4) == doctest::Approx(1e-4));     // halfway in log-log
  CHECK(p.seconds(Stage::Compress, 1e6) == doctest::Approx(1e-2));     // linear in size
  CHECK(p.seconds(Stage::Compress, 10) == doctest::Approx(1e-5));      // latency floor
  CHECK(p.seconds(Stage::Estimate, 1e6) == p.model_seconds(Stage::Estimate, 1e6));  // not measured
  // Index stages are looked up by encoding; both 1-bit encodings share kernels.
  p.series.push_back({Stage::IndexRead, IndexEncoding::Bit1Or, {{1e3, 2e-6}}});
  CHECK(p.seconds(Stage::IndexRead, 1e3, IndexEncoding::Bit1Sum) == 2e-6);
  CHECK(p.seconds(Stage::IndexRead, 1e3, IndexEncoding::Bit8Max) == p.model_seconds(Stage::IndexRead, 1e3, IndexEncoding::Bit8Max));
}

TEST_CASE("bench JSON round trip: what the bench writes, load_profile reads") {
  BenchOptions o;
  o.sizes_bytes = {65536.0, 262144.0};
  o.repeats = 1;
  o.warmup = 0;
  o.command = "test";
  auto r = run_bench(o);
  CHECK(r.points.size() == 2 * 12);  // 2 sparsify, 3 + 3 index, 2 compress, decode round, estimate
  const std::string path = "/tmp/tagcsim-test-profile-" + std::to_string(::getpid()) + ".json";
  { std::ofstream(path) << bench_json(r); }
  auto p = load_profile(path);
  CHECK(p.backend == "cpu");
  CHECK(p.source == "measured: test, " + r.date);
  CHECK(p.memory_bandwidth == doctest::Approx(r.memory_bandwidth).epsilon(1e-5));
  for (const auto& pt : r.points)
    CHECK(p.seconds(pt.stage, pt.elements, pt.encoding.value_or(IndexEncoding::Bit1Or)) ==
          doctest::Approx(pt.seconds).epsilon(1e-5));
  // A file that is not a bench profile is rejected with its location.
  { std::ofstream(path) << "{\"format\": \"something-else\"}\n"; }
  CHECK_THROWS_AS(load_profile(path), InputError);
  { std::ofstream(path) << bench_json(r).replace(bench_json(r).find("\"sparsify_bisect\""), 17, "\"sparsify_bogus\""); }
  CHECK_THROWS_WITH_AS(load_profile(path), doctest::Contains("sparsify_bogus"), InputError);
  CHECK_THROWS_AS(load_profile("/nonexistent/profile.json"), InputError);
}
