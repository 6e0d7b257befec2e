// What activation checkpointing runs again in a unit's backward (models/kernel_list.cpp): whole
// blocks, PyTorch >= 2.1's early stop, a compiled block's partitioner, and torchtitan's op-level
// policy. Numbers by hand from the model's dimensions (docs/compute-model.md, "The kernels of a unit").
#include "kernel_list_testing.hpp"
#include "models/kernel_list.hpp"
#include "models/model.hpp"
#include "sim/compute.hpp"
#include "sim/kernel_profile.hpp"
#include "topologies/cluster.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace tagcsim;
using doctest::Approx;
using test::find;
const auto count = test::count_prefix;

TEST_CASE("under activation checkpointing the backward runs the forward's kernels again") {
  const auto m = models::preset("llama2-7b");
  models::TrainingShape shape;
  shape.seq_len = 4096;
  const auto plain = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  shape.activation_checkpointing = true;
  shape.impl.checkpoint_early_stop = false;  // reentrant, or PyTorch <= 2.0: the whole block again
  const auto ckpt = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  const auto& f = ckpt[3].kernels->forward;
  const auto& b = ckpt[3].kernels->backward;
  REQUIRE(b.size() == f.size() + plain[3].kernels->backward.size());
  for (std::size_t i = 0; i < f.size(); ++i) {
    CAPTURE(f[i].op);
    CHECK(b[i].op == f[i].op);
    CHECK(b[i].pass == models::Pass::Recompute);
    CHECK(b[i].flops() == f[i].flops());
    CHECK(b[i].bytes == f[i].bytes);
  }
  CHECK(ckpt[3].kernels->recomputes);
  CHECK(!plain[3].kernels->recomputes);
  // In time: the checkpointed backward is the plain backward plus the forward, exactly.
  const auto gpu = topologies::device("a100-80gb");
  const auto cp = sim::unit_compute(ckpt[3], gpu, sim::Dtype::BF16);
  const auto pl = sim::unit_compute(plain[3], gpu, sim::Dtype::BF16);
  CHECK(cp.backward_seconds == Approx(pl.backward_seconds + pl.forward_seconds).epsilon(1e-12));
  CHECK(cp.backward_kernels == pl.backward_kernels + pl.forward_kernels);
  // PyTorch >= 2.1's early stop: the recompute ends at the down projection's saved input, so the
  // down GEMM and the residual after it run once. The difference is that piece's forward, which the
  // size policy times as a unit of its own.
  shape.impl.checkpoint_early_stop = true;
  const auto early = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  const auto& eb = early[3].kernels->backward;
  REQUIRE(eb.size() == f.size() - 2 + plain[3].kernels->backward.size());
  CHECK(eb[f.size() - 3].op == f[f.size() - 3].op);
  CHECK(eb[f.size() - 3].pass == models::Pass::Recompute);
  CHECK(eb[f.size() - 2].pass == models::Pass::Backward);
  CHECK(f[f.size() - 2].op == "mlp.down");
  shape.activation_checkpointing = false;
  const auto by_linear = models::fsdp_units(m, models::WrapPolicy::Size, shape);
  const auto down = std::find_if(by_linear.begin(), by_linear.end(), [](const models::FsdpUnit& u) {
    return u.layer == 2 && u.name.find("mlp.down") != std::string::npos;
  });
  REQUIRE(down != by_linear.end());
  const auto es = sim::unit_compute(early[3], gpu, sim::Dtype::BF16);
  const auto down_fwd = sim::unit_compute(*down, gpu, sim::Dtype::BF16).forward_seconds;
  CHECK(down_fwd > 0);
  CHECK(cp.backward_seconds - es.backward_seconds == Approx(down_fwd).epsilon(1e-9));
  shape.activation_checkpointing = true;
  // Half the blocks under selective checkpointing: every second one recomputes.
  shape.impl.checkpoint_fraction = 0.5;
  const auto half = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  CHECK(!half[1].kernels->recomputes);  // block 0
  CHECK(half[2].kernels->recomputes);   // block 1
  CHECK(!half[3].kernels->recomputes);
}

TEST_CASE("a compiled checkpointed block re-runs only what its backward reads: never the down projection") {
  // AOTAutograd's partitioner copies a checkpointed forward node into the backward graph only if a
  // gradient needs it; the down projection's output feeds the residual add alone. So a compiled
  // block stops where eager early stop does, even with early_stop off (torchtitan's default of 2025).
  const auto m = models::preset("llama2-7b");
  models::TrainingShape shape;
  shape.seq_len = 4096;
  shape.activation_checkpointing = true;
  shape.impl.compiled = true;
  shape.impl.checkpoint_early_stop = false;
  const auto off = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  shape.impl.checkpoint_early_stop = true;
  const auto on = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  const auto& f = off[3].kernels->forward;
  const auto& b = off[3].kernels->backward;
  REQUIRE(b.size() == on[3].kernels->backward.size());
  for (std::size_t i = 0; i < b.size(); ++i) CHECK(b[i].op == on[3].kernels->backward[i].op);
  // The re-run is the forward up to the down projection: its GEMM is the first backward kernel.
  const auto down = std::find_if(f.begin(), f.end(), [](const models::Kernel& k) { return k.op == "mlp.down"; });
  REQUIRE(down != f.end());
  const auto rerun = std::size_t(down - f.begin());
  for (std::size_t i = 0; i < rerun; ++i) CHECK(b[i].pass == models::Pass::Recompute);
  CHECK(b[rerun].pass == models::Pass::Backward);
  CHECK(std::count_if(b.begin(), b.end(), [](const models::Kernel& k) { return k.op == "mlp.down"; }) == 0);
  // Eager with early_stop off re-runs it.
  shape.impl.compiled = false;
  shape.impl.checkpoint_early_stop = false;
  const auto eager = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  const auto& eb = eager[3].kernels->backward;
  CHECK(std::count_if(eb.begin(), eb.end(), [](const models::Kernel& k) {
          return k.op == "mlp.down" && k.pass == models::Pass::Recompute;
        }) == 1);
}

namespace {

// torchtitan's per-op checkpointing over 2 x 8192 tokens, every block re-run in full (no early stop).
models::TrainingShape selective_op_2x8192() {
  models::TrainingShape shape;
  shape.micro_batch = 2;
  shape.seq_len = 8192;
  shape.activation_checkpointing = true;
  shape.impl.selective_op = true;
  shape.impl.checkpoint_early_stop = false;
  return shape;
}

}  // namespace

TEST_CASE("selective_op: the backward re-runs the even matmuls and the element-wise work, not attention") {
  // torchtitan's op-level policy on Llama 3.1 8B (q, k, v, attention, out, gate, up, down): it keeps
  // the 1st, 3rd, 5th and 7th matmul of a block (q, v, gate, down) and the attention kernel's output,
  // so every block re-runs k, out and up, with the norms, rotary, silu, mul and residual around them.
  const auto m = models::preset("llama3.1-8b");
  auto shape = selective_op_2x8192();
  const auto units = models::fsdp_units(m, models::WrapPolicy::Torchtitan, shape);
  for (int block : {1, 2}) {  // every block, not every second one
    CAPTURE(block);
    const auto& u = *units[std::size_t(block)].kernels;
    REQUIRE(u.recomputes);
    std::vector<std::string> gemms;
    int attention = 0, element_wise = 0, element_wise_fwd = 0;
    for (const auto& k : u.backward) {
      if (k.pass != models::Pass::Recompute) continue;
      if (k.kind == models::KernelKind::Gemm) gemms.push_back(k.op);
      attention += k.kind == models::KernelKind::Attention;
      element_wise += k.kind == models::KernelKind::Memory;
    }
    for (const auto& k : u.forward) element_wise_fwd += k.kind == models::KernelKind::Memory;
    CHECK(gemms == std::vector<std::string>{"attn.k", "attn.out", "mlp.up"});
    CHECK(attention == 0);
    CHECK(element_wise == element_wise_fwd);
  }
  // In FLOPs: T (2 h kv + 2 h h + 2 h f) re-run, per token 2 * 4096 * (1024 + 4096 + 14336).
  shape.activation_checkpointing = false;
  shape.impl.selective_op = false;
  const auto plain = models::fsdp_units(m, models::WrapPolicy::Torchtitan, shape);
  const double T = 2 * 8192;
  CHECK(units[1].backward_flops - plain[1].backward_flops == Approx(T * 2 * 4096.0 * (1024 + 4096 + 14336)));
  // With float8 Linears the policy also keeps aten.max (the amax reductions); their casts run again,
  // and so does every matmul: torch._scaled_mm is not aten.mm, so the save list keeps none of the
  // seven (torchtitan's _save_list names aten.mm only, from 2024 to its 2025-08 rewrite).
  shape.activation_checkpointing = true;
  shape.impl.selective_op = true;
  shape.impl.float8_linears = true;
  const auto fp8 = models::fsdp_units(m, models::WrapPolicy::Torchtitan, shape);
  int amax = 0, casts = 0, fp8_gemms = 0;
  for (const auto& k : fp8[1].kernels->backward) {
    if (k.pass != models::Pass::Recompute) continue;
    amax += k.op.find(" fp8 amax ") != std::string::npos;
    casts += k.op.find(" fp8 cast ") != std::string::npos;
    fp8_gemms += k.kind == models::KernelKind::Gemm && k.fp8;
  }
  CHECK(amax == 0);
  CHECK(casts > 0);
  CHECK(fp8_gemms == 7);
}

TEST_CASE("selective_op_recomputes_attention: the backward re-runs the attention forward too, once a block") {
  // torchtitan before b39377f with cuDNN's SDPA (Blackwell): the policy's save list does not name
  // the kernel's op, so it is re-run like the element-wise work. Llama 3.1 8B, 2 x 8192 tokens:
  // the attention forward is 4 * (2 x 32) * 8192^2 * 128 / 2 = 1.0995e12 FLOPs (causal).
  const auto m = models::preset("llama3.1-8b");
  auto shape = selective_op_2x8192();
  const auto kept = models::fsdp_units(m, models::WrapPolicy::Torchtitan, shape);
  shape.impl.selective_op_recomputes_attention = true;
  const auto rerun = models::fsdp_units(m, models::WrapPolicy::Torchtitan, shape);
  for (int block : {1, 2}) {
    CAPTURE(block);
    std::vector<const models::Kernel*> attention;
    for (const auto& k : rerun[std::size_t(block)].kernels->backward)
      if (k.pass == models::Pass::Recompute && k.kind == models::KernelKind::Attention) attention.push_back(&k);
    REQUIRE(attention.size() == 1);
    CHECK(!attention[0]->backward);
    CHECK(attention[0]->flops() == Approx(4.0 * 64 * 8192.0 * 8192 * 128 / 2));
    // The list gains that kernel and nothing else; the unit's FLOPs gain its FLOPs.
    CHECK(rerun[std::size_t(block)].kernels->backward.size() == kept[std::size_t(block)].kernels->backward.size() + 1);
    CHECK(rerun[std::size_t(block)].backward_flops - kept[std::size_t(block)].backward_flops ==
          Approx(attention[0]->flops()));
  }
}
