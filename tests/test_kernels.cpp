// Specification of the TAGC kernels (issue 3): the CPU reference back end,
// checked by hand-computed cases and brute force. Edge data and the issue-12
// defects: test_kernels_edge.cpp; the CUDA back end against this reference:
// test_kernels_cuda.cpp.
#include "common/input.hpp"
#include "kernels/murmur3.hpp"
#include "kernels_testing.hpp"

#include <algorithm>

using namespace tagcsim::kernels;
using tagcsim::InputError;

using namespace ktest;

TEST_CASE("MurmurHash3 x86_32 matches the published test vectors") {
  auto h = [](const char* s, std::uint32_t seed) {
    return murmur3_32(reinterpret_cast<const std::uint8_t*>(s), std::strlen(s), seed);
  };
  CHECK(h("", 0) == 0x00000000u);
  CHECK(h("", 1) == 0x514E28B7u);
  CHECK(h("", 0xffffffffu) == 0x81F16F39u);
  CHECK(h("aaaa", 0x9747b28cu) == 0x5A97808Au);
  CHECK(h("Hello, world!", 0x9747b28cu) == 0x24884CBAu);
  CHECK(h("The quick brown fox jumps over the lazy dog", 0x9747b28cu) == 0x2FA826CDu);
  const std::uint8_t zeros[4] = {0, 0, 0, 0};
  CHECK(murmur3_32(zeros, 4, 0) == 0x2362F9DEu);
  // The block hash is the hash of the block number's 4 little-endian bytes.
  for (std::uint32_t b : {0u, 1u, 77u, 123456789u}) {
    const std::uint8_t le[4] = {std::uint8_t(b), std::uint8_t(b >> 8), std::uint8_t(b >> 16), std::uint8_t(b >> 24)};
    for (std::uint32_t seed = 0; seed < 3; ++seed) CHECK(murmur3_32_u32(b, seed) == murmur3_32(le, 4, seed));
  }
}

TEST_CASE("block hash: row = h_k mod R, sign from the top bit of h_k") {
  for (std::uint32_t b = 0; b < 50; ++b) {
    BlockHash bh = block_hash(b, 7);
    for (int k = 0; k < 3; ++k) {
      std::uint32_t h = murmur3_32_u32(b, std::uint32_t(k));
      CHECK(bh.row[k] == h % 7);
      CHECK(bh.negative[k] == (h >= 0x80000000u));
    }
  }
}

TEST_CASE("sketch shape: R = ceil(blocks / ratio), the tail is what is past the last block") {
  auto s = sketch_shape(10 * 1024 + 5, 2.0);
  CHECK(s.blocks == 10);
  CHECK(s.tail == 5);
  CHECK(s.rows == 5);
  CHECK(s.counters() == 5 * 1024);
  CHECK(sketch_shape(3 * 1024, 1.5).rows == 2);
  CHECK(sketch_shape(7 * 1024, 2.0).rows == 4);    // 3.5 rounds up
  CHECK(sketch_shape(5 * 1024, 10.0).rows == 1);   // never below one row
  CHECK(sketch_shape(1000, 2.0).rows == 0);        // all tail: nothing sketched
  CHECK(sketch_shape(1000, 2.0).tail == 1000);
}

TEST_CASE("bad input: a ratio <= 1 is rejected with a clear message") {
  for (double r : {1.0, 0.5, 0.0, -2.0, std::nan("")}) {
    CHECK_THROWS_WITH_AS(sketch_shape(4096, r), doctest::Contains("greater than 1"), InputError);
  }
}

TEST_CASE("index encodings: names, wire sizes, parsing") {
  CHECK(std::string(to_string(IndexEncoding::Bit1Sum)) == "1bit-sum");
  CHECK(std::string(to_string(IndexEncoding::Bit1Or)) == "1bit-or");
  CHECK(std::string(to_string(IndexEncoding::Bit4Sum)) == "4bit-sum");
  CHECK(std::string(to_string(IndexEncoding::Bit8Max)) == "8bit-max");
  CHECK(index_bytes_per_element(IndexEncoding::Bit1Sum) == 0.125);
  CHECK(index_bytes_per_element(IndexEncoding::Bit1Or) == 0.125);
  CHECK(index_bytes_per_element(IndexEncoding::Bit4Sum) == 0.5);
  CHECK(index_bytes_per_element(IndexEncoding::Bit8Max) == 1.0);
  CHECK(index_bytes(17, IndexEncoding::Bit1Or) == 3);
  CHECK(index_bytes(17, IndexEncoding::Bit4Sum) == 9);
  CHECK(index_bytes(17, IndexEncoding::Bit8Max) == 17);
  auto in = tagcsim::Input::load_string("index: 8bit-max\nbad: 2bit-xor\n", "policy.yaml");
  CHECK(parse_index_encoding(in["index"]) == IndexEncoding::Bit8Max);
  CHECK_THROWS_WITH_AS(parse_index_encoding(in["bad"]), doctest::Contains("policy.yaml:2"), InputError);
  CHECK(is_lossy(IndexEncoding::Bit1Sum));
  CHECK_FALSE(is_lossy(IndexEncoding::Bit1Or));
}

TEST_CASE("bad input: an index encoding that would overflow for the rank count is rejected") {
  CHECK_NOTHROW(check_index_ranks(IndexEncoding::Bit4Sum, 15));
  CHECK_THROWS_WITH_AS(check_index_ranks(IndexEncoding::Bit4Sum, 16), doctest::Contains("more than 15 ranks"),
                       InputError);
  CHECK_NOTHROW(check_index_ranks(IndexEncoding::Bit8Max, 4096));
  CHECK_NOTHROW(check_index_ranks(IndexEncoding::Bit1Or, 4096));
  CHECK_THROWS_AS(check_index_ranks(IndexEncoding::Bit1Or, 0), InputError);
  // The pipeline applies the same check before it aggregates anything.
  auto e = cpu_engine();
  std::vector<std::vector<float>> ranks(16, std::vector<float>(2048, 1.0f));
  CHECK_THROWS_AS(run_shard_pipeline(*e, ranks, IndexEncoding::Bit4Sum, 2.0), InputError);
}

TEST_CASE("index create: bit and nibble layout") {
  auto e = cpu_engine();
  std::vector<float> v = {0.0f, 1.5f, 0.0f, -2.0f, -0.0f, 0.0f, 0.0f, 3.0f, 4.0f};
  CHECK(make_index(*e, v, IndexEncoding::Bit1Or) == std::vector<std::uint8_t>{0x8a, 0x01});
  CHECK(make_index(*e, v, IndexEncoding::Bit4Sum) == std::vector<std::uint8_t>{0x10, 0x10, 0x00, 0x10, 0x01});
  CHECK(make_index(*e, v, IndexEncoding::Bit8Max) == std::vector<std::uint8_t>{0, 1, 0, 1, 0, 0, 0, 1, 1});
}

TEST_CASE("1-bit SUM corrupts flags where two ranks share a bit, and the OR variants do not") {
  auto e = cpu_engine();
  // Both ranks have element 0 nonzero; rank b also element 2.
  std::vector<float> a = {1, 0, 0, 0, 0, 0, 0, 0}, b = {1, 0, 1, 0, 0, 0, 0, 0};
  auto flags_after = [&](IndexEncoding enc) {
    auto ia = make_index(*e, a, enc), ib = make_index(*e, b, enc);
    e->aggregate_index(ia.data(), ib.data(), 8, enc);
    return read_flags(ia, 8, enc);
  };
  // 0b001 + 0b101 = 0b110: element 0 is lost, element 1 is invented.
  CHECK(flags_after(IndexEncoding::Bit1Sum) == std::vector<unsigned>{0, 1, 1, 0, 0, 0, 0, 0});
  const std::vector<unsigned> truth = {1, 0, 1, 0, 0, 0, 0, 0};
  CHECK(flags_after(IndexEncoding::Bit1Or) == truth);
  CHECK(flags_after(IndexEncoding::Bit4Sum) == truth);
  CHECK(flags_after(IndexEncoding::Bit8Max) == truth);

  // 15 ranks setting the same element fill its nibble (15) without carrying.
  std::vector<std::vector<std::uint8_t>> idx(15, make_index(*e, a, IndexEncoding::Bit4Sum));
  std::vector<const std::uint8_t*> ptrs;
  for (auto& i : idx) ptrs.push_back(i.data());
  std::vector<std::uint8_t> out(index_bytes(8, IndexEncoding::Bit4Sum));
  e->reduce_indexes(ptrs, 8, IndexEncoding::Bit4Sum, out.data());
  CHECK(out[0] == 0x0f);
  CHECK(read_flags(out, 8, IndexEncoding::Bit4Sum) == std::vector<unsigned>{1, 0, 0, 0, 0, 0, 0, 0});
}

TEST_CASE("read index: the flag goes into the lowest mantissa bit") {
  auto e = cpu_engine();
  std::vector<float> v = {1.0f, 0.0f, 2.0f, 0.0f};
  std::uint32_t odd = bits(2.0f) | 1u;
  std::memcpy(&v[2], &odd, 4);  // 2.0 with its low bit already set, not flagged below
  std::vector<std::uint8_t> idx = {0b0011};  // elements 0 and 1 flagged
  e->read_index(v.data(), idx.data(), 4, IndexEncoding::Bit1Or);
  CHECK(bits(v[0]) == 0x3f800001u);  // 1.0 + 1 ulp
  CHECK(bits(v[1]) == 0x00000001u);  // flagged zero: smallest denormal
  CHECK(bits(v[2]) == bits(2.0f));   // low bit cleared
  CHECK(bits(v[3]) == 0u);
}

TEST_CASE("sparsify top-k: keeps the k largest magnitudes, the rest becomes residual") {
  auto e = cpu_engine();
  std::vector<float> g = {0.5f, -3.0f, 1.0f, 0.25f, -2.0f, 4.0f, 0.125f, 0.0f};
  std::vector<float> res(8, 0.0f), out(8);
  float thr = -1;
  auto r = e->sparsify(g.data(), res.data(), out.data(), 8, SparsifyMethod::TopK, 0.5, &thr);
  CHECK(r.host_syncs == 0);
  CHECK(thr == 1.0f);
  CHECK(out == std::vector<float>{0, -3, 1, 0, -2, 4, 0, 0});
  CHECK(res == std::vector<float>{0.5f, 0, 0, 0.25f, 0, 0, 0.125f, 0});
  // Ties with the k-th largest are all kept.
  std::vector<float> t = {1, -1, 1, 2}, tr(4, 0.0f), to(4);
  e->sparsify(t.data(), tr.data(), to.data(), 4, SparsifyMethod::TopK, 0.5, &thr);
  CHECK(thr == 1.0f);
  CHECK(to == t);
  // Sparsity 1 keeps nothing, 0 keeps everything.
  e->sparsify(g.data(), res.data(), out.data(), 8, SparsifyMethod::TopK, 1.0, &thr);
  CHECK(out == std::vector<float>(8, 0.0f));
  CHECK_THROWS_AS(e->sparsify(g.data(), res.data(), out.data(), 8, SparsifyMethod::TopK, 1.5, &thr), InputError);
}

TEST_CASE("sparsify bisection: the smallest table threshold that zeroes the target fraction") {
  auto table = bisect_thresholds();
  REQUIRE(table.size() == 25);
  CHECK(table[0] == doctest::Approx(1e-20));
  CHECK(table[24] == 0.5f);
  // Entries are 10^(0.8208) apart: entry 17 is 9.0e-7, entry 18 is 6.0e-6.
  REQUIRE(table[17] < 1e-6f);
  REQUIRE(table[18] > 1e-6f);
  auto e = cpu_engine();
  std::vector<float> g = {1e-6f, -1e-6f, 1e-6f, 1e-6f, 1e-6f, 0.01f, -0.01f, 0.01f, 0.01f, 0.01f};
  std::vector<float> res(10, 0.0f), out(10);
  float thr = 0;
  auto r = e->sparsify(g.data(), res.data(), out.data(), 10, SparsifyMethod::Bisect, 0.5, &thr);
  CHECK(thr == table[18]);
  CHECK(r.host_syncs >= 4);
  CHECK(r.host_syncs <= kBisectProbes);
  for (int i = 0; i < 5; ++i) {
    CHECK(out[i] == 0.0f);
    CHECK(res[i] == g[i]);
    CHECK(out[i + 5] == g[i + 5]);
    CHECK(res[i + 5] == 0.0f);
  }
}

TEST_CASE("error feedback: sum of sent values over steps plus the final residual = sum of inputs") {
  auto e = cpu_engine();
  const std::size_t n = 4096;
  for (auto method : {SparsifyMethod::TopK, SparsifyMethod::Bisect}) {
    std::mt19937 rng(7);
    std::vector<float> res(n, 0.0f), out(n);
    std::vector<double> sent(n, 0.0), inputs(n, 0.0);
    for (int step = 0; step < 6; ++step) {
      std::vector<float> g(n);
      for (auto& x : g) x = float(int(rng() % 129) - 64) / 256.0f;  // dyadic: every sum is exact
      for (std::size_t i = 0; i < n; ++i) inputs[i] += g[i];
      e->sparsify(g.data(), res.data(), out.data(), n, method, 0.9, nullptr);
      for (std::size_t i = 0; i < n; ++i) sent[i] += out[i];
    }
    bool exact = true;
    for (std::size_t i = 0; i < n; ++i) exact = exact && (sent[i] + res[i] == inputs[i]);
    CHECK(exact);
  }
}

TEST_CASE("compress: sketch values and mapping counters equal a brute-force count") {
  auto e = cpu_engine();
  const SketchShape shape = sketch_shape(5 * 1024 + 300, 2.0);  // 5 blocks -> 3 rows, tail 300
  auto v = sparse_integers(shape.elements, 0.3, 3);
  auto idx = make_index(*e, v, IndexEncoding::Bit8Max);
  e->read_index(v.data(), idx.data(), v.size(), IndexEncoding::Bit8Max);
  std::vector<float> sketch(shape.counters(), -1.0f);
  std::vector<std::uint32_t> mapping(shape.counters(), 99u), built(shape.counters());
  e->compress(v.data(), shape, sketch.data(), mapping.data());
  e->build_mapping(idx.data(), IndexEncoding::Bit8Max, shape, built.data());
  for (std::size_t row = 0; row < shape.rows; ++row) {
    for (std::size_t t = 0; t < 1024; t += 37) {
      double sum = 0;
      std::uint32_t count = 0;
      for (std::size_t b = 0; b < shape.blocks; ++b) {
        BlockHash bh = block_hash(std::uint32_t(b), std::uint32_t(shape.rows));
        for (int k = 0; k < 3; ++k) {
          if (bh.row[k] != row) continue;
          float x = v[b * 1024 + t];
          sum += bh.negative[k] ? -double(x) : double(x);
          count += x != 0.0f;
        }
      }
      CHECK(mapping[row * 1024 + t] == count);
      CHECK(built[row * 1024 + t] == count);
      CHECK(sketch[row * 1024 + t] == doctest::Approx(sum).epsilon(1e-6));
    }
  }
}

TEST_CASE("decode below the peeling threshold is lossless: every nonzero recovered exactly") {
  auto e = cpu_engine();
  // 256 blocks, ratio 2 -> 128 rows; density 0.25 -> load 0.5.
  const SketchShape shape = sketch_shape(256 * 1024, 2.0);
  auto v = sparse_integers(shape.elements, 0.25, 11);
  auto idx = make_index(*e, v, IndexEncoding::Bit1Or);
  std::vector<float> sketch(shape.counters()), out(shape.elements, 7.0f);
  std::vector<std::uint32_t> mapping(shape.counters());
  e->compress(v.data(), shape, sketch.data(), nullptr);  // integer values, no flag bits: sums are exact
  e->build_mapping(idx.data(), IndexEncoding::Bit1Or, shape, mapping.data());
  std::size_t nonzeros = 0;
  for (float x : v) nonzeros += x != 0.0f;
  auto r = e->decode(sketch.data(), mapping.data(), idx.data(), IndexEncoding::Bit1Or, shape, out.data());
  CHECK(r.recovered == nonzeros);
  CHECK(r.estimated == 0);
  CHECK(r.rounds > 1);
  CHECK(out == v);
  // Everything was subtracted out again.
  bool empty = true;
  for (auto m : mapping) empty = empty && m == 0;
  CHECK(empty);
}

TEST_CASE("decode above the threshold: peeling stalls and the rest is estimated") {
  auto e = cpu_engine();
  const SketchShape shape = sketch_shape(256 * 1024, 2.0);
  auto v = sparse_integers(shape.elements, 0.6, 12);  // load 1.2
  auto idx = make_index(*e, v, IndexEncoding::Bit1Or);
  std::vector<float> sketch(shape.counters()), out(shape.elements);
  std::vector<std::uint32_t> mapping(shape.counters());
  e->compress(v.data(), shape, sketch.data(), nullptr);
  e->build_mapping(idx.data(), IndexEncoding::Bit1Or, shape, mapping.data());
  std::size_t nonzeros = 0;
  for (float x : v) nonzeros += x != 0.0f;
  auto r = e->decode(sketch.data(), mapping.data(), idx.data(), IndexEncoding::Bit1Or, shape, out.data());
  CHECK(r.recovered + r.estimated == nonzeros);
  CHECK(r.estimated > nonzeros / 2);
}

TEST_CASE("the full pipeline on 2 ranks with a tail: blocks decoded, the tail sent plain") {
  auto e = cpu_engine();
  const std::size_t n = 256 * 1024 + 100;  // not a whole number of blocks
  std::vector<std::vector<float>> ranks = {sparse_integers(n, 0.1, 21), sparse_integers(n, 0.1, 22)};
  auto res = run_shard_pipeline(*e, ranks, IndexEncoding::Bit1Or, 2.0);
  REQUIRE(res.decoded.size() == n);
  CHECK(res.decode.estimated == 0);
  // Read index perturbs each rank's value by at most 1 ulp and peeling
  // subtracts in fp32, so the blocks agree to fp32 rounding of values <= 100
  // (1 ulp of 100 is 7.6e-6); the tail is exact.
  double worst = 0;
  bool tail_exact = true;
  for (std::size_t i = 0; i < n; ++i) {
    float exact = ranks[0][i] + ranks[1][i];
    if (i >= 256 * 1024)
      tail_exact = tail_exact && res.decoded[i] == exact;
    else
      worst = std::max(worst, std::abs(double(res.decoded[i]) - exact));
  }
  CHECK(tail_exact);
  CHECK(worst < 4e-5);
}

TEST_CASE("batched sketches summed across simulated ranks equal the per-shard pipeline's result") {
  auto e = cpu_engine();
  const std::size_t ranks = 4, shard = 8 * 1024 + 17;
  std::vector<std::vector<float>> units;
  for (std::size_t r = 0; r < ranks; ++r) units.push_back(sparse_integers(ranks * shard, 0.08, 100 + unsigned(r)));
  auto per_shard = run_unit_per_shard(*e, units, IndexEncoding::Bit4Sum, 2.0);
  auto batched = run_unit_batched(*e, units, IndexEncoding::Bit4Sum, 2.0);
  REQUIRE(per_shard.size() == ranks);
  REQUIRE(batched.size() == ranks);
  for (std::size_t s = 0; s < ranks; ++s) {
    CHECK(batched[s].sketch == per_shard[s].sketch);
    CHECK(batched[s].decoded == per_shard[s].decoded);
    CHECK(batched[s].decode.recovered == per_shard[s].decode.recovered);
  }
  // And compress_batched's slice s is compress of shard s, bit for bit.
  const SketchShape shape = sketch_shape(shard, 2.0);
  std::vector<float> all(ranks * shape.counters()), one(shape.counters());
  e->compress_batched(units[1].data(), ranks, shape, all.data(), nullptr);
  for (std::size_t s = 0; s < ranks; ++s) {
    e->compress(units[1].data() + s * shard, shape, one.data(), nullptr);
    CHECK(std::equal(one.begin(), one.end(), all.begin() + s * shape.counters()));
  }
}

TEST_CASE("the CUDA back end reports a clear error, not a crash, when it cannot run") {
#if TAGCSIM_HAVE_CUDA
  CHECK(cuda_compiled());  // nvcc was found: the CUDA sources must have been built in
#else
  CHECK_FALSE(cuda_compiled());
#endif
  std::string why = cuda_problem();
  if (why.empty()) {
    CHECK_NOTHROW(make_engine(Backend::Cuda));
  } else {
    MESSAGE("CUDA back end unavailable here: " << why);
    CHECK_THROWS_WITH_AS(make_engine(Backend::Cuda), doctest::Contains("CUDA"), BackendUnavailable);
  }
}
