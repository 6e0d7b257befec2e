// The CPU reference on edge data and at the sizes the GPU must loop over, and
// the defects fixed before the CUDA back end's first GPU run (issue 12): the
// top-k count width, subnormals under fp32 atomics, the empty shard, and the
// CUDA engine's cleanup when its constructor fails. Every data set here has a
// CUDA twin in test_kernels_cuda.cpp that runs it on the GPU and compares.
#include "common/input.hpp"
#include "kernels/cuda/launch.hpp"
#include "kernels/cuda/resources.hpp"
#include "kernels_testing.hpp"

#include <algorithm>
#include <stdexcept>

using namespace ktest;
using tagcsim::InputError;
namespace cuda = tagcsim::kernels::cuda;

// ------------------------------------------------------------------ defects

TEST_CASE("top-k radix counts are 64-bit: a bin of more than 2^32 elements is counted, not wrapped") {
  CHECK(sizeof(RadixCount) == 8);
  std::vector<RadixCount> hist(kRadixBins, 0);
  hist[255] = 1;
  hist[200] = 4294967306ull;  // 2^32 + 10 elements share the top bin pattern 200
  hist[3] = 5;
  // The (2^32 + 5)-th largest: one in bin 255, the rest inside bin 200.
  RadixCount remaining = 4294967301ull;
  CHECK(radix_pick(hist.data(), remaining) == 200);
  CHECK(remaining == 4294967300ull);
  // Past bin 200 the pick falls through to bin 3.
  remaining = 4294967309ull;
  CHECK(radix_pick(hist.data(), remaining) == 3);
  CHECK(remaining == 2);
  // The shared-memory counts of one block stay 32-bit: the histogram launch
  // gives no block 2^31 elements, whatever the grid (or the cap hook) says.
  for (std::size_t n : {std::size_t(1) << 33, (std::size_t(5) << 32) + 77, std::size_t(1000)})
    for (unsigned grid : {1u, 2u, 1056u}) {
      const unsigned g = cuda::histogram_blocks(n, grid);
      CHECK(g >= grid);
      CHECK(cuda::grid_rounds(n, g) * cuda::kThreads <= cuda::kMaxHistogramPerBlock);
    }
  CHECK(cuda::histogram_blocks(std::size_t(1) << 33, 1) == 4);
}

TEST_CASE("sketch counters follow the GPU's fp32 atomics: flagged zeros and subnormals add nothing") {
  const float tiny = from_bits(1);  // 2^-149: what read index makes of a flagged zero
  const float fmin = std::numeric_limits<float>::min();
  // The rule: PTX atom.add.f32 flushes subnormal inputs and results to a zero of their sign.
  CHECK(bits(sketch_add(0.0f, tiny)) == 0u);
  CHECK(bits(sketch_add(0.0f, -tiny)) == 0u);
  CHECK(bits(sketch_add(1.0f, from_bits(0x00400000u))) == bits(1.0f));
  CHECK(bits(sketch_add(1.5f * fmin, -1.25f * fmin)) == 0u);           // 0.25 fmin flushes ...
  CHECK(bits(sketch_add(-1.5f * fmin, 1.25f * fmin)) == 0x80000000u);  // ... to a zero of its sign
  CHECK(bits(sketch_add(from_bits(0x100u), -fmin)) == bits(-fmin));    // a subnormal counter reads as 0
  CHECK(bits(sketch_add(kInf, -kInf)) == kCanonicalNaN);
  CHECK(bits(add_rn(from_bits(0xffc00123u), 1.0f)) == kCanonicalNaN);
  CHECK_FALSE(sketch_contributes(tiny));
  CHECK_FALSE(sketch_contributes(-0.0f));
  CHECK(sketch_contributes(fmin));

  // One shard of 2 blocks at ratio 2 has one row: counter t holds element t
  // of both blocks, added once per hash with that hash's sign.
  auto e = cpu_engine();
  const SketchShape s = sketch_shape(2 * kBlock, 2.0);
  REQUIRE(s.rows == 1);
  std::vector<float> v(s.elements, 0.0f);
  for (std::size_t t = 0; t < 100; ++t) v[t] = tiny;  // flagged zeros, block 0 only
  for (std::size_t t = 100; t < 200; ++t) {
    v[t] = from_bits(0x201u + 2 * std::uint32_t(t));  // flagged subnormal gradient
    v[kBlock + t] = from_bits(0x80000001u);           // flagged -0.0
  }
  for (std::size_t t = 200; t < 300; ++t) v[t] = 4.0f, v[kBlock + t] = tiny;
  std::vector<float> sketch(s.counters(), 1.0f);
  std::vector<std::uint32_t> mapping(s.counters(), 7u);
  e->compress(v.data(), s, sketch.data(), mapping.data());
  const BlockHash b0 = block_hash(0, 1);
  int signs0 = 0;  // +-1 or +-3: never 0, so a flagged zero counted on its own would show
  for (int k = 0; k < kHashes; ++k) signs0 += b0.negative[k] ? -1 : 1;
  std::size_t wrong = 0;
  for (std::size_t t = 0; t < kBlock; ++t) {
    const float want = t >= 200 && t < 300 ? 4.0f * float(signs0) : 0.0f;
    const std::uint32_t want_map = t < 100 ? 3 : t < 200 ? 6 : t < 300 ? 3 : 0;
    wrong += bits(sketch[t]) != bits(want) || mapping[t] != want_map;
  }
  CHECK(wrong == 0);

  // Two ranks under 1bit-sum both flag element 10: the bits carry and element
  // 11 is invented. Both ranks send 2^-149 there, which must decode as 0.
  std::vector<std::vector<float>> ranks(2, std::vector<float>(kBlock, 0.0f));
  ranks[0][10] = 2.0f, ranks[1][10] = 4.0f, ranks[0][20] = 8.0f;
  auto res = run_shard_pipeline(*e, ranks, IndexEncoding::Bit1Sum, 2.0);
  auto flags = read_flags(res.global_index, kBlock, IndexEncoding::Bit1Sum);
  REQUIRE(flags[10] == 0);
  REQUIRE(flags[11] == 1);
  CHECK(bits(res.sketch[11]) == 0u);
  CHECK(res.state[11] == kEstimated);  // its 3 counters all count 3 flags: it never peels
  CHECK(res.decoded[11] == 0.0f);
}

TEST_CASE("sparsify of an empty shard: no probes, and the keep-nothing threshold, on either method") {
  auto e = cpu_engine();
  for (auto method : {SparsifyMethod::Bisect, SparsifyMethod::TopK}) {
    for (double sparsity : {0.0, 0.5, 1.0}) {
      float thr = -1.0f;
      auto r = e->sparsify(nullptr, nullptr, nullptr, 0, method, sparsity, &thr);
      CHECK(r.host_syncs == 0);
      CHECK(bits(thr) == bits(kInf));
    }
    float thr = -1.0f;
    CHECK_THROWS_AS(e->sparsify(nullptr, nullptr, nullptr, 0, method, 1.5, &thr), InputError);  // still checked
  }
}

namespace {

// A CUDA runtime stand-in: counts what is held, and can fail its k-th call.
struct FakeApi {
  using Stream = int*;
  static inline int live = 0, calls = 0, fail_call = 0;
  static int* make() {
    if (++calls == fail_call) throw std::runtime_error("fake runtime: out of memory");
    ++live;
    return new int(0);
  }
  static void drop(void* p) noexcept {
    --live;
    delete static_cast<int*>(p);
  }
  static Stream create_stream() { return make(); }
  static void destroy_stream(Stream s) noexcept { drop(s); }
  static void* device_alloc(std::size_t) { return make(); }
  static void device_free(void* p) noexcept { drop(p); }
  static void* host_alloc(std::size_t) { return make(); }
  static void host_free(void* p) noexcept { drop(p); }
  [[noreturn]] static void fail(const std::string& what) { throw std::runtime_error(what); }
  static void reset(int fail_at) { live = 0, calls = 0, fail_call = fail_at; }
};

}  // namespace

TEST_CASE("CUDA engine resources: a failure at any acquisition releases what was already acquired") {
  using Resources = cuda::EngineResources<FakeApi>;
  for (int k = 1; k <= 3; ++k) {
    CAPTURE(k);
    // Injected by the engine's own hook (EngineOptions::fail_acquisition) ...
    FakeApi::reset(0);
    const std::string injected = "injected failure of acquisition " + std::to_string(k);
    CHECK_THROWS_WITH(Resources(64, 8, k), doctest::Contains(injected.c_str()));
    CHECK(FakeApi::live == 0);
    // ... and by the runtime failing its k-th call.
    FakeApi::reset(k);
    CHECK_THROWS_WITH(Resources(64, 8), doctest::Contains("out of memory"));
    CHECK(FakeApi::live == 0);
  }
  FakeApi::reset(0);
  {
    Resources r(64, 8);
    CHECK(FakeApi::live == 3);
    CHECK(r.stream() != nullptr);
    CHECK(r.scratch() != r.pinned());
  }
  CHECK(FakeApi::live == 0);
}

// --------------------------------------------------------- multi-iteration

TEST_CASE("launch shapes: the multi-iteration sizes make every grid-stride loop go round") {
  for (int sms : {108, 132}) {  // A100; H100 and H200
    CAPTURE(sms);
    const unsigned g = cuda::grid_blocks(kMultiIterationElements, sms);
    CHECK(g == unsigned(sms) * cuda::kBlocksPerSm);
    CHECK(cuda::grid_rounds(kMultiIterationElements, g) >= 10);  // element-wise kernels, ballots
    const std::size_t blocks = kMultiIterationElements / kBlock;
    const unsigned gb = cuda::grid_blocks(blocks, sms, 0, 1);
    CHECK(cuda::grid_rounds(blocks, gb, 1) == 3);  // per-data-block kernels: re-hash each round
  }
  // The cap hook (EngineOptions::max_blocks).
  for (unsigned cap : {1u, 2u}) {
    CHECK(cuda::grid_blocks(kCappedElements, 132, cap) == cap);
    CHECK(cuda::grid_rounds(kCappedElements, cap) >= 600);
    CHECK(cuda::grid_rounds(kCappedElements / kBlock, cap, 1) >= 150);
  }
  CHECK(cuda::grid_blocks(0, 132) == 1);
  CHECK(cuda::grid_blocks(100, 132) == 1);
}

TEST_CASE("every stage at the multi-iteration size on the CPU reference (the CUDA twin's oracle)") {
  auto e = cpu_engine();
  const std::size_t n = kMultiIterationElements;
  const auto g = gradient(n, 61), r0 = gradient(n, 62);
  auto st = run_stages(*e, g, r0, {SparsifyMethod::TopK, 0.8, IndexEncoding::Bit4Sum, 2.0});
  const std::uint32_t thr = bits(st.threshold);
  std::size_t kept = 0, at_threshold = 0, bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float a = add_rn(g[i], r0[i]);
    const bool keep = magnitude_key(a) >= thr;
    kept += keep;
    at_threshold += magnitude_key(a) == thr;
    bad += bits(st.out[i]) != (keep ? bits(a) : 0u) || bits(st.residual[i]) != (keep ? 0u : bits(a));
    bad += index_flag(st.index.data(), i, IndexEncoding::Bit4Sum) != (magnitude_key(st.out[i]) != 0);
  }
  CHECK(bad == 0);
  // Exactly the keep count, plus the ties at the threshold beyond the first.
  CHECK(kept == topk_keep_count(n, 0.8) + at_threshold - 1);
  // Load 0.2 x 2 = 0.4: everything peels.
  CHECK(st.decode.estimated == 0);
  CHECK(st.decode.recovered == std::size_t(std::count_if(st.out.begin(), st.out.begin() + std::ptrdiff_t(st.shape.blocked()),
                                                         [](float x) { return x != 0.0f; })));
  CHECK(st.decode.rounds > 2);

  auto bi = run_stages(*e, g, r0, {SparsifyMethod::Bisect, 0.9, IndexEncoding::Bit1Sum, 2.0});
  CHECK(bi.sparsify.host_syncs >= kBisectProbes - 1);  // 26 outcomes: 4 or 5 probes
  CHECK(bi.sparsify.host_syncs <= kBisectProbes);
  CHECK(std::find(bisect_thresholds().begin(), bisect_thresholds().end(), bi.threshold) != bisect_thresholds().end());
}

// --------------------------------------------------------------- edge data

namespace {
const EdgeCase& edge(const std::vector<EdgeCase>& all, const std::string& name) {
  for (const auto& c : all)
    if (c.name == name) return c;
  throw std::logic_error("no edge case " + name);
}
}  // namespace

TEST_CASE("edge data: NaN ranks above +-inf above every finite magnitude, and NaN results are canonical") {
  auto e = cpu_engine();
  const std::vector<float> g = {1.0f, from_bits(0x7fc00001u), -2.0f, kInf, from_bits(0xffc00abcu), -kInf, 3.0f, -0.0f};
  auto run = [&](SparsifyMethod m, double sparsity) {
    std::vector<float> r(8, 0.0f), out(8);
    float thr = 0;
    e->sparsify(g.data(), r.data(), out.data(), 8, m, sparsity, &thr);
    return std::tuple{out, r, thr};
  };
  const float nan = from_bits(kCanonicalNaN);
  auto [o2, r2, t2] = run(SparsifyMethod::TopK, 0.75);  // keep 2: both NaNs, tied
  CHECK(bits(t2) == kCanonicalNaN);
  CHECK(same_bits(o2, {0, nan, 0, 0, nan, 0, 0, 0}));
  CHECK(same_bits(r2, {1, 0, -2, kInf, 0, -kInf, 3, 0}));  // -0 + +0 = +0
  auto [o4, r4, t4] = run(SparsifyMethod::TopK, 0.5);  // keep 4: then the infinities
  CHECK(bits(t4) == bits(kInf));
  CHECK(same_bits(o4, {0, nan, 0, kInf, nan, -kInf, 0, 0}));
  auto [o5, r5, t5] = run(SparsifyMethod::TopK, 0.375);  // keep 5: then 3
  CHECK(t5 == 3.0f);
  // Keep nothing (+inf) and the bisection's largest entry (0.5) still pass
  // every non-finite value: an overflow reaches the sum, as it should.
  auto [o0, r0, t0] = run(SparsifyMethod::TopK, 1.0);
  CHECK(same_bits(o0, {0, nan, 0, kInf, nan, -kInf, 0, 0}));
  auto [ob, rb, tb] = run(SparsifyMethod::Bisect, 1.0);
  CHECK(tb == 0.5f);
  CHECK(same_bits(ob, {1, nan, -2, kInf, nan, -kInf, 3, 0}));
  // Through every stage: NaN flags, and its sketch counters are NaN.
  const auto all = edge_cases();
  auto st = run_stages(*e, edge(all, "nan-inf top-k").grad, edge(all, "nan-inf top-k").residual,
                       edge(all, "nan-inf top-k").params);
  CHECK(index_flag(st.index.data(), 0, IndexEncoding::Bit1Or) == 1);  // element 0 is a NaN
  CHECK(std::isnan(st.out[0]));
  CHECK(std::count_if(st.sketch.begin(), st.sketch.end(), [](float x) { return std::isnan(x); }) > 0);
}

TEST_CASE("edge data: ties at the threshold are all kept, and -0.0 is kept as -0.0 but never flagged") {
  auto e = cpu_engine();
  const auto all = edge_cases();
  const auto& c = edge(all, "ties top-k");
  auto st = run_stages(*e, c.grad, c.residual, c.params);
  const std::size_t n = c.grad.size();
  std::size_t twos = 0, ones = 0, kept = 0;
  for (std::size_t i = 0; i < n; ++i) {
    twos += std::abs(c.grad[i]) == 2.0f;
    ones += std::abs(c.grad[i]) == 1.0f;
    kept += st.out[i] != 0.0f;
  }
  REQUIRE(topk_keep_count(n, 0.8) > twos);
  REQUIRE(topk_keep_count(n, 0.8) < twos + ones);
  CHECK(st.threshold == 1.0f);
  CHECK(kept == twos + ones);  // every 1.0 tie, though fewer were asked for

  const auto& z = edge(all, "negative zero keep-all");
  auto nz = run_stages(*e, z.grad, z.residual, z.params);
  CHECK(bits(nz.threshold) == 0u);  // sparsity 0: keep everything
  CHECK(bits(nz.out[3]) == 0x80000000u);      // -0 + -0 = -0, kept
  CHECK(bits(nz.residual[3]) == 0u);
  CHECK(bits(nz.out[6]) == 0u);               // -0 + +0 = +0
  CHECK(nz.index[3] == 0);                    // 8bit-max: one byte per element
  CHECK(bits(nz.flagged[3]) == 0x80000000u);  // read index leaves it alone
  CHECK(nz.state[3] == kNotFlagged);
}

TEST_CASE("edge data: an all-zero shard passes every stage as zeros, in one peeling round") {
  auto e = cpu_engine();
  const auto all = edge_cases();
  for (const char* name : {"all-zero top-k", "all-zero bisect"}) {
    CAPTURE(name);
    const auto& c = edge(all, name);
    auto st = run_stages(*e, c.grad, c.residual, c.params);
    const bool bisect = c.params.method == SparsifyMethod::Bisect;
    CHECK(st.threshold == (bisect ? bisect_thresholds()[0] : 0.0f));  // every element counts as below
    CHECK(st.sparsify.host_syncs == (bisect ? kBisectProbes : 0));
    CHECK(same_bits(st.out, std::vector<float>(c.grad.size(), 0.0f)));
    CHECK(std::all_of(st.index.begin(), st.index.end(), [](auto b) { return b == 0; }));
    CHECK(same_bits(st.sketch, std::vector<float>(st.shape.counters(), 0.0f)));
    CHECK(std::all_of(st.built.begin(), st.built.end(), [](auto m) { return m == 0; }));
    CHECK(st.decode.rounds == 1);
    CHECK(st.decode.recovered + st.decode.estimated == 0);
    CHECK(same_bits(st.decoded, std::vector<float>(c.grad.size(), 0.0f)));
  }
}

TEST_CASE("edge data: sparsity 0 keeps every element, sparsity near 1 keeps exactly the largest three") {
  auto e = cpu_engine();
  const auto all = edge_cases();
  const auto& z = edge(all, "sparsity 0 top-k");
  auto st = run_stages(*e, z.grad, z.residual, z.params);
  std::vector<float> sum(z.grad.size());
  for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = add_rn(z.grad[i], z.residual[i]);
  CHECK(same_bits(st.out, sum));
  CHECK(same_bits(st.residual, std::vector<float>(sum.size(), 0.0f)));

  const auto& one = edge(all, "sparsity near 1 top-k");
  REQUIRE(topk_keep_count(one.grad.size(), one.params.sparsity) == 3);
  auto st1 = run_stages(*e, one.grad, one.residual, one.params);
  std::vector<float> mags(sum.size());
  for (std::size_t i = 0; i < sum.size(); ++i) mags[i] = std::abs(sum[i]);
  std::sort(mags.begin(), mags.end(), std::greater<>());
  REQUIRE(mags[2] > mags[3]);  // no tie at the third
  std::vector<float> kept;
  for (float x : st1.out)
    if (x != 0.0f) kept.push_back(std::abs(x));
  std::sort(kept.begin(), kept.end(), std::greater<>());
  CHECK(kept == std::vector<float>(mags.begin(), mags.begin() + 3));
  CHECK(st1.threshold == mags[2]);
  CHECK(st1.decode.recovered == 3);
}

TEST_CASE("bad input: a top-k histogram other than warp or shared is rejected") {
  CHECK(parse_topk_histogram("warp", "--topk-histogram") == TopkHistogram::Warp);
  CHECK(parse_topk_histogram("shared", "--topk-histogram") == TopkHistogram::Shared);
  CHECK_THROWS_WITH_AS(parse_topk_histogram("warps", "--topk-histogram"),
                       doctest::Contains("--topk-histogram: expected warp or shared, got 'warps'"), InputError);
  // The CPU back end has no such knobs and takes any.
  CHECK(make_engine(Backend::Cpu, {.max_blocks = 1, .topk_histogram = TopkHistogram::Shared})->backend() == Backend::Cpu);
}
