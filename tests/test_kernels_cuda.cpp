// The CUDA back end against the CPU reference. Every case starts with
// gpu_or_skip(): without a usable GPU it prints SKIPPED and returns, so the
// suite passes on machines without one; kernels/gpu-check.sh runs it on a GPU
// machine, where a SKIPPED is a failure.
//
// Exact (bit for bit): sparsify outputs and thresholds, indexes, read-index
// values, mappings, decoder states and round counts, accumulate. Within the
// reordering bound of fp32 atomics (kernels_testing.hpp): sketch counters and
// decoded values; special cases built from exact sums are compared exactly.
#include "kernels_testing.hpp"
#if TAGCSIM_HAVE_CUDA
#include "kernels/cuda/cuda_engine.hpp"
#endif

#include <algorithm>

using namespace ktest;

namespace {

// The pipeline results of both back ends: exact where no float atomic is
// involved, within the reordering bound where one is.
void check_same_pipeline(const ShardPipelineResult& g, const ShardPipelineResult& c,
                         std::span<const std::vector<float>> ranks, std::size_t offset, std::size_t n,
                         IndexEncoding enc, double ratio) {
  CHECK(g.global_index == c.global_index);
  CHECK(g.state == c.state);
  CHECK(g.decode.rounds == c.decode.rounds);
  CHECK(g.decode.recovered == c.decode.recovered);
  CHECK(g.decode.estimated == c.decode.estimated);
  const SketchShape s = sketch_shape(n, ratio);
  SketchBound b;
  auto cpu = cpu_engine();
  for (const auto& r : ranks) {  // what each rank sketched: its values after read index
    std::vector<float> v(r.begin() + std::ptrdiff_t(offset), r.begin() + std::ptrdiff_t(offset + n));
    cpu->read_index(v.data(), c.global_index.data(), n, enc);
    add_to_bound(b, v, s);
  }
  for (auto& t : b.terms) t += std::uint32_t(ranks.size());  // plus the rank sums (accumulate)
  CHECK(sketch_close(g.sketch, c.sketch, b));
  CHECK(decoded_close(g.decoded, c.decoded, max_of(b.magnitude)));
}

// Ranks' sparsified shards: gradient values at a random `density` of the
// positions, each rank its own positions.
std::vector<std::vector<float>> sparse_ranks(std::size_t ranks, std::size_t n, double density, unsigned seed) {
  std::vector<std::vector<float>> out;
  for (std::size_t r = 0; r < ranks; ++r) {
    auto v = gradient(n, seed + 2 * unsigned(r));
    auto mask = sparse_integers(n, density, seed + 2 * unsigned(r) + 1);
    for (std::size_t i = 0; i < n; ++i) v[i] = mask[i] != 0 ? v[i] : 0.0f;
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace

TEST_CASE("CUDA equals CPU: sparsify by bisection and top-k with either histogram bit for bit") {
  auto gpu = gpu_or_skip();
  if (!gpu) return;
  auto shared = make_engine(Backend::Cuda, {.topk_histogram = TopkHistogram::Shared});
  auto cpu = cpu_engine();
  const std::size_t n = 100003;
  auto g = gradient(n, 1), r0 = gradient(n, 2);
  // Crowded bins: every magnitude in [1, 2), so the first radix pass puts
  // every element into one bin (the case the warp histogram is for).
  std::vector<float> crowded(n);
  for (std::size_t i = 0; i < n; ++i) crowded[i] = (i % 2 ? -1.0f : 1.0f) * (1.0f + float(i % 4099) / 4099.0f);
  for (const auto* grad : {&g, &crowded}) {
    for (auto method : {SparsifyMethod::Bisect, SparsifyMethod::TopK}) {
      for (double sparsity : {0.0, 0.5, 0.8, 0.99, 1.0}) {
        CAPTURE(sparsity);
        std::vector<float> cr = r0, co(n);
        float ct = 0;
        auto cres = cpu->sparsify(grad->data(), cr.data(), co.data(), n, method, sparsity, &ct);
        for (Engine* e : {gpu.get(), shared.get()}) {
          Buffer<float> dg(*e, *grad), dr(*e, r0), dout(*e, n), dt(*e, 1);
          auto gres = e->sparsify(dg.get(), dr.get(), dout.get(), n, method, sparsity, dt.get());
          CHECK(cres.host_syncs == gres.host_syncs);
          CHECK(same_bits(dout.download(), co));
          CHECK(same_bits(dr.download(), cr));
          CHECK(same_bits(dt.download(), std::vector<float>{ct}));
        }
      }
    }
  }
}

TEST_CASE("CUDA equals CPU: sparsify of an empty shard writes the keep-nothing threshold and makes no probe") {
  auto gpu = gpu_or_skip();
  if (!gpu) return;
  for (auto method : {SparsifyMethod::Bisect, SparsifyMethod::TopK}) {
    Buffer<float> dt(*gpu, std::vector<float>{-1.0f});
    auto r = gpu->sparsify(nullptr, nullptr, nullptr, 0, method, 0.5, dt.get());
    CHECK(r.host_syncs == 0);
    CHECK(bits(dt.download()[0]) == bits(kInf));
  }
}

TEST_CASE("CUDA equals CPU: index create and aggregate and read bit for bit in every encoding") {
  auto gpu = gpu_or_skip();
  if (!gpu) return;
  auto cpu = cpu_engine();
  const std::size_t n = 100003;  // not a multiple of 8, 32 or 1024
  auto a = sparse_integers(n, 0.3, 5), b = sparse_integers(n, 0.3, 6);
  auto vals = gradient(n, 7);
  for (auto enc : kAllEncodings) {
    CAPTURE(to_string(enc));
    auto ia = make_index(*cpu, a, enc), ib = make_index(*cpu, b, enc);
    Buffer<float> da(*gpu, a), db(*gpu, b), dv(*gpu, vals);
    Buffer<std::uint8_t> gia(*gpu, ia.size()), gib(*gpu, ib.size());
    gpu->create_index(da.get(), n, enc, gia.get());
    gpu->create_index(db.get(), n, enc, gib.get());
    CHECK(gia.download() == ia);
    CHECK(gib.download() == ib);
    cpu->aggregate_index(ia.data(), ib.data(), n, enc);
    gpu->aggregate_index(gia.get(), gib.get(), n, enc);
    CHECK(gia.download() == ia);
    auto cv = vals;
    cpu->read_index(cv.data(), ia.data(), n, enc);
    gpu->read_index(dv.get(), gia.get(), n, enc);
    CHECK(same_bits(dv.download(), cv));
  }
}

TEST_CASE("CUDA equals CPU: compress and batched compress (mapping exact and sketch within atomic reordering)") {
  auto gpu = gpu_or_skip();
  if (!gpu) return;
  auto cpu = cpu_engine();
  for (double ratio : {1.5, 2.0, 7.3}) {
    CAPTURE(ratio);
    const std::size_t shards = 3;
    const SketchShape s = sketch_shape(37 * 1024 + 11, ratio);
    auto v = gradient(shards * s.elements, 8);
    auto mask = sparse_integers(v.size(), 0.3, 9);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = mask[i] != 0 ? with_flag(v[i], 1) : 0.0f;
    std::vector<float> cs(shards * s.counters());
    std::vector<std::uint32_t> cm(shards * s.counters());
    cpu->compress_batched(v.data(), shards, s, cs.data(), cm.data());
    SketchBound bound, bound1;
    add_to_bound(bound, v, s, shards);
    add_to_bound(bound1, std::span(v).subspan(s.elements, s.elements), s);
    Buffer<float> dv(*gpu, v), ds(*gpu, cs.size());
    Buffer<std::uint32_t> dm(*gpu, cm.size());
    gpu->compress_batched(dv.get(), shards, s, ds.get(), dm.get());
    CHECK(dm.download() == cm);
    CHECK(sketch_close(ds.download(), cs, bound));
    // Per-shard compress of shard 1, and the mapping from an index.
    std::vector<float> c1(s.counters());
    std::vector<std::uint32_t> m1(s.counters());
    cpu->compress(v.data() + s.elements, s, c1.data(), m1.data());
    Buffer<float> d1(*gpu, s.counters());
    Buffer<std::uint32_t> dm1(*gpu, s.counters());
    gpu->compress(dv.get() + s.elements, s, d1.get(), dm1.get());
    CHECK(dm1.download() == m1);
    CHECK(sketch_close(d1.download(), c1, bound1));
    for (auto enc : kAllEncodings) {
      std::vector<float> shard1(v.begin() + std::ptrdiff_t(s.elements), v.begin() + std::ptrdiff_t(2 * s.elements));
      auto idx = make_index(*cpu, shard1, enc);
      std::vector<std::uint32_t> cb(s.counters());
      cpu->build_mapping(idx.data(), enc, s, cb.data());
      CHECK(cb == m1);
      Buffer<std::uint8_t> di(*gpu, idx);
      gpu->build_mapping(di.get(), enc, s, dm1.get());
      CHECK(dm1.download() == cb);
    }
  }
}

TEST_CASE("CUDA equals CPU: flagged zeros and subnormals leave the sketch counters exactly as on the CPU") {
  auto gpu = gpu_or_skip();
  if (!gpu) return;
  auto cpu = cpu_engine();
  // Small integers (exact sums in any order) among flagged zeros, flagged
  // -0.0 and subnormals: every counter must match bit for bit, no tolerance.
  const SketchShape s = sketch_shape(64 * kBlock + 5, 2.0);
  auto v = sparse_integers(s.elements, 0.2, 71);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] != 0.0f) continue;
    if (i % 3 == 0) v[i] = from_bits(1);                 // flagged zero: 2^-149
    if (i % 3 == 1) v[i] = from_bits(0x80000001u);       // flagged -0.0
    if (i % 7 == 2) v[i] = from_bits(0x00012345u | 1u);  // flagged subnormal gradient
  }
  std::vector<float> cs(s.counters());
  std::vector<std::uint32_t> cm(s.counters());
  cpu->compress(v.data(), s, cs.data(), cm.data());
  Buffer<float> dv(*gpu, v), ds(*gpu, s.counters());
  Buffer<std::uint32_t> dm(*gpu, s.counters());
  gpu->compress(dv.get(), s, ds.get(), dm.get());
  CHECK(same_bits(ds.download(), cs));
  CHECK(dm.download() == cm);

  // The 1bit-sum invented flag of the CPU case: 2^-149 from both ranks decodes to 0.
  std::vector<std::vector<float>> ranks(2, std::vector<float>(kBlock, 0.0f));
  ranks[0][10] = 2.0f, ranks[1][10] = 4.0f, ranks[0][20] = 8.0f;
  auto c = run_shard_pipeline(*cpu, ranks, IndexEncoding::Bit1Sum, 2.0);
  auto g = run_shard_pipeline(*gpu, ranks, IndexEncoding::Bit1Sum, 2.0);
  CHECK(same_bits(g.sketch, c.sketch));  // integer sums: exact in any order
  CHECK(same_bits(g.decoded, c.decoded));
  CHECK(bits(g.sketch[11]) == 0u);
}

TEST_CASE("CUDA equals CPU: accumulate bit for bit (NaN canonical and subnormals kept)") {
  auto gpu = gpu_or_skip();
  if (!gpu) return;
  auto cpu = cpu_engine();
  auto capped = make_engine(Backend::Cuda, {.max_blocks = 2});
  const std::size_t n = 100003;
  auto acc = gradient(n, 81), x = gradient(n, 82);
  for (std::size_t i = 0; i < n; i += 11) x[i] = from_bits(0x7fc01234u);
  for (std::size_t i = 3; i < n; i += 13) x[i] = i % 2 ? kInf : -kInf;
  for (std::size_t i = 5; i < n; i += 17) acc[i] = from_bits(0x00000100u), x[i] = from_bits(0x80000080u);
  for (std::size_t i = 7; i < n; i += 19) acc[i] = -0.0f, x[i] = -0.0f;
  auto want = acc;
  cpu->accumulate(want.data(), x.data(), n);
  for (Engine* e : {gpu.get(), capped.get()}) {
    Buffer<float> da(*e, acc), dx(*e, x);
    e->accumulate(da.get(), dx.get(), n);
    CHECK(same_bits(da.download(), want));
  }
}

TEST_CASE("CUDA equals CPU: decode (same rounds and states and values within atomic reordering)") {
  auto gpu = gpu_or_skip();
  if (!gpu) return;
  auto cpu = cpu_engine();
  for (double density : {0.3, 0.45}) {  // load 0.6 (all peel) and 0.9 (past the threshold)
    CAPTURE(density);
    const SketchShape s = sketch_shape(512 * 1024 + 77, 2.0);
    auto v = sparse_ranks(1, s.elements, density, 10)[0];
    auto idx = make_index(*cpu, v, IndexEncoding::Bit1Or);
    std::vector<float> sk(s.counters()), out(s.elements, 0.0f);
    std::vector<std::uint32_t> mp(s.counters());
    std::vector<std::uint8_t> st(s.blocked());
    cpu->compress(v.data(), s, sk.data(), nullptr);
    cpu->build_mapping(idx.data(), IndexEncoding::Bit1Or, s, mp.data());
    Buffer<float> dsk(*gpu, sk), dout(*gpu, out);
    Buffer<std::uint32_t> dmp(*gpu, mp);
    Buffer<std::uint8_t> didx(*gpu, idx), dst(*gpu, st.size());
    auto cr = cpu->decode(sk.data(), mp.data(), idx.data(), IndexEncoding::Bit1Or, s, out.data(), st.data());
    auto gr = gpu->decode(dsk.get(), dmp.get(), didx.get(), IndexEncoding::Bit1Or, s, dout.get(), dst.get());
    CHECK(gr.rounds == cr.rounds);
    CHECK(gr.recovered == cr.recovered);
    CHECK(gr.estimated == cr.estimated);
    CHECK(dst.download() == st);
    CHECK(dmp.download() == mp);
    SketchBound b;
    add_to_bound(b, v, s);
    CHECK(decoded_close(dout.download(), out, max_of(b.magnitude)));
  }
}

TEST_CASE("CUDA equals CPU: the shard pipeline decodes alike in every encoding") {
  auto gpu = gpu_or_skip();
  if (!gpu) return;
  auto cpu = cpu_engine();
  const std::size_t n = 64 * kBlock + 100;  // with a tail
  for (auto enc : kAllEncodings) {
    for (double density : {0.1, 0.25}) {  // 3 ranks: union load about 0.54 and 1.16 at ratio 2
      CAPTURE(to_string(enc));
      CAPTURE(density);
      auto ranks = sparse_ranks(3, n, density, 90);
      auto c = run_shard_pipeline(*cpu, ranks, enc, 2.0);
      auto g = run_shard_pipeline(*gpu, ranks, enc, 2.0);
      check_same_pipeline(g, c, ranks, 0, n, enc, 2.0);
    }
  }
}

TEST_CASE("CUDA equals CPU: the batched unit equals the CPU's shard by shard") {
  auto gpu = gpu_or_skip();
  if (!gpu) return;
  auto cpu = cpu_engine();
  const std::size_t ranks = 4, shard = 24 * kBlock + 17;
  auto units = sparse_ranks(ranks, ranks * shard, 0.08, 100);
  for (auto enc : {IndexEncoding::Bit4Sum, IndexEncoding::Bit1Sum}) {
    CAPTURE(to_string(enc));
    auto c = run_unit_batched(*cpu, units, enc, 2.0);
    auto g = run_unit_batched(*gpu, units, enc, 2.0);
    REQUIRE(g.size() == ranks);
    for (std::size_t s = 0; s < ranks; ++s) check_same_pipeline(g[s], c[s], units, s * shard, shard, enc, 2.0);
  }
}

TEST_CASE("CUDA equals CPU: every stage at the multi-iteration size (grid-stride loops go round)") {
  auto gpu = gpu_or_skip();
  if (!gpu) return;
  auto cpu = cpu_engine();
  const auto g = gradient(kMultiIterationElements, 61), r0 = gradient(kMultiIterationElements, 62);
  for (StageParams p : {StageParams{SparsifyMethod::TopK, 0.8, IndexEncoding::Bit4Sum, 2.0},
                        StageParams{SparsifyMethod::Bisect, 0.9, IndexEncoding::Bit1Sum, 2.0},
                        StageParams{SparsifyMethod::TopK, 0.6, IndexEncoding::Bit8Max, 1.5}}) {
    CAPTURE(to_string(p.enc));
    check_same_stages(run_stages(*gpu, g, r0, p), run_stages(*cpu, g, r0, p));
  }
}

TEST_CASE("CUDA equals CPU: every stage with the grid capped at 1 and 2 blocks") {
  auto gpu = gpu_or_skip();
  if (!gpu) return;
  auto cpu = cpu_engine();
  const auto g = gradient(kCappedElements, 63), r0 = gradient(kCappedElements, 64);
  for (unsigned cap : {1u, 2u}) {
    CAPTURE(cap);
    for (auto histogram : {TopkHistogram::Warp, TopkHistogram::Shared}) {
      auto capped = make_engine(Backend::Cuda, {.max_blocks = cap, .topk_histogram = histogram});
      for (auto enc : kAllEncodings) {
        CAPTURE(to_string(enc));
        for (auto method : {SparsifyMethod::TopK, SparsifyMethod::Bisect}) {
          const StageParams p{method, 0.8, enc, 2.0};
          check_same_stages(run_stages(*capped, g, r0, p), run_stages(*cpu, g, r0, p));
        }
      }
      // Batched compress: three shards' blocks in one grid-stride loop.
      const SketchShape s = sketch_shape(kCappedElements / 3, 2.0);
      std::vector<float> cs(3 * s.counters());
      std::vector<std::uint32_t> cm(3 * s.counters());
      auto v = sparse_ranks(1, 3 * s.elements, 0.3, 65)[0];
      cpu->compress_batched(v.data(), 3, s, cs.data(), cm.data());
      Buffer<float> dv(*capped, v), ds(*capped, cs.size());
      Buffer<std::uint32_t> dm(*capped, cm.size());
      capped->compress_batched(dv.get(), 3, s, ds.get(), dm.get());
      SketchBound b;
      add_to_bound(b, v, s, 3);
      CHECK(dm.download() == cm);
      CHECK(sketch_close(ds.download(), cs, b));
    }
  }
}

TEST_CASE("CUDA equals CPU: edge data (ties and NaN and inf and -0.0 and all-zero and sparsity 0 or near 1)") {
  auto gpu = gpu_or_skip();
  if (!gpu) return;
  auto capped = make_engine(Backend::Cuda, {.max_blocks = 2});
  auto cpu = cpu_engine();
  for (const auto& c : edge_cases()) {
    CAPTURE(c.name);
    const Stages want = run_stages(*cpu, c.grad, c.residual, c.params);
    check_same_stages(run_stages(*gpu, c.grad, c.residual, c.params), want);
    check_same_stages(run_stages(*capped, c.grad, c.residual, c.params), want);
  }
}

TEST_CASE("CUDA engine: a failed acquisition in the constructor releases everything (fault injection)") {
  auto gpu = gpu_or_skip();
  if (!gpu) return;
#if TAGCSIM_HAVE_CUDA
  const long held = tagcsim::kernels::cuda::live_resources();
  for (int k = 1; k <= 3; ++k) {
    CAPTURE(k);
    CHECK_THROWS_WITH_AS(make_engine(Backend::Cuda, {.fail_acquisition = k}),
                         doctest::Contains("injected failure of acquisition"), CudaError);
    CHECK(tagcsim::kernels::cuda::live_resources() == held);
  }
  {
    auto fresh = make_engine(Backend::Cuda);
    CHECK(tagcsim::kernels::cuda::live_resources() == held + 3);
    Buffer<float> a(*fresh, std::vector<float>{1.0f, 2.0f}), b(*fresh, std::vector<float>{3.0f, 4.0f});
    fresh->accumulate(a.get(), b.get(), 2);
    CHECK(a.download() == std::vector<float>{4.0f, 6.0f});
  }
  CHECK(tagcsim::kernels::cuda::live_resources() == held);
#endif
}
