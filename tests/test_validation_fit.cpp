// The fit of `tagcsim validate` (scenarios/validation_fit.cpp, docs/validation.md): the devices' and
// families' parameters from the counted rows, what a family without a fit borrows, leave one source
// out, and the fit file.
#include "common/input.hpp"
#include "scenarios/scenario.hpp"
#include "scenarios/validation.hpp"
#include "sim/compute.hpp"
#include "sim/kernel_profile.hpp"
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

TEST_CASE("with the shipped fit, rows across sources and GPUs come within a few per cent") {
  // In-sample errors of `tagcsim validate` (docs/validation.md), with a margin for the fit. (Not
  // every row: torchtitan's 500 W H100 runs are -9% to +11% off, their power cap not modelled and
  // its FSDP-only float8 runs 6-9% slow, which is what the report is for; its compiled 128-GPU run
  // went from +6% to +9% when the rings across nodes took the channels NCCL gives them (stop 52).
  // The H100 rows here sit at +3% to +6% since the 700 W sources of stop 48 raised the H100's one scale,
  // and fms-fsdp's HSDP 7B at +7.3% since stop 62's InfiniBand efficiency (0.84 -> 0.96) sped up its
  // replicas' all-reduces, which its one 800 Gb/s NIC a node, not NCCL's channels, bind.)
  for (const char* id : {"fsdp-mpt7b-a100-40gb-8gpu-seq2048-mb12-acT", "fsdp-mpt760m-a100-40gb-8gpu-seq2048-mb12-acF",
                         "fsdp-fms-llama2-70b-a100-128gpu-2403", "fsdp-tt-13b-llama2-a100-64gpu-bs2-none",
                         "fsdp-fms-llama2-7b-h100-96gpu-2403", "fsdp-tt-llama31-8b-h100-128gpu-fsdp",
                         "fsdp-mpt7b-h100-80gb-128gpu-seq2048-mb6-acF"}) {
    CAPTURE(id);
    const auto& r = row(id);
    CHECK(std::abs(scenarios::predict(r).error(r.measured_tps)) < 0.075);
  }
}

TEST_CASE("the fit recovers the parameters that made the measurements") {
  // Rows whose "measurements" are tagcsim's own predictions with the A100 40GB at tensor_scale 0.9
  // and memory_scale 0.7: a small model (memory-bound kernels weigh) and a large one (GEMMs weigh).
  std::vector<scenarios::ValidationRow> r = {row("fsdp-mpt125m-a100-40gb-8gpu-seq512-mb104-acF"),
                                             row("fsdp-mpt350m-a100-40gb-8gpu-seq2048-mb16-acF"),
                                             row("fsdp-mpt30b-a100-40gb-32gpu-seq2048-mb4-acT")};
  const auto a100 = sim::device_fit_key("A100-SXM4-40GB");
  sim::override_fitted_parameters(a100, {0.9, 0.7, "truth"});
  for (auto& x : r) x.measured_tps = scenarios::predict(x).tps;
  sim::override_fitted_parameters("ampere", {1, 1, "start"});
  // A fit of one source's rows alone (one's own runs) fits that source's factor and says so; the
  // family keeps none (it borrows).
  auto fits = scenarios::fit(r, {0, 1, 2});
  CHECK(fits.at(a100).tensor_scale == Approx(0.9).epsilon(0.01));
  CHECK(fits.at(a100).basis.find("(the fit's only source: that source's factor, not the chip's)") != std::string::npos);
  CHECK(fits.count("ampere") == 0);
  CHECK(sim::fitted_parameters("ampere").basis.empty());
  // Two sources fit the device as the chip's: its scale is what its measurements say, and the family
  // stands for its unmeasured devices at that scale.
  r[2].source = "S-other";
  fits = scenarios::fit(r, {0, 1, 2});
  CHECK(fits.at(a100).tensor_scale == Approx(0.9).epsilon(0.01));
  CHECK(fits.at(a100).memory_scale == Approx(0.7).epsilon(0.01));
  CHECK(fits.at(a100).basis.find("(2 sources: S-other, S31;") != std::string::npos);
  CHECK(sim::fitted_parameters("A100-SXM4-40GB", "ampere").tensor_scale == fits.at(a100).tensor_scale);  // in force
  CHECK(fits.at("ampere").tensor_scale == Approx(fits.at(a100).tensor_scale));
  sim::remove_fitted_parameters(sim::device_fit_key("A100-SXM4-80GB"));  // as if no source had measured it
  CHECK(sim::fitted_parameters("A100-SXM4-80GB", "ampere").tensor_scale == Approx(fits.at(a100).tensor_scale));
  // Where other sources are in the fit, one source's device is not fitted: it takes its family's.
  r.push_back(row("fsdp-tt-13b-llama2-a100-64gpu-bs2-none"));  // an A100 80GB row of S36
  r.push_back(row("fsdp-tt-llama3-70b-a100-64gpu-full-ac"));   // and one of S35
  r[2].source = "S31";                                          // the 40GB's rows one source again
  for (std::size_t k = 3; k < r.size(); ++k) r[k].measured_tps = scenarios::predict(r[k]).tps;
  fits = scenarios::fit(r, {0, 1, 2, 3, 4});
  CHECK(fits.count(a100) == 0);
  CHECK_FALSE(sim::has_device_fit("A100-SXM4-40GB"));
  CHECK(sim::fitted_parameters("A100-SXM4-40GB", "ampere").tensor_scale ==
        Approx(fits.at(sim::device_fit_key("A100-SXM4-80GB")).tensor_scale));
  sim::clear_fitted_overrides();
}

TEST_CASE("a family's scale is its devices' geometric mean, each weighted by the sources that measured it") {
  // Two A100 40GB rows of two sources (S31's, and one relabelled as another's) and one row each of
  // S35 and S36 (A100 80GB), each "measured" at the prediction with its device's truth: 0.8 for the
  // 40GB, 1.0 for the 80GB, memory 0.7. The family stands for an unmeasured Ampere at
  // (0.8^2 x 1.0^2)^(1/4) = 0.894.
  std::vector<scenarios::ValidationRow> r = {row("fsdp-mpt125m-a100-40gb-8gpu-seq512-mb104-acF"),
                                             row("fsdp-mpt30b-a100-40gb-32gpu-seq2048-mb4-acT"),
                                             row("fsdp-tt-13b-llama2-a100-64gpu-bs2-none"),
                                             row("fsdp-tt-llama3-70b-a100-64gpu-full-ac")};
  r[1].source = "S-other";
  sim::override_fitted_parameters(sim::device_fit_key("A100-SXM4-40GB"), {0.8, 0.7, "truth"});
  sim::override_fitted_parameters(sim::device_fit_key("A100-SXM4-80GB"), {1.0, 0.7, "truth"});
  for (auto& x : r) x.measured_tps = scenarios::predict(x).tps;
  const auto fits = scenarios::fit(r, {0, 1, 2, 3});
  CHECK(fits.at(sim::device_fit_key("A100-SXM4-40GB")).tensor_scale == Approx(0.8).epsilon(0.01));
  CHECK(fits.at(sim::device_fit_key("A100-SXM4-80GB")).tensor_scale == Approx(1.0).epsilon(0.01));
  CHECK(fits.at("ampere").tensor_scale == Approx(std::sqrt(0.8)).epsilon(0.01));
  CHECK(fits.at("ampere").memory_scale == Approx(0.7).epsilon(0.01));
  CHECK(fits.at("ampere").basis.find("A100-SXM4-40GB 0.800 x 2, A100-SXM4-80GB 1.000 x 2") != std::string::npos);
  // A fold that keeps one of the 40GB's two sources: one source no longer fits it, and its row is
  // predicted at the family's scale, here the 80GB's, as a fold without either source predicts it.
  for (const std::vector<std::size_t>& fold : {std::vector<std::size_t>{0, 2, 3}, std::vector<std::size_t>{2, 3}}) {
    scenarios::fit(r, fold);
    CHECK_FALSE(sim::has_device_fit("A100-SXM4-40GB"));
    CHECK(sim::fitted_parameters("A100-SXM4-40GB", "ampere").tensor_scale ==
          Approx(sim::fitted_parameters("A100-SXM4-80GB", "ampere").tensor_scale));
  }
  sim::clear_fitted_overrides();
}

TEST_CASE("leave one source out predicts each source from a fit without it") {
  std::vector<scenarios::ValidationRow> r = {row("fsdp-mpt125m-a100-40gb-8gpu-seq512-mb104-acF"),
                                             row("fsdp-mpt30b-a100-40gb-32gpu-seq2048-mb4-acT"),
                                             row("fsdp-tt-13b-llama2-a100-64gpu-bs2-none"),
                                             row("fsdp-tt-70b-llama2-a100-64gpu-bs2-full"),
                                             row("fsdp-tt-llama3-70b-a100-64gpu-full-ac")};
  scenarios::ValidationOptions o;
  o.leave_one_source_out = true;
  const auto before = sim::fitted_parameters("ampere");
  const auto run = scenarios::validate(r, o);
  REQUIRE(run.fold_fits.size() == 3);
  // Holding out S31 fits on the S35 and S36 rows, and so on.
  CHECK(run.fold_fits.count("S31") == 1);
  CHECK(run.fold_fits.count("S35") == 1);
  CHECK(run.fold_fits.count("S36") == 1);
  for (const auto& res : run.results) CHECK(res.has_held_out);
  CHECK(run.fold_fits.at("S31").at(sim::device_fit_key("A100-SXM4-80GB")).basis.find("over 3 rows of A100-SXM4-80GB") !=
        std::string::npos);
  CHECK(run.fold_fits.at("S31").count(sim::device_fit_key("A100-SXM4-40GB")) == 0);  // its rows are held out
  // The fitted parameters in force before are back in force after.
  CHECK(sim::fitted_parameters("ampere").tensor_scale == before.tensor_scale);
  CHECK(sim::kernel_profile("device-a100-40gb").fitted.memory_scale == before.memory_scale);
  const auto text = scenarios::format_validation(run);
  CHECK(text.find("| leave one source out (held out) | 5 |") != std::string::npos);
  CHECK(text.find("mean signed error by bucket") != std::string::npos);
  sim::clear_fitted_overrides();
}

TEST_CASE("the report holds the model against one MFU per device family, held out the same way") {
  // Three rows of one family from two sources, each predicted exactly (so the measured MFU is the
  // predicted one): source A at 0.40 and 0.50, source B at 0.45. The rule of thumb predicts A's rows
  // with B's MFU (0.45/0.40 - 1 = +12.5%, 0.45/0.50 - 1 = -10%) and B's with the geometric mean of
  // A's (sqrt(0.2)/0.45 - 1 = -0.62%): median 10.0%, mean 7.7%, 90% within 12.5% (nearest rank: the
  // 3rd of 3), max 12.5% on a1, none past 15%, mean signed +0.6%.
  scenarios::ValidationRun run;
  const std::pair<const char*, double> rows[] = {{"a1", 0.40}, {"a2", 0.50}, {"b1", 0.45}};
  for (const auto& [id, mfu] : rows) {
    scenarios::ValidationRow r;
    r.id = id;
    r.source = id[0] == 'a' ? "SA" : "SB";
    r.family = "ampere";
    r.measured_tps = 1000;
    run.rows.push_back(r);
    scenarios::RowResult res;
    res.shipped.tps = res.held_out.tps = 1000;
    res.shipped.mfu = res.held_out.mfu = mfu;
    res.has_held_out = true;
    run.results.push_back(res);
  }
  const auto text = scenarios::format_validation(run);
  CHECK(text.find("| rule of thumb: one MFU per device family, held out the same way | 3 | 10.0% | 7.7% | 12.5% | "
                  "12.5% (a1) | 0 | +0.6% |") != std::string::npos);
}

TEST_CASE("a family without a fit is reported apart: the held-out summary of the families with one") {
  // Blackwell has one source among these rows, so its scale is not fitted; the summary adds the rows
  // of fitted families.
  std::vector<scenarios::ValidationRow> r = {row("fsdp-tt1196-llama3-8b-b200-flash"),
                                             row("fsdp-tt-13b-llama2-a100-64gpu-bs2-none"),
                                             row("fsdp-tt-llama3-70b-a100-64gpu-full-ac")};
  scenarios::ValidationOptions o;
  o.leave_one_source_out = true;
  const auto run = scenarios::validate(r, o);
  sim::remove_fitted_parameters("blackwell");  // as these rows alone leave it (the shipped fit has GB200's too)
  const auto text = scenarios::format_validation(run);
  CHECK(text.find("| leave one source out (held out) | 3 |") != std::string::npos);
  CHECK(text.find("| held out, device families with a fit | 2 |") != std::string::npos);
  sim::clear_fitted_overrides();
}

TEST_CASE("a not-fitted row is counted and predicted, and moves no fit") {
  // Lambda's mixture of experts on B200 (S72) runs 27% below the prediction at the dense row's scale:
  // fitted with it, the B200's scale would take the MoE's miss; kept out, it is the dense row's alone.
  const auto dense = row("fsdp-tt1196-llama3-8b-b200-flash");
  const auto moe = row("fsdp-lambda-qwen3-30b-a3b-b200-8gpu-bs8");
  CHECK(moe.counted);
  CHECK_FALSE(moe.fitted);
  CHECK(moe.not_fitted_note.find("A mixture of experts") == 0);
  CHECK(dense.fitted);
  // The dense row twice, the copy as another source's, so that the B200 is fitted at all.
  auto copy = dense;
  copy.id += "-copy";
  copy.source = "S-other";
  const auto key = sim::device_fit_key(dense.device);
  const auto both = scenarios::fit({dense, copy, moe}, {0, 1, 2});
  const double with_moe = both.at(key).tensor_scale;
  const auto alone = scenarios::fit({dense, copy}, {0, 1});
  CHECK(with_moe == Approx(alone.at(key).tensor_scale));
  CHECK(both.at(key).basis.find("over 2 rows of B200-SXM-180GB") != std::string::npos);
  // The fit in force predicts the dense row to within a percent, the MoE row well above its measurement.
  sim::override_fitted_parameters(key, alone.at(key));
  CHECK(std::abs(scenarios::predict(dense).error(dense.measured_tps)) < 0.01);
  CHECK(scenarios::predict(moe).error(moe.measured_tps) > 0.3);
  // The other published run of the same mixture of experts (S74, per-op checkpointing) is not fitted
  // either, and misses the other way: predicted below its measurement.
  const auto sac = row("fsdp-pith79-tt-qwen3-30b-a3b-b200-8gpu-sac");
  CHECK(sac.counted);
  CHECK_FALSE(sac.fitted);
  CHECK(scenarios::predict(sac).error(sac.measured_tps) < -0.05);
  sim::clear_fitted_overrides();
}

TEST_CASE("a family without a fit of its own takes its nearest fitted predecessor's tensor scale") {
  sim::remove_fitted_parameters(sim::device_fit_key("B200-SXM-180GB"));  // the B200 by its family's, here
  sim::remove_fitted_parameters("blackwell");  // a family without a fit (the shipped one has B200 and GB200 rows)
  sim::override_fitted_parameters("ampere", {0.9, 0.7, "test"});
  sim::override_fitted_parameters("hopper", {0.4, 0.7, "test"});
  const auto b = sim::fitted_parameters("blackwell");
  CHECK(b.tensor_scale == Approx(0.4));  // Hopper's, not Ampere's 0.9
  CHECK(b.memory_scale == Approx(0.7));
  CHECK(b.basis.empty());  // still not fitted
  CHECK(b.borrowed == "hopper's, its predecessor's");
  CHECK(sim::kernel_profile("device-b200").fitted.tensor_scale == Approx(0.4));  // a loaded profile follows
  CHECK(sim::fitted_parameters("ada").tensor_scale == Approx(0.9));  // Ada follows Ampere, not Hopper
  // No fitted predecessor, or a family the list does not know: the geometric mean, sqrt(0.9 x 0.4).
  CHECK(sim::fitted_parameters("volta").tensor_scale == Approx(0.6));
  CHECK(sim::fitted_parameters("cdna3").tensor_scale == Approx(0.6));
  CHECK(sim::fitted_parameters("cdna3").borrowed == "the fitted families' geometric mean");
  sim::clear_fitted_overrides();
}

TEST_CASE("the fit file keeps the families and the devices apart, the devices by their GPU's name") {
  const scenarios::FamilyFits fits = {{"hopper", {0.8, 0.7, "b1", ""}},
                                      {sim::device_fit_key("H200-SXM-141GB"), {1.0, 0.7, "b2", ""}}};
  const auto text = scenarios::fit_file_text(fits, "cmd");
  CHECK(text.find("families:\n  hopper: {tensor_scale: 0.8000, memory_scale: 0.7000, basis: \"b1\"}\n") !=
        std::string::npos);
  CHECK(text.find("devices:\n  H200-SXM-141GB: {tensor_scale: 1.0000, memory_scale: 0.7000, basis: \"b2\"}\n") !=
        std::string::npos);
  // The shipped file's devices are in force: the H200 by its own scale, an unmeasured Hopper by the family's.
  CHECK(sim::has_device_fit("H200-SXM-141GB"));
  CHECK(!sim::has_device_fit("GH200-96GB"));
  CHECK(sim::fitted_parameters("GH200-96GB", "hopper").tensor_scale == sim::fitted_parameters("hopper").tensor_scale);
}

TEST_CASE("each fit's rows, their source held out, are summarised in the fit file and the run report") {
  scenarios::ValidationRun run;
  auto row = [&](const char* id, const char* source, const char* device, bool counted, double held_out_error) {
    scenarios::ValidationRow r;
    r.id = id, r.source = source, r.device = device, r.family = "hopper", r.counted = counted;
    r.measured_tps = 1000;
    run.rows.push_back(r);
    scenarios::RowResult res;
    res.has_held_out = true;
    res.held_out.tps = 1000 * (1 + held_out_error);
    run.results.push_back(res);
  };
  // The H200's three counted rows are +10%, -2% and +4% off: median 4%, and 90% of them (nearest
  // rank: all three) within 10%. The row not counted is left out; the H100's row counts for the family.
  row("a", "S1", "H200-SXM-141GB", true, 0.10);
  row("b", "S2", "H200-SXM-141GB", true, -0.02);
  row("c", "S2", "H200-SXM-141GB", true, 0.04);
  row("d", "S2", "H200-SXM-141GB", false, 0.50);
  row("e", "S3", "H100-SXM5-80GB", true, -0.30);
  const auto h200 = sim::device_fit_key("H200-SXM-141GB");
  run.fitted = {{"hopper", {0.8, 0.7, "b1"}}, {h200, {1.0, 0.7, "b2"}}};
  scenarios::attach_held_out(run);
  CHECK(run.fitted[h200].held_out == "3 rows of 2 sources, each source held out of the fit: median 4.0%, p90 10.0% off");
  CHECK(run.fitted["hopper"].held_out == "4 rows of 3 sources, each source held out of the fit: median 7.0%, p90 30.0% off");
  CHECK(scenarios::fit_file_text(run.fitted, "cmd").find(
            "H200-SXM-141GB: {tensor_scale: 1.0000, memory_scale: 0.7000, basis: \"b2\", held_out: \"3 rows of 2 "
            "sources, each source held out of the fit: median 4.0%, p90 10.0% off\"}") != std::string::npos);
  // The run report's compute line quotes the fit in force.
  sim::override_fitted_parameters(h200, run.fitted[h200]);
  CHECK(sim::compute_model_description(topologies::device("h200-sxm")).find(
            "H200-SXM-141GB fit: tensor_scale 1.000, memory_scale 0.700 (3 rows of 2 sources, each source held out of "
            "the fit: median 4.0%, p90 10.0% off)") != std::string::npos);
  sim::clear_fitted_overrides();
}
