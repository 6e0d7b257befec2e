// A model read from the `model:` block of a YAML text parsed as the file t.yaml, so that errors name
// t.yaml:line (shared by the model tests).
#pragma once

#include "common/input.hpp"
#include "models/model.hpp"

#include <string>

namespace tagcsim::test {

inline models::TransformerConfig load(const std::string& yaml) {
  return models::load_model(Input::load_string(yaml, "t.yaml")["model"]);
}

}  // namespace tagcsim::test
