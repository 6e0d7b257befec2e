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

TEST_CASE("a bare number for a quantity is refused, with the unit it probably meant") {
  // `bandwidth: 400` used to be 400 bytes/s: a step of years, printed without a word.
  const auto nic = Input::load_string("nics:\n  bandwidth: 400\n", "t.yaml")["nics"]["bandwidth"];
  CHECK_THROWS_WITH_AS(nic.as_bandwidth(),
                       doctest::Contains("t.yaml:2: nics.bandwidth: expected a bandwidth with a unit, got '400' (did "
                                         "you mean '400 Gb/s'? a bare number would be 400 B/s)"),
                       InputError);
  CHECK_THROWS_WITH_AS(value("450").as_bandwidth(), doctest::Contains("did you mean '450 GB/s'?"), InputError);
  CHECK_THROWS_WITH_AS(value("5e10").as_bandwidth(), doctest::Contains("did you mean '50 GB/s'?"), InputError);
  CHECK_THROWS_WITH_AS(value("5e-06").as_seconds(), doctest::Contains("did you mean '5 us'?"), InputError);
  CHECK_THROWS_WITH_AS(value("80").as_bytes(), doctest::Contains("did you mean '80 GiB'?"), InputError);
  CHECK_THROWS_WITH_AS(value("312e12").as_flop_rate(), doctest::Contains("did you mean '312 TFLOP/s'?"), InputError);
  CHECK_THROWS_WITH_AS(parse_bandwidth("100", "--bandwidth"), doctest::Contains("--bandwidth: expected a bandwidth with a unit"),
                       InputError);
  // Zero is zero in any unit; --bytes says its unit in its name.
  CHECK(value("0").as_seconds() == 0);
  CHECK(parse_bytes("1048576", "--bytes") == 1048576);
}

TEST_CASE("a unit typo names the accepted spelling") {
  CHECK_THROWS_WITH_AS(value("400 Gbit").as_bandwidth(),
                       doctest::Contains("unknown unit 'Gbit' (did you mean '400 Gbit/s'?"), InputError);
  // Lower case could be bits or bytes: both, and which is which.
  CHECK_THROWS_WITH_AS(value("400 gb/s").as_bandwidth(),
                       doctest::Contains("(did you mean '400 GB/s' or '400 Gb/s'? b is bits, B is bytes)"), InputError);
  CHECK_THROWS_WITH_AS(value("80 gib").as_bytes(), doctest::Contains("(did you mean '80 GiB'?)"), InputError);
  CHECK_THROWS_WITH_AS(value("5 usec").as_seconds(), doctest::Contains("(did you mean '5 us'?)"), InputError);
  CHECK(value("50 GBps").as_bandwidth() == 50e9);
}

TEST_CASE("a quantity written back reads back as the same number") {
  CHECK(format_quantity(50e9, Quantity::Bandwidth, "Gb/s") == "400 Gb/s");
  CHECK(format_quantity(0.5e-6, Quantity::Time, "us") == "0.5 us");
  CHECK(format_quantity(80 * 1073741824.0, Quantity::Bytes, "GiB") == "80 GiB");
  CHECK(format_quantity(989.4e12, Quantity::FlopRate, "TFLOP/s") == "989.4 TFLOP/s");
  for (double v : {1.0 / 3, 6.02e23, 12345.678901234567, 3.35e12, 141e9, 76.08e-6}) {
    for (auto [q, unit] : {std::pair{Quantity::Bandwidth, "Gb/s"}, std::pair{Quantity::Time, "us"},
                           std::pair{Quantity::Bytes, "GiB"}, std::pair{Quantity::FlopRate, "TFLOP/s"}}) {
      const std::string text = format_quantity(v, q, unit);
      CAPTURE(text);
      const Input in = value(text);
      const double back = q == Quantity::Bandwidth ? in.as_bandwidth()
                          : q == Quantity::Time    ? in.as_seconds()
                          : q == Quantity::Bytes   ? in.as_bytes()
                                                   : in.as_flop_rate();
      CHECK(back == v);
    }
  }
}

TEST_CASE("did-you-mean matches aliases, substrings and parts, not only spelling") {
  const std::vector<std::string> models = {"llama2-7b", "llama2-13b", "llama3.1-8b", "llama3.1-70b"};
  // Two edits away from llama2-7b, but every part of it is in llama3.1-8b.
  CHECK(did_you_mean("llama3-8b", models) == " (did you mean 'llama3.1-8b'?)");
  CHECK(did_you_mean("p4de", {"aws-p4de", "aws-p5"}) == " (did you mean 'aws-p4de'?)");
  CHECK(did_you_mean("H100", {"a100-80gb", "h100-sxm", "h200-sxm"}) == " (did you mean 'h100-sxm'?)");
  CHECK(did_you_mean("ndr", {"dgx-h100-ib400"}, {{"dgx-ndr", "dgx-h100-ib400"}}) == " (did you mean 'dgx-h100-ib400'?)");
  CHECK(did_you_mean("zzz", models).empty());
}

TEST_CASE("YAML syntax errors come with a plain-language hint") {
  CHECK_THROWS_WITH_AS(Input::load_string("a:\n\tb: 1\n", "t.yaml"),
                       doctest::Contains("t.yaml:2: not valid YAML (illegal map value): this line is indented with a "
                                         "tab; YAML indents with spaces only"),
                       InputError);
  CHECK_THROWS_WITH_AS(Input::load_string("a:\n  b: 1\n   c: 2\n", "t.yaml"),
                       doctest::Contains("t.yaml:3: not valid YAML (illegal map value): this key is indented more than "
                                         "the keys above it"),
                       InputError);
  CHECK_THROWS_WITH_AS(Input::load_string("a:\n  b: 1\n c: 2\n", "t.yaml"),
                       doctest::Contains("t.yaml:3: not valid YAML (end of map not found): this key is indented less"),
                       InputError);
  CHECK_THROWS_WITH_AS(Input::load_string("a: [1, 2\nb: 3\n", "t.yaml"), doctest::Contains("is not closed"), InputError);
}

TEST_CASE("an input error keeps its parts, so that it can be said again elsewhere") {
  try {
    value("-1").as_int_at_least(0);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.file() == "t.yaml");
    CHECK(e.line() == 1);
    CHECK(e.key() == "x");
    CHECK(e.problem() == "expected an integer >= 0, got -1");
    CHECK(std::string(e.what()) == "t.yaml:1: x: expected an integer >= 0, got -1");
  }
}
