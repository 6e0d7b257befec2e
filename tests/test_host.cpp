// The issuing thread: eager PyTorch issues every kernel from one CPU thread, so a model of tiny
// kernels waits for it; and a kernel whose result the host reads back empties the GPU's queue,
// which flash-attn's unpadded attention path (LLM Foundry's attn_impl: flash) does six times a
// layer. Times computed by hand from the H100 profile's launch floor and issue cost.
#include "models/kernel_list.hpp"
#include "models/model.hpp"
#include "scenarios/scenario.hpp"
#include "sim/compute.hpp"
#include "sim/kernel_profile.hpp"
#include "topologies/cluster.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

using namespace tagcsim;
using doctest::Approx;

namespace {

models::Kernel memory_kernel(const std::string& op, double bytes, bool host_sync = false) {
  models::Kernel k;
  k.kind = models::KernelKind::Memory;
  k.op = op;
  k.bytes = bytes;
  k.host_sync = host_sync;
  return k;
}

int count_if(const std::vector<models::Kernel>& list, const std::string& text) {
  int n = 0;
  for (const auto& k : list) n += k.op.find(text) != std::string::npos;
  return n;
}

const models::Kernel* find(const std::vector<models::Kernel>& list, const std::string& op) {
  for (const auto& k : list)
    if (k.op == op) return &k;
  return nullptr;
}

}  // namespace

TEST_CASE("after a read back the GPU waits for the host to issue each kernel again") {
  const auto gpu = topologies::device("h100-sxm");
  const auto& prof = sim::kernel_profile("device-h100-sxm");
  const double issue = prof.issue_seconds, floor = prof.min_kernel_seconds;  // 6.8 us, 2.52 us
  REQUIRE(issue > floor);
  const double a = prof.memory_seconds(1e9);
  const double tiny = prof.memory_seconds(8);  // the launch floor and 8 bytes: 0.03 us over it
  CHECK(tiny == Approx(floor).epsilon(0.02));
  // A (1 GB, read back), B and C (launch floors), D (1 GB). A ends at a; the host resumes when
  // the copy back lands (a + floor) and issues B at a + floor + issue, C one issue later, D one
  // more: D starts at a + floor + 3 issue, so the unit takes 2a + floor + 3 issue, where the same
  // kernels without the read back take 2a + 2 floor.
  auto unit_of = [&](bool sync) {
    auto kernels = std::make_shared<models::UnitKernels>();
    kernels->forward = {memory_kernel("A", 1e9, sync), memory_kernel("B", 8), memory_kernel("C", 8),
                        memory_kernel("D", 1e9)};
    models::FsdpUnit u;
    u.kernels = kernels;
    return u;
  };
  const auto synced = sim::unit_compute(unit_of(true), gpu, sim::Dtype::BF16, false,
                                        models::AttentionKernel::Flash2, issue);
  const auto free_running = sim::unit_compute(unit_of(false), gpu, sim::Dtype::BF16, false,
                                              models::AttentionKernel::Flash2, issue);
  CHECK(free_running.forward_seconds == Approx(2 * a + 2 * tiny));
  CHECK(synced.forward_seconds == Approx(2 * a + floor + 3 * issue));
  CHECK(synced.forward_kernels == 4);
  CHECK(synced.forward_issue_seconds == Approx(4 * issue));  // the host's issuing is the same
}

TEST_CASE("unpadded attention: q, k, v gathered and the output scattered back, six reads back a layer") {
  // MPT-7B (h 4096, 32 heads, MHA), 2 x 2048 tokens in bf16: each unpad gathers T x h rows
  // (2 e T h bytes), backward zeroes and scatters them (e T h, 2 e T h); pad_input zeroes and
  // index_puts the output (e T h, 2 e T h) and backward gathers it (2 e T h). SDPA's layout copies
  // are gone.
  models::TrainingShape shape;
  shape.micro_batch = 2;
  shape.seq_len = 2048;
  const double T = 4096, h = 4096, e = 2;
  const auto m = models::preset("mpt-7b");
  const auto sdpa = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  shape.impl.unpadded_attention = true;
  const auto unpadded = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  const auto& f = unpadded[1].kernels->forward;
  const auto& b = unpadded[1].kernels->backward;
  int syncs = 0;
  for (const auto& k : f) syncs += k.host_sync;
  CHECK(syncs == 6);  // torch.nonzero and .item() in each of q's, k's and v's unpad_input
  for (const char* what : {"q", "k", "v"}) {
    CAPTURE(what);
    const std::string name = std::string("unpad ") + what;
    REQUIRE(find(f, name + " gather"));
    CHECK(find(f, name + " gather")->bytes == Approx(2 * e * T * h));
    REQUIRE(find(b, name + " bwd scatter"));
    CHECK(find(b, name + " bwd zeros")->bytes == Approx(e * T * h));
    CHECK(find(b, name + " bwd scatter")->bytes == Approx(2 * e * T * h));
  }
  CHECK(find(f, "pad output index_put")->bytes == Approx(2 * e * T * h));
  CHECK(find(b, "pad output bwd gather")->bytes == Approx(2 * e * T * h));
  CHECK(count_if(f, "transpose") == 0);
  CHECK(count_if(b, "transpose") == 0);
  CHECK(count_if(sdpa[1].kernels->forward, "unpad") == 0);
  // In time, on H100: at least the six reads back's idle (each a copy back and one issue before
  // the next kernel) beyond what the extra bytes cost.
  const auto gpu = topologies::device("h100-sxm");
  const auto& prof = sim::kernel_profile("device-h100-sxm");
  const auto with = sim::unit_compute(unpadded[1], gpu, sim::Dtype::BF16, false, models::AttentionKernel::Flash2,
                                      prof.issue_seconds);
  const auto without = sim::unit_compute(sdpa[1], gpu, sim::Dtype::BF16, false, models::AttentionKernel::Flash2,
                                         prof.issue_seconds);
  double extra_kernels = 0;
  for (const auto& k : f)
    if (k.op.find("pad") != std::string::npos) extra_kernels += prof.memory_seconds(k.bytes);
  extra_kernels -= prof.memory_seconds(2 * e * T * h);  // the transpose it replaces
  CHECK(with.forward_seconds - without.forward_seconds >=
        extra_kernels + 6 * (prof.min_kernel_seconds + prof.issue_seconds) - 1e-9);
}

TEST_CASE("bad input: a sliding window without a kernel that takes one, a pattern without a window") {
  auto scenario = [](const std::string& model, const std::string& attention) {
    return scenarios::parse_scenario("model: " + model + "\ncluster: {preset: dgx-h100-ib400, nodes: 1}\ntraining:\n" +
                                         "  attention: " + attention + "\npolicies: [fsdp]\n",
                                     "w.yaml");
  };
  CHECK_THROWS_WITH_AS(scenario("mistral-7b-v0.1", "cudnn"),
                       doctest::Contains("w.yaml:4: training.attention: model 'mistral-7b-v0.1' attends within a "
                                         "sliding window, which cudnn does not take: flash2 or flash3"),
                       InputError);
  CHECK_THROWS_WITH_AS(scenario("{preset: llama3.1-8b, full_attention_every: 2}", "flash2"),
                       doctest::Contains("w.yaml:1: model.full_attention_every: full_attention_every interleaves "
                                         "full-attention blocks among windowed ones: set sliding_window too"),
                       InputError);
  CHECK_THROWS_WITH_AS(scenario("{preset: llama3.1-8b, sliding_window: -1}", "flash2"),
                       doctest::Contains("w.yaml:1: model.sliding_window: expected an integer >= 0"), InputError);
  // cuDNN serves the same model without its window; flash2 and math with it.
  CHECK(scenario("{preset: mistral-7b-v0.1, sliding_window: 0}", "cudnn").points.at(0).setup.model.sliding_window == 0);
  CHECK(scenario("mistral-7b-v0.1", "math").points.at(0).setup.model.sliding_window == 4096);
}

TEST_CASE("bad input: unpadded_attention without flash-attn's kernels") {
  auto training = [](const std::string& t) {
    return scenarios::parse_scenario("model: llama2-7b\ncluster: {preset: dgx-a100-ib200, nodes: 1}\ntraining:\n" + t +
                                         "policies: [fsdp]\n",
                                     "u.yaml");
  };
  CHECK_THROWS_WITH_AS(training("  attention: flash-triton\n  unpadded_attention: true\n"),
                       doctest::Contains("u.yaml:5: training.unpadded_attention: flash-attn's unpadded (varlen) path "
                                         "runs its own kernels: set attention: flash2 or flash3 (attention is "
                                         "flash-triton)"),
                       InputError);
  CHECK_THROWS_WITH_AS(training("  unpadded_attention: yes please\n"), doctest::Contains("u.yaml:4: training.unpadded_attention"),
                       InputError);
  CHECK(training("  unpadded_attention: true\n").points.at(0).setup.training.impl.unpadded_attention);
}

TEST_CASE("a toy model of tiny kernels is bound by the host, a large one by the GPU") {
  const auto gpu = topologies::device("h100-sxm");
  const auto& prof = sim::kernel_profile("device-h100-sxm");
  // 2 layers of hidden 64, 64 tokens: every kernel is a launch floor, far shorter than the
  // CPU's issue cost per kernel.
  models::TransformerConfig toy;
  toy.name = "toy";
  toy.layers = 2, toy.hidden = 64, toy.heads = 2, toy.kv_heads = 2, toy.ffn = 256, toy.vocab = 128,
  toy.seq_len = 64;
  models::TrainingShape shape;
  const auto tiny = models::fsdp_units(toy, models::WrapPolicy::Block, shape);
  const auto t = sim::unit_compute(tiny[1], gpu, sim::Dtype::BF16, false, models::AttentionKernel::Flash2,
                                   prof.issue_seconds);
  CHECK(t.forward_issue_seconds == Approx(t.forward_kernels * prof.issue_seconds));
  CHECK(t.forward_seconds == Approx(t.forward_kernels * prof.min_kernel_seconds).epsilon(0.05));
  CHECK(t.forward_issue_seconds > 2 * t.forward_seconds);
  CHECK(t.backward_issue_seconds > 2 * t.backward_seconds);
  // Llama-2 70B, 4096 tokens: the GPU's work dwarfs the issuing.
  shape.seq_len = 4096;
  const auto big = models::fsdp_units(models::preset("llama2-70b"), models::WrapPolicy::Block, shape);
  const auto g = sim::unit_compute(big[1], gpu, sim::Dtype::BF16, false, models::AttentionKernel::Flash2,
                                   prof.issue_seconds);
  CHECK(g.forward_seconds > 20 * g.forward_issue_seconds);
  CHECK(g.backward_seconds > 20 * g.backward_issue_seconds);
}

TEST_CASE("in the replayed step, the host stream bounds a toy model and the GPU a large one") {
  // One H100, so that no collective hides anything: the step is the host stream or the compute
  // stream, whichever is longer.
  auto step = [](const std::string& model, int seq) {
    const auto s = scenarios::parse_scenario(
        fmt::format("model: {}\ncluster: {{preset: dgx-h100-ib400, nodes: 1, gpus_per_node: 1}}\n"
                    "training: {{micro_batch: 1, seq_len: {}}}\npolicies: [fsdp]\n",
                    model, seq),
        "host.yaml");
    return sim::simulate_fsdp(s.points[0].setup);
  };
  // A toy of hidden 64 at 64 tokens: every kernel is a launch floor, far shorter than its issue cost.
  const auto toy = step("{layers: 4, hidden: 64, heads: 2, ffn: 256, vocab: 128, seq_len: 64}", 64);
  double issue = 0, kernels = 0;
  for (int u = 0; u < int(toy.schedule.tasks.size()); ++u)
    if (toy.schedule.tasks[u].stream == sim::Stream::Host) issue += toy.replay.timings[u].end - toy.replay.timings[u].start;
  kernels = toy.breakdown.compute_s + toy.breakdown.optimizer_s;
  CHECK(toy.breakdown.host_s == Approx(issue));
  CHECK(issue > 2 * kernels);                             // the GPU idles most of the step
  CHECK(toy.step_time_s >= issue);                        // and the step is the host's
  CHECK(toy.step_time_s < issue + kernels);
  // Llama-2 7B at 4096 tokens: the GPU's work dwarfs the issuing, and the step is the GPU's.
  const auto big = step("llama2-7b", 4096);
  CHECK(big.breakdown.host_s < 0.05 * big.step_time_s);
  CHECK(big.step_time_s == Approx(big.breakdown.compute_s + big.breakdown.optimizer_s).epsilon(0.02));
}
