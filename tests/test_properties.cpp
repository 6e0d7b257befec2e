// Properties every prediction keeps, over random scenarios drawn from the presets with a fixed
// seed: the step adds up (compute + exposed communication + optimizer), the throughput is the
// step's tokens over its time, MFU lies in (0, 1), no part of the breakdown or of the memory is
// negative or not finite, and the same scenario gives byte-identical output. A scenario the
// loader refuses (a model too large for its heads to split, float8 on an A100, ...) is skipped;
// the test asserts that most are not.
#include "rng_testing.hpp"
#include "scenarios/report.hpp"
#include "scenarios/scenario.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace tagcsim;

namespace {

template <typename T, std::size_t N>
const T& pick(const T (&options)[N], test::Rng& rng) {
  return options[rng.below(N)];
}

// One scenario without tensor, context or pipeline parallelism, so that every GPU runs
// micro_batch x seq_len x grad_accumulation tokens a step.
struct Drawn {
  std::string yaml;
  int tokens_per_gpu = 0;
  int index = 0;  // which draw
};

Drawn draw(test::Rng& rng, int k) {
  const char* models[] = {"gpt2-124m",   "llama2-7b",  "llama2-13b", "llama3.1-8b", "llama3.2-1b", "mistral-7b-v0.3",
                          "olmo2-7b",    "qwen3-0.6b", "qwen2.5-7b", "gemma2-2b",   "gemma3-1b",   "mpt-125m",
                          "mpt-7b",      "llama3.1-70b", "mixtral-8x7b", "qwen3-30b-a3b"};
  const char* clusters[] = {"dgx-a100-ib200", "dgx-h100-ib400", "dgx-h200-ib400", "dgx-b200-ib400", "aws-p5",
                            "aws-p4de",       "gcp-a3-high",    "gcp-a3-mega",    "oci-h100-roce",  "eth-25g",
                            "alps-gh200",     "tagc-2x1-10g"};
  const int nodes[] = {1, 2, 3, 4, 16, 64};
  const int micro[] = {1, 2, 4};
  const int seqs[] = {512, 1024, 2048, 4096};
  const int accum[] = {1, 2};
  const char* sharding[] = {"full_shard", "shard_grad_op", "hybrid_shard"};
  const char* checkpointing[] = {"false", "true", "0.5"};
  const char* policies[] = {"[fsdp]", "[fsdp, tagc-batched]", "[fsdp, tagc, lhc]"};
  const char* precisions[] = {"param_dtype: bf16, reduce_dtype: fp32", "param_dtype: bf16, reduce_dtype: bf16",
                              "param_dtype: fp32, reduce_dtype: bf16, autocast: bf16"};
  Drawn d;
  d.index = k;
  const int mb = pick(micro, rng), seq = pick(seqs, rng), ga = pick(accum, rng);
  d.tokens_per_gpu = mb * seq * ga;
  const std::string model = pick(models, rng);
  // A mixture of experts under autocast is refused (not modelled): those draw a 16-bit precision.
  const bool moe = model == "mixtral-8x7b" || model == "qwen3-30b-a3b";
  const std::string precision = moe ? precisions[rng.below(2)] : pick(precisions, rng);
  d.yaml = fmt::format(
      "name: p{}\nmodel: {}\ncluster: {{preset: {}, nodes: {}}}\n"
      "training: {{fsdp: {}, micro_batch: {}, seq_len: {}, grad_accumulation: {}, sharding: {}, "
      "activation_checkpointing: {}, compile: {}, {}}}\npolicies: {}\n",
      k, model, pick(clusters, rng), pick(nodes, rng), 1 + rng.below(2), mb, seq, ga, pick(sharding, rng),
      pick(checkpointing, rng), rng.below(2) ? "true" : "false", precision, pick(policies, rng));
  return d;
}

bool finite_nonnegative(double x) { return std::isfinite(x) && x >= 0; }

// Draws `default_count` scenarios (TAGCSIM_PROPERTY_SEED and TAGCSIM_PROPERTY_COUNT explore further;
// the defaults are the test), hands each one the loader takes to `check`, and says how many it took.
template <typename Check>
int for_each_drawn(std::uint64_t default_seed, int default_count, Check check) {
  const char* seed = std::getenv("TAGCSIM_PROPERTY_SEED");
  const char* count = std::getenv("TAGCSIM_PROPERTY_COUNT");
  test::Rng rng{seed ? std::stoull(seed) ^ default_seed : default_seed};
  const int n = count ? std::stoi(count) : default_count;
  int ran = 0;
  for (int k = 0; k < n; ++k) {
    const Drawn d = draw(rng, k);
    scenarios::Scenario s;
    try {
      s = scenarios::parse_scenario(d.yaml, "p.yaml");
    } catch (const InputError&) {
      continue;
    }
    ++ran;
    check(d, s);
  }
  // Most draws must load, or the properties would hold of nothing.
  CHECK(ran >= n / 2);
  return ran;
}

}  // namespace

TEST_CASE("random scenarios: the step adds up, throughput and MFU follow from it, nothing is negative") {
  for_each_drawn(0x5eed0f7a9c3b2d11ull, 40, [](const Drawn& d, const scenarios::Scenario& s) {
    const auto results = scenarios::run(s);
    for (const auto& r : results) {
      const auto& st = r.step;
      const auto& b = st.breakdown;
      const auto& m = st.memory;
      INFO(d.yaml, "policy ", st.policy);
      REQUIRE(std::isfinite(st.step_time_s));
      REQUIRE(st.step_time_s > 0);
      CHECK(b.compute_s + b.exposed_comm_s + b.optimizer_s == doctest::Approx(st.step_time_s).epsilon(1e-9));
      CHECK(st.tokens_per_s_per_gpu == doctest::Approx(d.tokens_per_gpu / st.step_time_s).epsilon(1e-9));
      CHECK(st.mfu > 0);
      CHECK(st.mfu < 1);
      CHECK(st.mfu_megatron > 0);
      for (double part : {b.compute_s, b.exposed_comm_s, b.allgather_s, b.reduce_scatter_s, b.optimizer_s,
                          b.compression_kernels_s, b.fsdp_copy_s, b.host_s, b.sm_slowdown_s, b.pipeline_bubble_s})
        CHECK(finite_nonnegative(part));
      for (double part : {m.sharded_state_bytes, m.gathered_params_bytes, m.gradient_bytes, m.activation_bytes,
                          m.fragmentation_bytes, m.workspace_bytes})
        CHECK(finite_nonnegative(part));
      CHECK(m.reserved_bytes() >= m.allocated_bytes());
    }
    // Determinism, on every fourth: a fresh load and run prints the same bytes.
    if (d.index % 4 == 0) {
      const auto again = scenarios::parse_scenario(d.yaml, "p.yaml");
      CHECK(scenarios::format_results(s, results, scenarios::Format::Json) ==
            scenarios::format_results(again, scenarios::run(again), scenarios::Format::Json));
    }
  });
}

TEST_CASE("random scenarios: a faster GPU, HBM, NVLink or network never makes a step slower") {
  // Each resource doubled alone, every other input as drawn: the step time of every policy may only
  // fall or stay (a scheduler that let more speed reorder work into a longer step would fail here).
  // NVLink and the NICs with NCCL's channel count held (NCCL_MIN/MAX_NCHANNELS): unpinned, NCCL's
  // graph search gives faster links more channels (sim/nccl_channels.cpp: a node's rings follow its
  // NVLinks, the rings across nodes its NICs' speed), each holding an SM the compute stream loses,
  // and where something else sets a collective's pace that can cost more than the links gain.
  struct Faster {
    const char* what;
    void (*apply)(topologies::Cluster&);
    bool channels_held;
  };
  const Faster faster[] = {
      {"bf16 peak x2", [](topologies::Cluster& c) { c.gpu.peak_flops_bf16 *= 2; }, false},
      {"HBM bandwidth x2", [](topologies::Cluster& c) { c.gpu.memory_bandwidth *= 2; }, false},
      {"NICs x2, 16 channels", [](topologies::Cluster& c) { c.nics.bandwidth *= 2; }, true},
      {"NVLink x2, 16 channels", [](topologies::Cluster& c) { c.intra.bandwidth *= 2; }, true},
  };
  for_each_drawn(0x6a09e667f3bcc909ull, 12, [&](const Drawn& d, const scenarios::Scenario& s) {
    scenarios::Scenario held = s;
    for (auto& p : held.points) p.setup.cluster.nccl.channels = 16;
    const auto base = scenarios::run(s), base_held = scenarios::run(held);
    for (const auto& f : faster) {
      scenarios::Scenario quick = f.channels_held ? held : s;
      for (auto& p : quick.points) f.apply(p.setup.cluster);
      const auto sped = scenarios::run(quick);
      const auto& before = f.channels_held ? base_held : base;
      REQUIRE(sped.size() == before.size());
      for (std::size_t i = 0; i < before.size(); ++i) {
        INFO(d.yaml, std::string(f.what), ", policy ", before[i].step.policy);
        CHECK(sped[i].step.step_time_s <= before[i].step.step_time_s * (1 + 1e-9));
      }
    }
  });
}
