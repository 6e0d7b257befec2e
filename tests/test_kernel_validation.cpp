// `tagcsim validate --kernels` (scenarios/kernel_validation.hpp): a profile's GEMMs and attention
// points predicted without their own source, and a measured profile's kernels predicted by a shipped one, on the
// hand-sized toy profile (tests/toy_profile.hpp: 4096^3 at 100 TFLOP/s, 8192^3 at 200, peak 400).
#include "scenarios/kernel_validation.hpp"
#include "toy_profile.hpp"

#include <doctest/doctest.h>

using namespace tagcsim;
using namespace tagcsim::scenarios;
using doctest::Approx;

TEST_CASE("a GEMM point's source is its id without the shape, or the box run that measured it") {
  CHECK(gemm_point_source("gemm-h100-flexgen-fp16-8192") == "gemm-h100-flexgen-fp16");
  CHECK(gemm_point_source("gemm-h200-azure-cublaslt-fp8-1024x2145x1024") == "gemm-h200-azure-cublaslt-fp8");
  CHECK(gemm_point_source("gemm-h100-sxm-mamf-bf16") == "gemm-h100-sxm-mamf-bf16");
  CHECK(gemm_point_source("measured: tagcsim calibrate box, 2026-12-04T16:55:14Z, grid: square") ==
        "measured: tagcsim calibrate box, 2026-12-04T16:55:14Z");
}

TEST_CASE("each GEMM held out is predicted with the other source's correction") {
  // The tile model gives 2mnk / 400 TFLOP/s for both (whole waves of 128 x 128 tiles on 4 SMs).
  // Without p1, 4096^3 takes p2's correction 0.5: 2 x 4096^3 / 200 TFLOP/s, against 100 measured:
  // half the time, -50%. Without p2, 8192^3 takes 0.25: 100 TFLOP/s against 200, +100%.
  const auto checks = gemm_leave_one_source_out(test::toy());
  REQUIRE(checks.size() == 2);
  CHECK(checks[0].shape == "4096 x 4096 x 4096");
  CHECK(checks[0].measured_seconds == Approx(2.0 * 4096 * 4096 * 4096 / 100e12));
  CHECK(checks[0].error() == Approx(-0.5));
  CHECK(checks[1].error() == Approx(1.0));
}

TEST_CASE("a GEMM whose source is the profile's only one cannot be predicted without it") {
  auto p = test::toy();
  for (auto& q : p.gemm.points) q.source = "gemm-toy-bench-" + std::to_string(int(q.m));
  const auto checks = gemm_leave_one_source_out(p);
  REQUIRE(checks.size() == 2);
  for (const auto& c : checks) CHECK_FALSE(c.predicted());
  CHECK(format_kernel_checks("toy", checks).find("toy                gemm bf16      0        -        -        -            2") !=
        std::string::npos);
}

TEST_CASE("an attention point's source is its GPU and reference, or the box run that measured it") {
  CHECK(attention_point_source("attn-h100-k02-fa2-fwdbwd-causal-hd64-s512") == "attn-h100-k02");
  CHECK(attention_point_source("attn-b200-fa2issue1589-fwd-noncausal-hd64-s4096") == "attn-b200-fa2issue1589");
  CHECK(attention_point_source("measured: tagcsim calibrate box, 2026-12-04T16:55:14Z, sdpa") ==
        "measured: tagcsim calibrate box, 2026-12-04T16:55:14Z");
}

TEST_CASE("each attention point held out is predicted from the other sources' curves") {
  // The toy's one curve (flash2 fwd+bwd, causal, head dim 128): 100 TFLOP/s at 1024 (source a),
  // 200 at 4096 (source b). Without a, the curve is b's one point, flat: 200 at 1024 where 100 was
  // measured, half the time (-50%). Without b, 100 at 4096 against 200: twice the time (+100%).
  const auto checks = attention_leave_one_source_out(test::toy());
  REQUIRE(checks.size() == 2);
  CHECK(checks[0].shape == "flash2 fwd+bwd causal hd128 seq 1024");
  CHECK(checks[0].error() == Approx(-0.5));
  CHECK(checks[1].error() == Approx(1.0));
  // A derived point names its measurements: it goes with them, and is never checked itself. Here it
  // is all that would be left of the kernel without a, so 1024 cannot be predicted.
  const auto p = sim::parse_kernel_profile(
      test::toy_profile("", "{seq: 1024, tflops: 100, source: attn-toy-a-s1024}, {seq: 4096, tflops: 200, source: "
                            "'model: attn-toy-a-s4096 x 2'}"),
      "toy.yaml");
  const auto derived = attention_leave_one_source_out(p);
  REQUIRE(derived.size() == 1);
  CHECK_FALSE(derived[0].predicted());
}

TEST_CASE("a box profile's own measurements are predicted by the shipped one, the copied curves are not") {
  const std::string box = "measured: tagcsim calibrate box, 2026-12-04T00:00:00Z";
  const auto measured = sim::parse_kernel_profile(
      test::toy_profile("    - {m: 2048, n: 2048, k: 2048, dtype: bf16, tflops: 50, source: '" + box + ", grid: square'}\n",
                        "{seq: 2048, tflops: 300, source: '" + box + "'}, {seq: 4096, tflops: 200, source: b}"),
      "box.yaml");
  const auto checks = predict_measured(test::toy(), measured);
  // The GEMM 2048^3 and the attention point at 2048; p1, p2 and the curve's point b are the toy's own.
  REQUIRE(checks.size() == 2);
  CHECK(checks[0].kind == "gemm bf16");
  CHECK(checks[0].predicted());
  CHECK(checks[1].kind == "attention");
  // The toy's flash2 curve at 2048: 100 at 1024 and 200 at 4096, linear in log(seq): 150. Measured
  // 300: the model takes twice as long, +100%.
  CHECK(checks[1].error() == Approx(1.0));
  const auto text = format_kernel_checks("toy", checks);
  CHECK(text.find("toy                attention      1   100.0%   100.0%   100.0%            0") != std::string::npos);
}
