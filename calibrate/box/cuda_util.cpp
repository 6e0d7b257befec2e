#include "calibrate/box/cuda_util.hpp"

#include <algorithm>
#include <stdexcept>

namespace tagcsim::calibrate::box {

void throw_cuda(cudaError_t err, const char* call, const char* file, int line) {
  cudaGetLastError();  // clear a non-sticky error so that later calls report their own
  throw std::runtime_error(std::string("CUDA error: ") + call + " failed at " + file + ":" + std::to_string(line) +
                           ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

double Event::since(const Event& start) const {
  float ms = 0;
  BOX_CUDA(cudaEventElapsedTime(&ms, start.get(), e_));
  return double(ms) * 1e-3;
}

}  // namespace tagcsim::calibrate::box
