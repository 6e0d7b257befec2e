// A small deterministic generator for the randomized tests (test_fuzz.cpp, test_properties.cpp):
// the standard library's distributions differ between implementations, so a seed would not give
// the same inputs everywhere.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tagcsim::test {

struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
  std::size_t below(std::size_t n) { return n == 0 ? 0 : std::size_t(next() % n); }
};

}  // namespace tagcsim::test
