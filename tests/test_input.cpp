// Checked input: quantities with units, and errors that name file, line and key.
#include "common/input.hpp"

#include <doctest/doctest.h>

using namespace tagcsim;

namespace {
Input value(const std::string& v) { return Input::load_string("x: " + v + "\n", "t.yaml")["x"]; }
}  // namespace

TEST_CASE("bandwidths take bits or bytes per second") {
  CHECK(value("400 Gb/s").as_bandwidth() == doctest::Approx(50e9));
  CHECK(value("50 GB/s").as_bandwidth() == doctest::Approx(50e9));
  CHECK(value("25Gbps").as_bandwidth() == doctest::Approx(3.125e9));
  CHECK(value("1e9 B/s").as_bandwidth() == doctest::Approx(1e9));
}

TEST_CASE("times, sizes and FLOP rates take their units") {
  CHECK(value("0.5 us").as_seconds() == doctest::Approx(0.5e-6));
  CHECK(value("2 ms").as_seconds() == doctest::Approx(2e-3));
  CHECK(value("64 KiB").as_bytes() == doctest::Approx(65536));
  CHECK(value("1 GiB").as_bytes() == doctest::Approx(1073741824.0));
  CHECK(value("989 TFLOP/s").as_flop_rate() == doctest::Approx(989e12));
}

TEST_CASE("a bad quantity says what was expected, where") {
  CHECK_THROWS_WITH_AS(value("fast").as_bandwidth(), doctest::Contains("t.yaml:1: x: expected a bandwidth"), InputError);
  CHECK_THROWS_WITH_AS(value("-3 Gb/s").as_bandwidth(), doctest::Contains("expected a positive bandwidth"), InputError);
  CHECK_THROWS_WITH_AS(value("2.5").as_int(), doctest::Contains("t.yaml:1: x: expected an integer, got '2.5'"),
                       InputError);
  CHECK_THROWS_WITH_AS(value("1.5").as_fraction(), doctest::Contains("expected a fraction in [0, 1]"), InputError);
}

TEST_CASE("unknown keys are refused with the closest known one") {
  const auto doc = Input::load_string("a: 1\nmodle: x\n", "t.yaml");
  CHECK_THROWS_WITH_AS(doc.expect_keys({"a", "model"}),
                       doctest::Contains("t.yaml:2: modle: unknown key (did you mean 'model'?); expected one of: a, model"),
                       InputError);
}

TEST_CASE("did-you-mean prefers a prefix of three letters or more, then at most two edits") {
  CHECK(did_you_mean("dgx-h1", {"aws-p5", "dgx-h100-ib400"}) == " (did you mean 'dgx-h100-ib400'?)");
  CHECK(did_you_mean("nodez", {"nodes", "nics"}) == " (did you mean 'nodes'?)");
  CHECK(did_you_mean("zzz", {"nodes", "nics"}).empty());
}

TEST_CASE("invalid YAML names its line") {
  CHECK_THROWS_WITH_AS(Input::load_string("a: [1, 2\nb: 3\n", "t.yaml"), doctest::Contains("t.yaml:"), InputError);
}

TEST_CASE("integers that must fit say their range") {
  CHECK(value("12").as_int_between(1, 100) == 12);
  CHECK_THROWS_WITH_AS(value("0").as_int_between(1, 100), doctest::Contains("expected an integer >= 1, got 0"),
                       InputError);
  CHECK_THROWS_WITH_AS(value("99999999999").as_int_between(1, 100),
                       doctest::Contains("expected an integer <= 100, got 99999999999"), InputError);
}
