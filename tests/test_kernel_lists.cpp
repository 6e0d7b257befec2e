// The kernels PyTorch runs for each unit, as models/kernel_list.cpp lists them: a Linear's three
// GEMMs with their real shapes, what FSDP1 adds, the model families' own kernels (what activation
// checkpointing runs again: tests/test_kernel_lists_checkpointing.cpp). Numbers by hand from the
// model's dimensions (docs/compute-model.md, "The kernels of a unit").
#include "kernel_list_testing.hpp"
#include "models/kernel_list.hpp"
#include "models/model.hpp"
#include "scenarios/scenario.hpp"
#include "sim/compute.hpp"
#include "sim/kernel_profile.hpp"
#include "topologies/cluster.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace tagcsim;
using doctest::Approx;
using doctest::Contains;
using test::find;
const auto count = test::count_prefix;

TEST_CASE("kernel lists: a model's own head_dim sizes q, the attention and the out projection") {
  // Qwen3-0.6B's shape: hidden 1024, 16 heads of 128 (q 2048 wide), 8 KV heads of 128.
  auto m = models::preset("llama3.2-1b");
  m.hidden = 1024, m.heads = 16, m.kv_heads = 8, m.head_dim = 128;
  models::TrainingShape shape;
  shape.micro_batch = 1;
  shape.seq_len = 2048;  // T = 2048 tokens
  const auto units = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  const auto& block = *units[1].kernels;
  CHECK(find(block.forward, "attn.q").n == 2048);
  CHECK(find(block.forward, "attn.q").k == 1024);
  CHECK(find(block.forward, "attn.k").n == 1024);
  CHECK(find(block.forward, "attn.out").k == 2048);
  CHECK(find(block.forward, "attn.out").n == 1024);
  const auto attn = find(block.forward, "attention");
  CHECK(attn.batch_heads == 16);
  CHECK(attn.head_dim == 128);
  // SDPA's output transpose moves T x 2048 bf16 elements in and out.
  CHECK(find(block.forward, "attention out transpose").bytes == Approx(2.0 * 2 * 2048 * 2048));
}

TEST_CASE("kernel lists: Qwen3's q and k norms run per head, eager op by op, compiled into rotary") {
  const auto m = models::preset("qwen3-8b");  // 32 heads and 8 KV heads of 128
  models::TrainingShape shape;
  shape.micro_batch = 1;
  shape.seq_len = 1024;  // T = 1024 tokens
  const auto eager = *models::fsdp_units(m, models::WrapPolicy::Block, shape)[1].kernels;
  // Eager: the block norms' eight forward ops, over T x 4096 elements in T x 32 rows for q.
  CHECK(count(eager.forward, "q_norm") == 8);
  CHECK(count(eager.forward, "k_norm") == 8);
  CHECK(find(eager.forward, "q_norm to fp32").bytes == Approx(6.0 * 1024 * 4096));
  CHECK(find(eager.forward, "k_norm to fp32").bytes == Approx(6.0 * 1024 * 1024));
  CHECK(find(eager.forward, "q_norm add eps").bytes == Approx(8.0 * 1024 * 32));
  shape.impl.compiled = true;
  const auto compiled = *models::fsdp_units(m, models::WrapPolicy::Block, shape)[1].kernels;
  CHECK(count(compiled.forward, "q_norm") == 0);
  CHECK(count(compiled.backward, "q_norm") == 1);
  CHECK(find(compiled.backward, "q_norm weight grad").bytes == Approx(2.0 * 2 * 1024 * 4096));
}

TEST_CASE("kernel lists: a compiled block runs a complex rotary multiply eager between its casts and fuses cos/sin") {
  const auto m = models::preset("llama3.1-8b");  // q 4096 wide, k 1024 (8 KV heads of 128)
  models::TrainingShape shape;
  shape.micro_batch = 1;
  shape.seq_len = 1024;  // T = 1024 tokens
  shape.impl.compiled = true;
  shape.impl.rotary = models::Implementation::Rotary::Complex;
  const auto complex = *models::fsdp_units(m, models::WrapPolicy::Block, shape)[1].kernels;
  // Inductor leaves the complex multiply to aten: q cast to fp32 (2 + 4 bytes an element), multiplied
  // as complex64 (4 read, 4 written), cast back (4 + 2): three kernels each way, as eager.
  const double q = 1024.0 * 4096, k = 1024.0 * 1024;
  CHECK(count(complex.forward, "rotary q") == 3);
  CHECK(count(complex.backward, "rotary q bwd") == 3);
  CHECK(find(complex.forward, "rotary q to fp32").bytes == Approx(6 * q));
  CHECK(find(complex.forward, "rotary q complex mul").bytes == Approx(8 * q));
  CHECK(find(complex.forward, "rotary q to bf16").bytes == Approx(6 * q));
  CHECK(find(complex.backward, "rotary k bwd complex mul").bytes == Approx(8 * k));
  shape.impl.rotary = models::Implementation::Rotary::CosSin;
  const auto cos_sin = *models::fsdp_units(m, models::WrapPolicy::Block, shape)[1].kernels;
  // Real cos and sin tables fuse into one kernel that reads and writes bf16 once.
  CHECK(count(cos_sin.forward, "rotary q") == 1);
  CHECK(find(cos_sin.forward, "rotary q").bytes == Approx(4 * q));
  CHECK(find(cos_sin.backward, "rotary k bwd").bytes == Approx(4 * k));
  // Eager, the two cost the same three kernels.
  shape.impl.compiled = false;
  const auto eager = *models::fsdp_units(m, models::WrapPolicy::Block, shape)[1].kernels;
  CHECK(count(eager.forward, "rotary q") == 3);
  CHECK(find(eager.forward, "rotary q complex mul").bytes == Approx(8 * q));
}

TEST_CASE("kernel lists: training.rotary defaults to what torchtitan runs per model and a scenario's key wins") {
  const auto rotary = [](const std::string& model, const std::string& training) {
    return scenarios::parse_scenario("model: " + model + "\ncluster: {preset: dgx-h100-ib400, nodes: 1}\ntraining:\n" +
                                         training + "policies: [fsdp]\n",
                                     "t.yaml")
        .points.at(0)
        .setup.training.impl.rotary;
  };
  using R = models::Implementation::Rotary;
  CHECK(rotary("llama3.1-8b", "  framework: torchtitan\n") == R::Complex);    // ComplexRoPE
  CHECK(rotary("qwen3-8b", "  framework: torchtitan\n") == R::CosSin);        // CosSinRoPE
  CHECK(rotary("gpt-oss-20b", "  framework: torchtitan\n") == R::CosSin);
  CHECK(rotary("llama3.1-8b", "  framework: pytorch\n") == R::CosSin);        // Hugging Face's rotate_half
  CHECK(rotary("llama3.1-8b", "  framework: torchtitan\n  rotary: cos_sin\n") == R::CosSin);
  CHECK(rotary("llama3.1-8b", "  rotary: complex\n") == R::Complex);
  CHECK_THROWS_WITH(rotary("llama3.1-8b", "  rotary: real\n"), Contains("t.yaml:4"));
}

TEST_CASE("kernel lists: Qwen2.5's q, k and v biases each reduce their gradient, no other Linear does") {
  const auto m = models::preset("qwen2.5-7b");  // hidden 3584, 28 heads, 4 KV heads of 128
  models::TrainingShape shape;
  shape.micro_batch = 1;
  shape.seq_len = 1024;  // T = 1024 tokens
  const auto block = *models::fsdp_units(m, models::WrapPolicy::Block, shape)[1].kernels;
  // The bias gradient sums the bf16 output gradient over the tokens: T x out x 2 bytes read.
  CHECK(find(block.backward, "attn.q bias grad").bytes == Approx(2.0 * 1024 * 3584));
  CHECK(find(block.backward, "attn.k bias grad").bytes == Approx(2.0 * 1024 * 512));
  CHECK(find(block.backward, "attn.v bias grad").bytes == Approx(2.0 * 1024 * 512));
  auto biases = std::count_if(block.backward.begin(), block.backward.end(), [](const models::Kernel& k) {
    return k.op.find("bias grad") != std::string::npos;
  });
  CHECK(biases == 3);
}

TEST_CASE("kernel lists: a sliding window bounds the keys each query attends, block by block") {
  auto m = models::preset("mistral-7b-v0.1");  // every block within 4096 tokens; 32 heads of 128
  models::TrainingShape shape;
  shape.micro_batch = 1;
  shape.seq_len = 8192;
  auto attention_of = [&](int unit) {
    return find(models::fsdp_units(m, models::WrapPolicy::Block, shape)[unit].kernels->forward, "attention");
  };
  // 4 x 32 x 8192 x 128 x (4096 - 4096^2 / 16384) FLOPs: 3/4 of the causal 8192's 2 x 32 x 8192^2 x 128.
  CHECK(attention_of(1).window == 4096);
  CHECK(attention_of(1).flops() == Approx(4.0 * 32 * 8192 * 128 * 3072));
  CHECK(attention_of(1).flops() == Approx(0.75 * 2.0 * 32 * 8192.0 * 8192 * 128));
  // The block's attention FLOPs (on its out projection's unit) count the same keys.
  const auto units = models::fsdp_units(m, models::WrapPolicy::Size, shape);
  const auto& o = units[1 + 1 + 3];  // root, wte, then layer 0's q, k, v, o
  CHECK(o.name == "layers.0.attn.o");
  CHECK(o.forward_flops == Approx(2.0 * 8192 * 4096 * 4096 + 4.0 * 8192 * 3072 * 4096));
  // Gemma 2's pattern: every second block attends fully.
  m.full_attention_every = 2;
  CHECK(attention_of(1).window == 4096);  // block 0
  CHECK(attention_of(2).window == 0);     // block 1
  CHECK(attention_of(2).flops() == Approx(2.0 * 32 * 8192.0 * 8192 * 128));
  // The math path computes every score and masks them: no window.
  shape.impl.attention = models::AttentionKernel::Math;
  CHECK(attention_of(1).window == 0);
}

TEST_CASE("kernel lists: Gemma's norms after attention and MLP, and its capped logits") {
  const auto m = models::preset("gemma2-2b");  // hidden 2304, vocab 256000, tied
  models::TrainingShape shape;
  shape.micro_batch = 1;
  shape.seq_len = 1024;  // T = 1024 tokens
  auto lists = [&](int unit) { return *models::fsdp_units(m, models::WrapPolicy::Block, shape)[unit].kernels; };
  // Eager: each post norm is an RMSNorm op by op, 8 kernels forward, over T x 2304 elements.
  const auto block = lists(1);
  CHECK(count(block.forward, "post_attention_norm") == 8);
  CHECK(count(block.forward, "post_mlp_norm") == 8);
  CHECK(find(block.forward, "post_mlp_norm to fp32").bytes == Approx(6.0 * 1024 * 2304));
  // The cap on the bf16 logits, T x 256000: division, tanh, product, each reading and writing 2 bytes.
  const double TV = 1024.0 * 256000;
  const auto root = lists(0);
  CHECK(count(root.forward, "softcap") == 3);
  CHECK(find(root.forward, "softcap tanh").bytes == Approx(4 * TV));
  CHECK(find(root.backward, "softcap tanh bwd").bytes == Approx(6 * TV));
  // Compiled: one kernel each way; with the loss compiled too, inside the loss's kernel.
  shape.impl.compiled = true;
  CHECK(count(lists(0).forward, "softcap") == 1);
  CHECK(count(lists(1).forward, "post_mlp_norm") == 1);
  shape.impl.compiled_loss = true;
  CHECK(count(lists(0).forward, "softcap") == 0);
  // The eager cap keeps its tanh's output, T x V bf16, for the backward; the compiled loss does not.
  shape.impl = {};
  const double eager = models::fsdp_units(m, models::WrapPolicy::Block, shape)[0].activation_bytes;
  auto uncapped = m;
  uncapped.logit_softcap = false;
  CHECK(eager - models::fsdp_units(uncapped, models::WrapPolicy::Block, shape)[0].activation_bytes == Approx(2 * TV));
}

TEST_CASE("kernel lists: a Linear's three GEMMs with their real shapes") {
  const auto m = models::preset("mpt-1b");  // hidden 2048, 16 heads, ffn 8192, vocab 50368
  models::TrainingShape shape;
  shape.micro_batch = 2;
  shape.seq_len = 1024;  // T = 2048 tokens
  const auto units = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  const auto& block = *units[1].kernels;
  const auto fwd = find(block.forward, "attn.qkv"), dgrad = find(block.backward, "attn.qkv dgrad"),
             wgrad = find(block.backward, "attn.qkv wgrad");
  CHECK(fwd.m == 2048);
  CHECK(fwd.n == 3 * 2048);
  CHECK(fwd.k == 2048);
  CHECK(dgrad.m == 2048);
  CHECK(dgrad.n == 2048);
  CHECK(dgrad.k == 3 * 2048);
  CHECK(wgrad.m == 3 * 2048);
  CHECK(wgrad.n == 2048);
  CHECK(wgrad.k == 2048);
  const auto attn = find(block.forward, "attention");
  CHECK(attn.batch_heads == 2 * 16);
  CHECK(attn.seq == 1024);
  CHECK(attn.head_dim == 128);
  CHECK(attn.causal);
  // The GELU reads and writes T x ffn bf16 elements: 2 * 2 * 2048 * 8192 bytes.
  CHECK(find(block.forward, "gelu").bytes == Approx(2.0 * 2 * 2048 * 8192));
  // The root: the head's GEMM over the vocabulary and the eager fp32 cross-entropy's first pass
  // (logits bf16 in, fp32 out: 6 bytes per logit).
  const auto& root = *units[0].kernels;
  CHECK(find(root.forward, "lm_head").n == 50368);
  CHECK(find(root.forward, "logits to fp32").bytes == Approx(6.0 * 2048 * 50368));
  // Every block shares one list: built once per model, not per unit.
  CHECK(units[1].kernels == units[7].kernels);
}

TEST_CASE("kernel lists: the q/k/v split, the Triton dQ accumulator, metrics on the logits, torchtitan's units") {
  const auto m = models::preset("mpt-1b");  // hidden 2048, fused q/k/v, vocab 50368
  models::TrainingShape shape;
  shape.micro_batch = 2;
  shape.seq_len = 1024;  // T = 2048 tokens, bf16
  auto bytes_of = [](const std::vector<models::Kernel>& list, const std::string& op) {
    double b = 0;
    int n = 0;
    for (const auto& k : list)
      if (k.op == op) b += k.bytes, ++n;
    return std::make_pair(b, n);
  };
  auto units = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  // The split's backward concatenates dq, dk, dv (T x 3h bf16) into the fused Linear's gradient:
  // read and write 2 * 2048 * 6144 * 2 bytes.
  CHECK(bytes_of(units[1].kernels->backward, "attn.qkv split bwd").first == Approx(2.0 * 2 * 2048 * 6144));
  CHECK(bytes_of(units[1].kernels->forward, "attn.qkv split bwd").second == 0);
  // flash2 has no fp32 dQ accumulator to zero; the Triton kernel zeroes T x h fp32 (4 bytes each).
  CHECK(bytes_of(units[1].kernels->backward, "attention bwd dQ zero").second == 0);
  shape.impl.attention = models::AttentionKernel::FlashTriton;
  units = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  CHECK(bytes_of(units[1].kernels->backward, "attention bwd dQ zero").first == Approx(4.0 * 2048 * 2048));
  // Two metrics on the logits (LLM Foundry's cross-entropy and perplexity): each a log_softmax
  // that reads and writes the T x V bf16 logits, after backward.
  CHECK(bytes_of(units[0].kernels->backward, "metric log_softmax").second == 0);
  shape.impl.logit_metrics = 2;
  units = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  const auto metrics = bytes_of(units[0].kernels->backward, "metric log_softmax");
  CHECK(metrics.second == 2);
  CHECK(metrics.first == Approx(2 * 2.0 * 2 * 2048 * 50368));
  // A compiled model with its loss left eager (torchtitan before Apr 2025) still casts the logits
  // to fp32 (6 bytes a logit); the compiled loss is one pass over the bf16 logits and one back
  // (read the logits, write their gradient: 4 bytes a logit).
  shape.impl.logit_metrics = 0;
  shape.impl.compiled = true;
  units = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  CHECK(bytes_of(units[0].kernels->forward, "logits to fp32").first == Approx(6.0 * 2048 * 50368));
  CHECK(bytes_of(units[0].kernels->forward, "cross_entropy").second == 0);
  shape.impl.compiled_loss = true;
  units = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  CHECK(bytes_of(units[0].kernels->forward, "logits to fp32").second == 0);
  CHECK(bytes_of(units[0].kernels->forward, "cross_entropy").first == Approx(2.0 * 2048 * 50368));
  CHECK(bytes_of(units[0].kernels->backward, "cross_entropy bwd").first == Approx(4.0 * 2048 * 50368));
  shape.impl.compiled = false;
  shape.impl.compiled_loss = false;
  // F.cross_entropy on the bf16 logits, no cast: log_softmax reads and writes 2 bytes a logit each
  // way (4), its backward reads the gradient and the output and writes the logits' gradient (6).
  shape.impl.cross_entropy = models::Implementation::CrossEntropy::Bf16;
  units = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  CHECK(bytes_of(units[0].kernels->forward, "logits to fp32").second == 0);
  CHECK(bytes_of(units[0].kernels->forward, "log_softmax").first == Approx(4.0 * 2048 * 50368));
  CHECK(bytes_of(units[0].kernels->backward, "log_softmax bwd").first == Approx(6.0 * 2048 * 50368));
  CHECK(bytes_of(units[0].kernels->backward, "logits grad to bf16").second == 0);
  shape.impl.cross_entropy = models::Implementation::CrossEntropy::Fp32;
  // torchtitan's layout has kernel lists too: the embedding, each block, the norm and head.
  models::TrainingShape tt;
  tt.seq_len = 1024;
  const auto llama = models::fsdp_units(models::preset("llama3.1-8b"), models::WrapPolicy::Torchtitan, tt);
  REQUIRE(llama.size() == 32 + 2);
  for (const auto& u : llama) CHECK(u.kernels != nullptr);
  CHECK(bytes_of(llama[0].kernels->forward, "embedding").second == 1);
  CHECK(std::any_of(llama.back().kernels->forward.begin(), llama.back().kernels->forward.end(),
                    [](const models::Kernel& k) { return k.op == "lm_head" && k.n == 128256; }));
  CHECK(llama[1].kernels == llama[32].kernels);
}

TEST_CASE("FSDP1 concatenates a unit's parameter gradients into its flat gradient, FSDP2 does not") {
  auto s = scenarios::parse_scenario(
      "model: mpt-1b\n"
      "cluster: {preset: dgx-a100-ib200, nodes: 1, gpu: a100-40gb}\n"
      "training: {fsdp: 1, micro_batch: 2, seq_len: 1024, param_dtype: bf16, reduce_dtype: bf16}\n"
      "policies: [fsdp]\n",
      "fsdp1.yaml");
  const auto& setup = s.points.at(0).setup;
  const auto& gpu = setup.cluster.gpu;
  const auto& block = setup.units[1];
  const auto own = sim::unit_compute(block, gpu, sim::Dtype::BF16, false, setup.training.impl.attention,
                                     sim::host_cost(setup).kernel_issue_s);
  const auto with_fsdp = sim::unit_compute(setup, 1);
  // SplitWithSizesBackward: read and write the unit's parameters in bf16, one kernel.
  CHECK(with_fsdp.backward_seconds - own.backward_seconds ==
        Approx(sim::memory_kernel_seconds(2.0 * 2 * double(block.params), gpu)).epsilon(1e-12));
  CHECK(with_fsdp.backward_kernels == own.backward_kernels + 1);
  CHECK(with_fsdp.forward_seconds == own.forward_seconds);
}

TEST_CASE("rms_norm: fused, PyTorch's one kernel each way replaces the reference's ops, and keeps less") {
  const auto m = models::preset("qwen3-8b");  // hidden 4096, 32 heads and 8 KV heads of 128
  models::TrainingShape shape;
  shape.micro_batch = 1;
  shape.seq_len = 1024;  // T = 1024 tokens
  const auto reference = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  shape.impl.fused_rms_norm = true;
  const auto fused = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  const auto& block = *fused[1].kernels;
  // Forward: x (bf16) in, y out, a fp32 rstd for each of the T rows: 2 x 2 x 1024 x 4096 + 4 x 1024.
  CHECK(count(block.forward, "ln_1") == 1);
  CHECK(find(block.forward, "ln_1").bytes == Approx(4.0 * 1024 * 4096 + 4.0 * 1024));
  // Backward: dy and x in, dx out, the rows' rstd: 3 x 2 x 1024 x 4096 + 4 x 1024.
  CHECK(count(block.backward, "ln_1") == 1);
  CHECK(find(block.backward, "ln_1 bwd").bytes == Approx(6.0 * 1024 * 4096 + 4.0 * 1024));
  // q's per-head norm too: T x 32 rows of 128.
  CHECK(count(block.forward, "q_norm") == 1);
  CHECK(find(block.forward, "q_norm").bytes == Approx(4.0 * 1024 * 4096 + 4.0 * 1024 * 32));
  CHECK(count(reference[1].kernels->forward, "ln_1") == 8);  // the reference's ops
  // What the norms keep for backward: the bf16 input and a fp32 rstd a row (2 bytes an element and 4 a
  // row), where the reference keeps its fp32 input and its output (4 + 2 x 2 = 8 bytes an element):
  // over the block's two norms of 4096 a token (one row each) and the q and k norms (4096 and 1024
  // wide, 32 and 8 rows a token), at T = 1024.
  const double widths = 4096.0 + 4096 + 4096 + 1024, rows = 1 + 1 + 32 + 8;
  CHECK(reference[1].activation_bytes - fused[1].activation_bytes ==
        Approx((8.0 - 2.0) * widths * 1024 - 4.0 * rows * 1024));
  // Compiled blocks fuse their norms either way: the option changes nothing there.
  shape.impl.compiled = true;
  const auto compiled_fused = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  shape.impl.fused_rms_norm = false;
  const auto compiled_reference = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  CHECK(compiled_fused[1].activation_bytes == compiled_reference[1].activation_bytes);
  CHECK(compiled_fused[1].kernels->forward.size() == compiled_reference[1].kernels->forward.size());
}

TEST_CASE("loss_chunks: the head's GEMMs and loss run slice by slice, the weight's gradient summed over them") {
  // MPT-1B (hidden 2048, vocab 50368; the root unit holds the head), 2 x 1024 tokens.
  const auto m = models::preset("mpt-1b");
  models::TrainingShape shape;
  shape.micro_batch = 2;
  shape.seq_len = 1024;  // T = 2048 tokens
  shape.impl.loss_chunks = 8;
  const auto units = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  const auto& root = *units[0].kernels;
  // Eight slices of 256 tokens: eight forward GEMMs of m = 256, each with its own loss kernels.
  CHECK(count(root.forward, "lm_head") == 8);
  CHECK(find(root.forward, "lm_head").m == 256);
  CHECK(find(root.backward, "lm_head wgrad").k == 256);
  CHECK(count(root.forward, "logits to fp32") == 8);
  CHECK(find(root.forward, "logits to fp32").bytes == Approx(6.0 * 256 * 50368));
  // Seven sums of the gathered bf16 weight's gradient (read two, write one), eight slices of the hidden
  // states' gradient into the fp32 accumulator (bf16 in, fp32 out), one cast of it back.
  CHECK(count(root.backward, "lm_head grad accumulate") == 7);
  CHECK(find(root.backward, "lm_head grad accumulate").bytes == Approx(3.0 * 2 * 50368 * 2048));
  CHECK(count(root.backward, "hidden grad accumulate") == 8);
  CHECK(find(root.backward, "hidden grad accumulate").bytes == Approx(6.0 * 256 * 2048));
  CHECK(find(root.backward, "hidden grad to bf16").bytes == Approx(6.0 * 2048 * 2048));
  // A micro-batch of two sequences: torch.chunk along the sequence is strided, so the slices are copied.
  CHECK(find(root.forward, "loss slices contiguous").bytes == Approx(2.0 * 2 * 2048 * 2048));
  // The same GEMM FLOPs as one slice.
  shape.impl.loss_chunks = 1;
  const auto one = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  CHECK(find(one[0].kernels->forward, "lm_head").m == 2048);
  CHECK(count(one[0].kernels->backward, "lm_head grad accumulate") == 0);
}
