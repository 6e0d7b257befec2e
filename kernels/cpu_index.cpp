// CPU reference: index create, aggregate, read.
#include "kernels/cpu_reference.hpp"
#include "kernels/rules.hpp"

#include <algorithm>

namespace tagcsim::kernels::cpu {

void create_index(const float* values, std::size_t n, IndexEncoding enc, std::uint8_t* index) {
  // One output byte at a time (8, 2 or 1 elements), so no byte is written twice.
  const std::size_t per_byte = enc == IndexEncoding::Bit8Max ? 1 : enc == IndexEncoding::Bit4Sum ? 2 : 8;
  const unsigned shift = enc == IndexEncoding::Bit4Sum ? 4 : 1;
  const std::size_t bytes = index_bytes(n, enc);
  for (std::size_t j = 0; j < bytes; ++j) {
    const std::size_t base = j * per_byte, count = std::min(per_byte, n - base);
    unsigned b = 0;
    for (std::size_t q = 0; q < count; ++q) b |= nonzero_flag(values[base + q]) << (q * shift);
    index[j] = std::uint8_t(b);
  }
}

void aggregate_index(std::uint8_t* acc, const std::uint8_t* other, std::size_t n, IndexEncoding enc) {
  const std::size_t bytes = index_bytes(n, enc);
  for (std::size_t j = 0; j < bytes; ++j) acc[j] = aggregate_byte(acc[j], other[j], enc);
}

void read_index(float* values, const std::uint8_t* index, std::size_t n, IndexEncoding enc) {
  for (std::size_t i = 0; i < n; ++i) values[i] = with_flag(values[i], index_flag(index, i, enc));
}

}  // namespace tagcsim::kernels::cpu
