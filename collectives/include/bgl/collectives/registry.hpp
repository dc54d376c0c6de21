#pragma once
// Algorithms by collective and name. Every algorithm is a pure function from parameters and a rank
// to that rank's program; all ranks of a communicator call it with the same parameters and get a
// consistent schedule (tests check this through the verifier, which generates all ranks).
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bgl/collectives/params.hpp"
#include "bgl/collectives/schedule.hpp"

namespace bgl::collectives {

struct Algorithm {
  std::string_view name;  // unique per collective, e.g. "binomial"; BGL_COLL_<OP>=name
  Collective op;
  std::string_view description;  // one line, for --list and the docs
  // Empty when the algorithm can run with these parameters, else why not ("needs a power of two
  // ranks", "needs the whole partition", "needs a topology").
  std::string (*applicable)(const Params& params);
  // Rank `rank`'s program. Called only when applicable() returned empty.
  Program (*generate)(const Params& params, int rank);
};

// Every algorithm of the library, registered once (first call) in a fixed order.
std::span<const Algorithm> all_algorithms();
std::vector<const Algorithm*> algorithms_for(Collective op);
const Algorithm* find_algorithm(Collective op, std::string_view name);

// All ranks' programs. Throws std::invalid_argument if params are invalid or the algorithm is not
// applicable (the message says why).
Schedule build_schedule(const Algorithm& algorithm, const Params& params);

// Registration (called from all_algorithms(); each source file of algorithms has one function).
class Registry;
void register_baselines(Registry& registry);
void register_hardware_algorithms(Registry& registry);
void register_seed_algorithms(Registry& registry);

class Registry {
 public:
  void add(Algorithm algorithm);  // throws std::logic_error on a duplicate (op, name)
  std::span<const Algorithm> algorithms() const { return list_; }

 private:
  std::vector<Algorithm> list_;
};

}  // namespace bgl::collectives
