#include "bgl/collectives/registry.hpp"

#include <stdexcept>
#include <string>

namespace bgl::collectives {

void Registry::add(Algorithm algorithm) {
  for (const Algorithm& a : list_)
    if (a.op == algorithm.op && a.name == algorithm.name)
      throw std::logic_error("collectives: algorithm '" + std::string(algorithm.name) +
                             "' registered twice for " + std::string(to_string(algorithm.op)));
  list_.push_back(algorithm);
}

std::span<const Algorithm> all_algorithms() {
  static const Registry registry = [] {
    Registry r;
    register_baselines(r);
    register_hardware_algorithms(r);
    register_seed_algorithms(r);
    return r;
  }();
  return registry.algorithms();
}

std::vector<const Algorithm*> algorithms_for(Collective op) {
  std::vector<const Algorithm*> out;
  for (const Algorithm& a : all_algorithms())
    if (a.op == op) out.push_back(&a);
  return out;
}

const Algorithm* find_algorithm(Collective op, std::string_view name) {
  for (const Algorithm& a : all_algorithms())
    if (a.op == op && a.name == name) return &a;
  return nullptr;
}

Schedule build_schedule(const Algorithm& algorithm, const Params& params) {
  if (std::string e = params.validate(); !e.empty()) throw std::invalid_argument(e);
  if (params.op != algorithm.op)
    throw std::invalid_argument("collectives: algorithm '" + std::string(algorithm.name) +
                                "' is for " + std::string(to_string(algorithm.op)) + ", not " +
                                std::string(to_string(params.op)));
  if (std::string why = algorithm.applicable(params); !why.empty())
    throw std::invalid_argument(std::string(to_string(params.op)) + " '" +
                                std::string(algorithm.name) + "' not applicable: " + why);
  Schedule s;
  s.algorithm = algorithm.name;
  s.programs.reserve(static_cast<std::size_t>(params.p));
  for (int r = 0; r < params.p; ++r) {
    s.programs.push_back(algorithm.generate(params, r));
    s.programs.back().set_algorithm(algorithm.name);
    if (s.programs.back().rank() != r)
      throw std::logic_error(
          "collectives: '" + std::string(algorithm.name) + "' generated a program for rank " +
          std::to_string(s.programs.back().rank()) + " when asked for rank " + std::to_string(r));
  }
  return s;
}

}  // namespace bgl::collectives
