// Validation against published FSDP throughput (scenarios/validation.hpp, docs/validation.md):
// every shipped row, its scenario and its measurement from validation/data, the LLM Foundry
// mapping (the fit and leave-one-source-out: test_validation_fit.cpp).
#include "common/input.hpp"
#include "models/model.hpp"
#include "scenarios/report.hpp"
#include "scenarios/scenario.hpp"
#include "scenarios/validation.hpp"
#include "sim/compute.hpp"
#include "sim/kernel_profile.hpp"
#include "topologies/cluster.hpp"
#include "validation_testing.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

using namespace tagcsim;
using doctest::Approx;
using doctest::Contains;

using test::row;
using test::rows;
using test::setup_of;

TEST_CASE("every shipped FSDP row has a scenario and takes its measurement from validation/data") {
  // fms-fsdp and torchtitan 31, torchtitan's 2D (FSDP + TP) 5 + 8 (its June 2025 async TP
  // benchmark), 3D (FSDP + TP + PP) 3 and FSDP + CP 3, torchao's H100 2 and B200 2, H200 2, LLM
  // Foundry's A100 40GB table 78, A100 80GB 61, H100 large-scale 18, H100 8-64 GPUs 52; KempnerForge's
  // H200 benchmark 14; AWS's torchtitan on p5 2; OLMo-core's H100 table 10; our own H200 measurements 9;
  // Lambda's Qwen3-30B-A3B on B200 3; torchtitan#1196's Llama 3 8B on B200 2; pith-train#79's torchtitan
  // Qwen3-30B-A3B on B200 1; torchtitan#1690's Qwen3-32B on H100 8; torchtitan#1789's DeepSeek-V3 16B
  // on H100 1; torchtitan#2687's gpt-oss-20b on H100 2; torchtitan#2389's gpt-oss-20b on B200 2; NeMo
  // AutoModel's Llama 3.1 70B on 64 H100 1; lightning-thunder#940's, #997's and #1528's Llama 2 7B and Llama 3 8B
  // on 8 H100 8; fms-fsdp's first README table (Feb 2024) 5; LLM Foundry's May 2023 A100 80GB table 84 (its
  // two 70b rows are S39's); AWS's SageMaker blog of torchtitan's Llama 3 8B on 32 H100 4; the H100 column of
  // fms-fsdp's first table 3 (its 7B row is S37's); a blog's torchtitan runs on 8 GB200 6; Modalities'
  // sweep on Leonardo 33; torchtitan#3105's runs on 4 GB200 6; the torchtitan paper's Tables 1-4 10; the OLMo 3
  // report's pretraining and midtraining rows 3; VectorLM's reference throughput 9; torchtitan#3914's and #3462's
  // GB200 rows 1 and 1; KempnerForge's weak-scaling and 175B runs 13; torchtitan#355's Llama 3 8B on 8 A100 2,
  // #822's and #808's on 8 H100 2 and 2; litgpt's TinyLlama under FSDP1 on 8 A100 40GB 1; ATorch's Llama 2 7B
  // under FSDP1 with autocast on 8-64 A100 80GB 4; torchtitan#165's Llama 2 7B shape on 8 H100 6; #812's,
  // #833's and #996's Llama 3 8B on the same H100s 2, 1 and 1.
  REQUIRE(rows().size() ==
          56 + 78 + 61 + 18 + 52 + 14 + 2 + 10 + 9 + 3 + 2 + 1 + 8 + 1 + 2 + 2 + 1 + 8 + 5 + 84 + 4 + 3 + 6 + 33 + 6 + 10 + 3 +
              9 + 1 + 1 + 13 + 2 + 2 + 2 + 1 + 4 + 6 + 2 + 1 + 1);
  std::set<std::string> ids, sources;
  int counted = 0;
  for (const auto& r : rows()) {
    CAPTURE(r.id);
    CHECK(ids.insert(r.id).second);
    sources.insert(r.source);
    counted += r.counted;
    CHECK(r.measured_tps > 0);
    CHECK(r.family != "roofline");  // every row's GPU has a kernel profile
  }
  // float8 rows too; not the 52 H100 rows whose attention kernel has no H100 measurement, nor the four
  // context-parallel rows (torchtitan's three, NeMo AutoModel's one), nor our two host-bound small-model rows, nor KempnerForge's eight (and its later thirteen) that cross
  // nodes whose NIC count is not published, nor torchao's two power-limited B200 rows; Lambda's three,
  // torchtitan#1196's two, pith-train#79's one, torchtitan#1690's eight, torchtitan#1789's one and
  // torchtitan#2687's two, torchtitan#2389's two, lightning-thunder's eight, fms-fsdp's Feb 2024 five and three
  // H100 rows, the SageMaker blog's four, the GB200 blog's six, Modalities' 33, torchtitan#3105's six, the
  // torchtitan paper's ten, the OLMo 3 report's three, VectorLM's nine, torchtitan#3914's and #3462's one each, and
  // torchtitan#355's, #822's and #808's two each, litgpt's one, ATorch's four, torchtitan#165's six and
  // #812's, #833's and #996's four are.
  CHECK(counted == 210 + 6 + 7 + 2 + 10 - 2 + 3 + 2 + 1 + 8 + 1 + 2 + 2 + 8 + 5 + 84 + 4 + 3 + 6 + 33 + 6 + 10 + 3 + 9 + 1 + 1 +
                       2 + 2 + 2 + 1 + 4 + 6 + 2 + 1 + 1);
  CHECK(sources == std::set<std::string>{"S31", "S32", "S35", "S36", "S37", "S38", "S39", "S47", "S59", "S60", "S61",
                                         "S62", "S63", "S66", "S67", "S68", "S70", "S72", "S73", "S74", "S75", "S76",
                                         "S77", "S78", "S79", "S80", "S84", "S85", "S86", "S87", "S88", "S89", "S90", "S91", "S92",
                                         "S93", "S95", "S96", "S98", "S102", "S103", "S104", "S105", "S107", "S112", "S113", "S114", "S115"});
  // ATorch (S107): FSDP1 with no mixed-precision policy under bf16 autocast, tokens/s derived from its hardware
  // TFLOPs: 204.67e12 / 61,184,409,600 FLOP a token.
  {
    const auto s = setup_of("fsdp-atorch-llama2-7b-a100-80gb-8gpu");
    CHECK(s.training.api == sim::Api::Fsdp1);
    CHECK(s.training.autocast == sim::Dtype::BF16);
    CHECK(s.training.param_dtype == sim::Dtype::FP32);
    CHECK(row("fsdp-atorch-llama2-7b-a100-80gb-8gpu").measured_tps == Approx(3345));
    CHECK(row("fsdp-atorch-llama2-7b-a100-80gb-64gpu").counted);
  }
  // VectorLM (S93): four micro-batches a step under no_sync(), the median one timed.
  {
    const auto s = setup_of("fsdp-vectorlm-llama3-8b-a100-2gpu-seq4096-mb4");
    CHECK(s.training.grad_accumulation == 4);
    CHECK(s.training.no_sync);
    CHECK(row("fsdp-vectorlm-llama3-8b-a100-2gpu-seq4096-mb4").timed == scenarios::ValidationRow::Timed::no_sync_micro_batch);
    CHECK(row("fsdp-vectorlm-llama3-8b-a100-2gpu-seq4096-mb4").measured_tps == Approx(3091.30));
  }
  // The OLMo 3 report's 32B (S92): HSDP in shard groups of 64 over 1,024 H100 of GCP A3 Mega, one sequence a GPU,
  // OLMo 3's sliding window on three of every four blocks.
  {
    const auto s = setup_of("fsdp-olmo3-32b-h100-1024gpu-pretrain");
    CHECK(s.training.hybrid_shard_gpus == 64);
    CHECK(s.training.grad_accumulation == 1);
    CHECK(s.model.sliding_window == 4096);
    CHECK(row("fsdp-olmo3-32b-h100-1024gpu-pretrain").measured_tps == 1960);
  }
  // The torchtitan paper's 405B (S91): FSDP 4 x TP 8 x PP 16, local batch 32 as 16 micro-batches of 2.
  {
    const auto s = setup_of("fsdp-ttpaper-llama31-405b-h100-512gpu-3d-1f1b-asynctp-compile-float8");
    CHECK(s.training.pipeline_parallel == 16);
    CHECK(s.training.micro_batch == 2);
    CHECK(row("fsdp-ttpaper-llama31-8b-h100-8gpu-fsdp-compile-float8").measured_tps == 9409);
  }
  // torchtitan#3105's runs on 4 GB200 (S90): the configs of 58b034444 (2026-05-27), after ChunkedCELoss became
  // every config's loss (torchtitan#2937): 8 slices of the sequence.
  {
    const auto s = setup_of("fsdp-tt3105-qwen3-32b-gb200-4gpu-eager");
    CHECK(s.training.micro_batch == 2);
    CHECK(s.training.impl.loss_chunks == 8);
    CHECK(s.training.optimizer == sim::Training::Optimizer::Fused);
    CHECK(row("fsdp-tt3105-llama3-8b-gb200-4gpu-compile").measured_tps == 17158);
    CHECK(setup_of("fsdp-gb200blog-qwen3-32b-gb200-8gpu-bs8").training.impl.loss_chunks == 1);  // Dec 2025: one slice
  }
  // Modalities' sweep on Leonardo (S89): 10.876 samples/s of 2,048 tokens over 8 GPUs; timed without the optimizer;
  // the notebook's MFU implies 6,083,321,856 parameters, its LayerNorms with their biases; `bias: false` drops the
  // 65 LayerNorms' biases with the Linears' (65 x 4,096 parameters, 0.004%).
  CHECK(row("fsdp-modalities-6b-leonardo-8gpu-seq2048-mb1").measured_tps == 2784);
  CHECK(row("fsdp-modalities-6b-leonardo-8gpu-seq2048-mb1").timed == scenarios::ValidationRow::Timed::without_optimizer);
  CHECK(row("fsdp-sm-tt-llama3-8b-p5-32gpu").timed == scenarios::ValidationRow::Timed::step);
  CHECK(row("fsdp-modalities-6b-leonardo-8gpu-seq2048-mb1").params == 6083321856.0 - 65 * 4096);
  // The SageMaker blog's runs (S86): torchtitan @ac90c36 (2024-09-03), whose AdamW was foreach and whose compiled
  // runs left the loss eager; float8 all-gather in the last row only.
  {
    const auto s = setup_of("fsdp-sm-tt-llama3-8b-p5-32gpu-compile-float8");
    CHECK(s.training.micro_batch == 1);
    CHECK(s.training.optimizer == sim::Training::Optimizer::Foreach);
    CHECK_FALSE(s.training.impl.compiled_loss);
    CHECK(s.training.impl.float8_linears);
    CHECK_FALSE(s.training.impl.float8_all_gather);
    CHECK(setup_of("fsdp-sm-tt-llama3-8b-p5-32gpu-compile-float8-allgather").training.impl.float8_all_gather);
    CHECK(row("fsdp-sm-tt-llama3-8b-p5-32gpu").measured_tps == 6475);
  }
  // LLM Foundry's May 2023 A100 80GB table (S85): the torch 1.13 image of the A100 40GB table (no checkpoint
  // early stop), Tri Dao's Triton attention, RoCE between nodes; MPT-30B at 8k tokens ran 622 tokens/s/GPU there
  // where the Oct 2023 table's run of the same configuration ran 574.
  CHECK(row("fsdp-lf2305-mpt30b-a100-80gb-8gpu-seq8192-mb1-acT").measured_tps == 622);
  CHECK(row("fsdp-mpt30b-a100-80gb-8gpu-seq8192-mb1-acT").measured_tps == 574);
  {
    const auto s = setup_of("fsdp-lf2305-mpt7b-a100-80gb-8gpu-seq2048-mb32-acT");
    CHECK_FALSE(s.training.impl.checkpoint_early_stop);
    CHECK(s.training.impl.attention == models::AttentionKernel::FlashTriton);
    CHECK(s.training.micro_batch == 32);
    CHECK(s.training.grad_accumulation == 2);
  }
  // fms-fsdp's first table (S84): the 70B as the repository configured it on Feb 20 2024, multi-head
  // (80 x (4 x 8192^2 + 3 x 8192 x 28672 + 2 x 8192) + 2 x 32000 x 8192 + 8192 parameters), and on Feb 21
  // with 8 KV heads, Llama 2 70B's 68,976,648,192; both on AWS p4de (4 x 100 Gb/s EFA a node).
  CHECK(row("fsdp-fms2402-llama2-70b-mha-a100-128gpu-bs6").params == 78371889152.0);
  CHECK(row("fsdp-fms2402-llama2-70b-a100-128gpu-bs6").params == 68976648192.0);
  CHECK(row("fsdp-fms2402-llama2-70b-mha-a100-128gpu-bs6").measured_tps == 338);
  {
    const auto s = setup_of("fsdp-fms2402-llama2-34b-a100-128gpu-bs8");
    CHECK(s.model.kv_heads == 8);
    CHECK(s.training.micro_batch == 8);
    CHECK(s.cluster.nics.count == 4);
    CHECK(s.cluster.gpus() == 128);
  }
  // lightning-thunder#940 (S80): LitGPT's Llama-2-7b-hf, FSDP2 zero2, 1 x 4096 on 8 H100; max allocated 47.45 GB
  // and 40.21 GB printed, in GiB here.
  CHECK(row("fsdp-thunder940-llama2-7b-h100-8gpu-fsdp2-eager").measured_tps == Approx(9325.13));
  CHECK(row("fsdp-thunder940-llama2-7b-h100-8gpu-fsdp2-compile").measured_tps == Approx(11855.92));
  CHECK(row("fsdp-thunder940-llama2-7b-h100-8gpu-fsdp2-compile").published_allocated_gib == Approx(40.21e9 / (1 << 30)).epsilon(1e-3));
  {
    const auto s = setup_of("fsdp-thunder940-llama2-7b-h100-8gpu-fsdp2-compile");
    CHECK(s.training.reshard_after_forward == 0);  // zero2
    CHECK(s.training.master_dtype == sim::Dtype::BF16);
    CHECK(s.training.reduce_dtype == sim::Dtype::BF16);
    CHECK(s.training.impl.compiled);
    CHECK_FALSE(s.training.impl.compiled_loss);
  }
  // lightning-thunder#1528 (S80 too): torchao's float8 under compile, main's rows; 58.65 GB allocated.
  CHECK(row("fsdp-thunder1528-llama3-8b-h100-8gpu-fsdp2-compile-float8").measured_tps == Approx(12404.18));
  CHECK(row("fsdp-thunder1528-llama3-8b-h100-8gpu-fsdp2-compile-float8").published_allocated_gib ==
        Approx(58.65e9 / (1 << 30)).epsilon(1e-3));
  CHECK(setup_of("fsdp-thunder1528-llama2-7b-h100-8gpu-fsdp2-compile-float8").training.impl.float8_linears);
  // NeMo AutoModel (S79): 128 x 8192 tokens in 18.90 s on 64 GPUs; context parallel, so listed only.
  CHECK(row("fsdp-nemo-llama31-70b-h100-64gpu-cp2").measured_tps == Approx(866.77));
  CHECK_FALSE(row("fsdp-nemo-llama31-70b-h100-64gpu-cp2").counted);
  {
    const auto s = setup_of("fsdp-nemo-llama31-70b-h100-64gpu-cp2");
    CHECK(s.training.context_parallel == 2);
    CHECK(s.training.grad_accumulation == 4);
    CHECK_FALSE(s.training.no_sync);
    CHECK(s.training.impl.attention == models::AttentionKernel::Cudnn);
    CHECK(s.cluster.gpus() == 64);
  }
  // torchtitan#2389 (S78): gpt-oss-20b on B200, the main branch's log lines (full checkpointing, none).
  CHECK(row("fsdp-tt2389-gpt-oss-20b-b200-8gpu-full-ac").measured_tps == 10050);
  CHECK(row("fsdp-tt2389-gpt-oss-20b-b200-8gpu-no-ac").published_reserved_gib == Approx(175.60));
  // torchtitan#2687 (S77): gpt-oss-20b, MFU only: tokens/s by torchtitan's own count (31,313,520,000 FLOP a
  // token, 989 TFLOP/s), 0.1650 x 989e12 / 31,313,520,000 = 5,211.
  CHECK(row("fsdp-tt2687-gpt-oss-20b-h100-8gpu-eager").measured_tps == 5211);
  CHECK(row("fsdp-tt2687-gpt-oss-20b-h100-8gpu-eager").published_mfu == Approx(0.165));
  CHECK(row("fsdp-tt2687-gpt-oss-20b-h100-8gpu-compile").measured_tps == 5401);
  // torchtitan#1789 (S76): DeepSeek-V3 16B with expert parallelism, its median log line and max reserved.
  CHECK(row("fsdp-tt1789-deepseek-v3-16b-h100-8gpu-ep8-sac").measured_tps == 11585);
  CHECK(row("fsdp-tt1789-deepseek-v3-16b-h100-8gpu-ep8-sac").published_reserved_gib == Approx(73.32));
  // torchtitan#1690 (S75): Qwen3-32B on H100s of 96 GiB; the table's runs eager, the recommended one compiled.
  CHECK(row("fsdp-tt1690-qwen3-32b-h100-8gpu-bs2-compile").measured_tps == 1874);
  CHECK(row("fsdp-tt1690-qwen3-32b-h100-32gpu-fsdp8-tp4-bs16").published_reserved_gib == Approx(70.20));
  {
    const auto s = setup_of("fsdp-tt1690-qwen3-32b-h100-64gpu-fsdp8-tp8-bs32");
    CHECK(s.training.tensor_parallel == 8);
    CHECK(s.cluster.gpus() == 64);
    CHECK(!s.training.impl.compiled);
    CHECK(s.model.qk_norm);
  }
  // pith-train#79 (S74): the median of the three stable steps it quotes; torchtitan's per-op checkpointing.
  CHECK(row("fsdp-pith79-tt-qwen3-30b-a3b-b200-8gpu-sac").measured_tps == 19520);
  CHECK(row("fsdp-pith79-tt-qwen3-30b-a3b-b200-8gpu-sac").published_reserved_gib == Approx(141.79));
  CHECK(setup_of("fsdp-pith79-tt-qwen3-30b-a3b-b200-8gpu-sac").training.impl.selective_op);
  // KempnerForge (S67): the table's tok/s over its GPUs; one node's rows counted, the others listed.
  CHECK(row("fsdp-kf-7b-h200-4gpu-tp4").measured_tps == Approx(25135.0 / 4).epsilon(1e-4));
  CHECK(row("fsdp-kf-7b-h200-4gpu-tp4").counted);
  CHECK(!row("fsdp-kf-70b-h200-32gpu-tp4-fsdp8").counted);
  CHECK(row("fsdp-kf-13b-h200-8gpu-fsdp8").params == Approx(14.84e9).epsilon(1e-3));  // the report's 14.84B
  // Its weak-scaling and 175B runs (S98): every row crosses nodes, so listed; the batch-1 175B run by its MFU.
  CHECK(row("fsdp-kfws-70b-h200-160gpu-tp4-fsdp40").measured_tps == Approx(85571.0 / 160).epsilon(1e-3));
  CHECK(!row("fsdp-kfws-13b-h200-32gpu-tp4-fsdp8").counted);
  CHECK(row("fsdp-kf175-175b-h200-360gpu-tp4-fsdp90-bs1").measured_tps == Approx(72.9));
  CHECK(setup_of("fsdp-kf175-175b-h200-360gpu-tp4-fsdp90-bs8").cluster.nodes == 90);
  {
    const auto t = setup_of("fsdp-kf-7b-h200-4gpu-tp2-fsdp2");
    CHECK(t.training.impl.tp_plan == models::Implementation::TpPlan::PerLinear);
    CHECK(t.training.master_dtype == sim::Dtype::BF16);
    CHECK(t.training.optimizer == sim::Training::Optimizer::Fused);
    CHECK(t.cluster.intra.group_bandwidth(2, 4) == Approx(150e9));  // a pair of the node's NVLink mesh
  }
  CHECK(row("fsdp-tt2506-llama3-70b-h100-256gpu-2d-compile").measured_tps == Approx(597.3).epsilon(1e-4));
  // AdamW: torchtitan's default turned fused on 2025-02-24 (pytorch/torchtitan#881); its runs before say foreach.
  auto optimizer = [](const std::string& id) { return setup_of(id).training.optimizer; };
  CHECK(optimizer("fsdp-tt-llama31-8b-h100-8gpu-fsdp") == sim::Training::Optimizer::Foreach);        // Dec 2024
  CHECK(optimizer("fsdp-tt2506-llama3-8b-h100-64gpu-2d-compile") == sim::Training::Optimizer::Fused);  // June 2025
  CHECK(optimizer("fsdp-own-llama3-8b-shape-8l-s8192-h200-1gpu") == sim::Training::Optimizer::Foreach);
  // AWS's torchtitan on 4 p5 (S68): tps is per GPU; both runs at local batch 2 (their memory), the
  // second compiled without float8 (its [float8] key was no longer torchtitan's).
  CHECK(row("fsdp-aws-tt-llama31-8b-p5-32gpu").measured_tps == 6785);
  CHECK(row("fsdp-aws-tt-llama31-8b-p5-32gpu-compile").published_reserved_gib == Approx(63.48));
  {
    const auto t = setup_of("fsdp-aws-tt-llama31-8b-p5-32gpu-compile").training;
    CHECK(t.micro_batch == 2);
    CHECK(t.impl.compiled);
    CHECK(!t.impl.float8_linears);
    CHECK(t.optimizer == sim::Training::Optimizer::Fused);
  }
  // OLMo-core's table (S70): tokens/s per device as rounded; one node of 8 by the launch default; the
  // global batch reached by micro-batches, each reduced (FSDP2, no no_sync); the loss compiled only
  // from 2024-11-01; float8 gathered in float8.
  {
    const auto& r = row("fsdp-olmo-1b-h100-8gpu-mb8-compile-float8");
    CHECK(r.measured_tps == 65000);
    CHECK(r.gpus == 8);
    CHECK(r.framework == "olmo-core");
    const auto setup = setup_of(r.id);
    const auto& t = setup.training;
    CHECK(t.micro_batch == 8);
    CHECK(t.grad_accumulation == 1024 / (8 * 8));
    CHECK(!t.no_sync);
    CHECK(t.impl.compiled);
    CHECK(t.impl.compiled_loss);
    CHECK(t.impl.float8_linears);
    CHECK(t.optimizer == sim::Training::Optimizer::Fused);
    CHECK(setup.model.qk_norm);
    CHECK(setup.model.vocab == 100352);
    const auto sep = setup_of("fsdp-olmo-7b-h100-8gpu-compile").training;
    CHECK(sep.grad_accumulation == 1024 / (8 * 2));
    CHECK(!sep.impl.compiled_loss);  // September's table: before 00d34f6
  }
  CHECK(row("fsdp-own-llama3-8b-shape-8l-s8192-h200-1gpu").measured_tps == Approx(24348.0).epsilon(1e-4));
  CHECK(row("fsdp-own-llama3-8b-shape-8l-s8192-h200-1gpu").device == "H200-SXM-141GB");
  CHECK(!row("fsdp-own-llama-small-12l-768-h200-1gpu").counted);
  // Our steps call SDPA without choosing a backend: PyTorch puts cuDNN first on sm90 with cuDNN > 9.15
  // (torch 2.11, cuDNN 9.19 there); torchtitan's own attention asks for flash first on Hopper.
  auto attention = [](const std::string& id) { return setup_of(id).training.impl.attention; };
  CHECK(attention("fsdp-own-llama3-8b-shape-8l-s16384-h200-1gpu") == models::AttentionKernel::Cudnn);
  CHECK(attention("fsdp-own-llama3-8b-shape-8l-s8192-compile-h200-1gpu") == models::AttentionKernel::Cudnn);
  CHECK(attention("fsdp-trainy-llama31-8b-h200-64gpu-compile-float8") == models::AttentionKernel::Flash2);
  // Our steps give both peaks (max reserved, max allocated); torchtitan's logs the reserved only.
  CHECK(row("fsdp-own-llama3-8b-shape-8l-s16384-h200-1gpu").published_reserved_gib == Approx(134.16));
  CHECK(row("fsdp-own-llama3-8b-shape-8l-s16384-h200-1gpu").published_allocated_gib == Approx(116.08));
  CHECK(row("fsdp-tt-llama31-8b-h100-8gpu-fsdp").published_reserved_gib == Approx(82.4));
  CHECK(row("fsdp-tt-llama31-8b-h100-8gpu-fsdp").published_allocated_gib == 0);
  CHECK(!row("fsdp-mpt7b-h100-80gb-8gpu-seq65536-mb1-acT").counted);
  CHECK(row("fsdp-mpt7b-h100-80gb-8gpu-seq65536-mb1-acT").measured_tps == 1956);
  CHECK(row("fsdp-tt-llama3-8b-b200-8gpu-compile").family == "blackwell");
  // Values as the data files give them.
  CHECK(row("fsdp-mpt7b-a100-40gb-8gpu-seq2048-mb12-acT").measured_tps == 3679);
  CHECK(row("fsdp-mpt7b-a100-40gb-8gpu-seq2048-mb12-acT").published_mfu == Approx(0.5092));
  CHECK(row("fsdp-fms-llama2-7b-a100-128gpu-2403").measured_tps == 3700);
  CHECK(row("fsdp-tt-llama31-8b-h100-8gpu-fsdp").seq == 8192);  // "8192 (from the train config)" in the data
  CHECK(row("fsdp-tt-llama31-8b-h100-8gpu-fsdp-compile-float8").counted);
  CHECK(row("fsdp-trainy-llama31-8b-h200-64gpu-compile-float8").gpus == 64);
  CHECK(row("fsdp-trainy-llama31-8b-h200-64gpu-compile-float8").counted);
  CHECK(row("fsdp-ao-llama3-8b-h100-8gpu-compile-float8").measured_tps == 7689.5);
  // No scenario file repeats a measured value: they come from the data by id.
  for (const auto& r : rows())
    if (r.framework != "llm-foundry") CHECK(r.scenario.find("measured_tps") == std::string::npos);
}

TEST_CASE("the LLM Foundry mapping rebuilds the published model and Composer's FSDP setup") {
  const auto& r = row("fsdp-mpt7b-a100-40gb-8gpu-seq2048-mb12-acT");
  CHECK(r.params == 6658859008.0);  // the entry's num_params: learned positions and biases included
  CHECK(r.size_bucket() == "5-10B");
  CHECK(r.seq_bucket() == "2k");
  CHECK(r.gpus_bucket() == "8");
  CHECK(row("fsdp-fms-llama2-7b-h100-96gpu-2403").gpus_bucket() == "64-128");
  CHECK(row("fsdp-mpt1b-h100-80gb-512gpu-seq2048-mb12-acF").gpus_bucket() == "256-512");
  const auto s = scenarios::parse_scenario(r.scenario, r.scenario_file);
  const auto& setup = s.points.at(0).setup;
  CHECK(setup.cluster.gpus() == 8);
  CHECK(setup.cluster.gpu.name == "A100-SXM4-40GB");
  CHECK(setup.cluster.nics.count * setup.cluster.nics.bandwidth == Approx(1600e9 / 8));  // 1600 Gb/s per node
  const auto& t = setup.training;
  CHECK(t.micro_batch == 12);
  CHECK(t.grad_accumulation == 4);
  CHECK(t.seq_len == 2048);
  CHECK(!t.no_sync);
  CHECK(t.reduce_dtype == sim::Dtype::BF16);
  CHECK(t.backward_prefetch == sim::BackwardPrefetch::Post);
  CHECK(t.activation_checkpointing);
  CHECK(t.impl.attention == models::AttentionKernel::FlashTriton);
  CHECK(t.impl.cross_entropy == models::Implementation::CrossEntropy::Fused);
  CHECK(t.impl.logit_metrics == 2);  // Composer evaluates LLM Foundry's cross-entropy and perplexity every micro-batch
  CHECK(setup.model.learned_positions == 2048);
  CHECK(setup.model.bias);
  CHECK(!t.impl.checkpoint_early_stop);  // May 2023: torch 1.13.1, whose checkpoint re-runs the whole block
}

TEST_CASE("the LLM Foundry mapping follows each table: GPU, mixed precision, sharding, attention, prefetch") {
  // A100 80GB, Oct 2023: amp_bf16 with Composer's DEFAULT mixed precision (reduce in fp32), the
  // Triton attention, BACKWARD_POST; the 70b rows carried over from May 2023 are PURE.
  const auto s80 = scenarios::parse_scenario(row("fsdp-mpt7b-a100-80gb-8gpu-seq65536-mb1-acT").scenario, "a80");
  const auto& a80 = s80.points.at(0).setup;
  CHECK(a80.cluster.gpu.name == "A100-SXM4-80GB");
  CHECK(a80.training.reduce_dtype == sim::Dtype::FP32);
  CHECK(a80.training.impl.attention == models::AttentionKernel::FlashTriton);
  CHECK(a80.training.seq_len == 65536);
  CHECK(row("fsdp-mpt7b-a100-80gb-8gpu-seq65536-mb1-acT").seq_bucket() == "64k");
  const auto s70 = scenarios::parse_scenario(row("fsdp-mpt70b-a100-80gb-64gpu-seq2048-mb8-acT").scenario, "a80-70b");
  CHECK(s70.points.at(0).setup.training.reduce_dtype == sim::Dtype::BF16);
  // The PyTorch release decides checkpoint early stop (>= 2.1): the Oct 2023 amp_bf16 rows ran
  // torch 2.1.0, the carried-over 70b rows torch 1.13.1, the Jan 2024 H100 rows torch 2.1.
  CHECK(a80.training.impl.checkpoint_early_stop);
  CHECK(!s70.points.at(0).setup.training.impl.checkpoint_early_stop);
  // H100, Jan 2024: 128-512 GPUs, FlashAttention-2 (attn_impl flash), BACKWARD_PRE, SHARD_GRAD_OP for 1b/3b.
  const auto sh = scenarios::parse_scenario(row("fsdp-mpt3b-h100-80gb-256gpu-seq2048-mb8-acF").scenario, "h100");
  const auto& h = sh.points.at(0).setup;
  CHECK(h.cluster.gpu.name == "H100-SXM5-80GB");
  CHECK(h.cluster.gpus() == 256);
  CHECK(h.training.sharding == sim::Sharding::ShardGradOp);
  CHECK(h.training.impl.attention == models::AttentionKernel::Flash2);
  CHECK(h.training.backward_prefetch == sim::BackwardPrefetch::Pre);
  CHECK(h.training.reduce_dtype == sim::Dtype::FP32);
  CHECK(row("fsdp-mpt3b-h100-80gb-256gpu-seq2048-mb8-acF").family == "hopper");
  CHECK(h.training.impl.checkpoint_early_stop);
}

TEST_CASE("an LLM Foundry entry from an unknown table must state its PyTorch release") {
  const std::string entry =
      "id: x\nsource: {ref: S99}\nhardware: {gpu: NVIDIA A100 80GB, num_gpus: 8, gpus_per_node: 8}\n"
      "setup:\n  model: MPT-1b\n  model_dims: {d_model: 2048, n_heads: 16, n_layers: 24, expansion_ratio: 4, "
      "vocab_size: 50368}\n  seq_len: 2048\n  micro_batch_size: 8\n  grad_accum: 1\n"
      "  fsdp_mixed_precision_mode: DEFAULT\n  sharding_strategy: FULL_SHARD\n  activation_checkpointing: true\n"
      "  attention: 'flash: FlashAttention-2'\n";
  CHECK_THROWS_WITH_AS(scenarios::llm_foundry_scenario(Input::load_string(entry, "e.yaml")),
                       Contains("e.yaml:5: setup: no PyTorch release known for source S99: give setup.torch"), InputError);
  const auto stated = scenarios::llm_foundry_scenario(Input::load_string(entry + "  torch: \"2.0.1\"\n", "e.yaml"));
  CHECK(stated.find("checkpoint_early_stop: false") != std::string::npos);  // 2.0: no early stop
  const auto newer = scenarios::llm_foundry_scenario(Input::load_string(entry + "  torch: \"2.4.0\"\n", "e.yaml"));
  CHECK(newer.find("checkpoint_early_stop: true") != std::string::npos);
  CHECK_THROWS_WITH_AS(scenarios::llm_foundry_scenario(Input::load_string(entry + "  torch: latest\n", "e.yaml")),
                       Contains("expected a PyTorch release such as 2.1.0, got 'latest'"), InputError);
}

TEST_CASE("a scenario that names no data entry is an error") {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / "tagcsim-validation-test";
  fs::remove_all(root);
  fs::create_directories(root / "validation");
  fs::create_directories(root / "scenarios");
  fs::copy(fs::path(TAGCSIM_SOURCE_DIR) / "validation" / "data", root / "validation" / "data");
  fs::copy(fs::path(TAGCSIM_SOURCE_DIR) / "scenarios" / "validation", root / "scenarios" / "validation");
  std::ofstream(root / "scenarios" / "validation" / "fsdp-nobody.yaml") << "name: x\n";
  CHECK_THROWS_WITH_AS(scenarios::validation_rows(root.string()),
                       Contains("fsdp-nobody.yaml: names no kind: fsdp entry of validation/data"), InputError);
  fs::remove(root / "scenarios" / "validation" / "fsdp-nobody.yaml");
  fs::remove(root / "scenarios" / "validation" / "fsdp-fms-llama2-7b-a100-128gpu-2403.yaml");
  CHECK_THROWS_WITH_AS(scenarios::validation_rows(root.string()), Contains("no scenario for this entry"), InputError);
  fs::remove_all(root);
}
