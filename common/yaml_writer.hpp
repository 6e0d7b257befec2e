// Writing YAML that tagcsim's loaders read back exactly: scalars quoted only when they must be,
// numbers in their shortest exact form, quantities with a unit, and maps whose lines carry the
// unit and meaning of a value in a comment. The writers of clusters (topologies/cluster_yaml.hpp)
// and of resolved scenarios (scenarios/resolved.hpp) share these.
#pragma once

#include "common/input.hpp"

#include <initializer_list>
#include <string>
#include <string_view>

namespace tagcsim {

// A string as a YAML scalar: plain when that reads back as the same string, else double-quoted.
std::string yaml_scalar(const std::string& s);
std::string yaml_flag(bool b);        // true | false
std::string yaml_number(double v);    // the shortest text that reads back exactly
// A quantity in the first of `units` that writes it exactly in a few digits ("141 GB", not
// "131.318 GiB"); else exactly in the first unit.
std::string yaml_quantity(double v, Quantity q, std::initializer_list<std::string_view> units);
std::string yaml_seconds(double s);   // yaml_quantity in us, ns, ms or s

// Lines of a YAML map appended to `out`, indented by `indent`; a comment after a value says its
// unit or meaning.
class YamlMap {
 public:
  YamlMap(std::string& out, int indent) : out_(out), indent_(indent) {}
  void put(std::string_view key, const std::string& value, std::string_view comment = "");
  // A nested map under `key`.
  YamlMap open(std::string_view key, std::string_view comment = "");
  int indent() const { return indent_; }

 private:
  std::string& out_;
  int indent_;
};

}  // namespace tagcsim
