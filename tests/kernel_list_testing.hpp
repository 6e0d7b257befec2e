// Looking up and counting kernels by name in a unit's kernel list (shared by test_kernel_lists*.cpp and
// test_model_parallel.cpp).
#pragma once

#include "models/kernel_list.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace tagcsim::test {

// The kernel named `op` in a list (a failed check when there is none).
inline models::Kernel find(const std::vector<models::Kernel>& list, const std::string& op) {
  for (const auto& k : list)
    if (k.op == op) return k;
  FAIL("no kernel " << op);
  return models::Kernel{};
}

// How many kernels of a list have names starting with `prefix`.
inline long count_prefix(const std::vector<models::Kernel>& list, const std::string& prefix) {
  return std::count_if(list.begin(), list.end(), [&](const models::Kernel& k) { return k.op.rfind(prefix, 0) == 0; });
}

}  // namespace tagcsim::test
