// Every registered algorithm, verified symbolically for p = 1..64 and larger sizes, with even,
// uneven and zero counts, on the whole partition and (when it matters) on part of it.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "bgl/collectives/flat_map.hpp"
#include "bgl/collectives/registry.hpp"
#include "bgl/collectives/verifier.hpp"
#include "test_params.hpp"

namespace bgl::collectives {
namespace {

// The executor's table of expected messages (detail::FlatMap) against std::map, through random
// inserts, lookups and erases. A hash with five homes, 3 apart at the array's end, makes long
// overlapping probe runs that wrap around it, so erases move entries of other homes back; the
// table grows from 64 to 1,024 entries (256 keys at most) and drains again.
TEST(FlatMap, AgreesWithAnOrderedMapThroughRandomInsertsAndErases) {
  struct Crowded {
    std::size_t operator()(std::uint32_t k) const { return ~std::size_t{0} - (k % 5) * 3; }
  };
  detail::FlatMap<std::uint32_t, std::uint64_t, Crowded> map;
  std::map<std::uint32_t, std::uint64_t> model;
  std::mt19937 rng(7);
  for (int step = 0; step < 20000; ++step) {
    const std::uint32_t k = rng() % 300;
    const bool fill = (step / 4000) % 2 == 0;  // phases of growth, then of draining
    if (std::uint64_t* v = map.find(k)) {
      ASSERT_TRUE(model.count(k)) << "step " << step;
      ASSERT_EQ(*v, model[k]) << "step " << step;
      if (!fill || rng() % 4 == 0) {
        map.erase(k);
        model.erase(k);
      }
    } else {
      ASSERT_FALSE(model.count(k)) << "step " << step;
      if (fill || rng() % 4 == 0) {
        map.insert(k, step);
        model[k] = static_cast<std::uint64_t>(step);
      }
    }
    ASSERT_EQ(map.size(), model.size()) << "step " << step;
  }
  std::size_t seen = 0;
  map.for_each([&](std::uint32_t k, std::uint64_t v) {
    ++seen;
    EXPECT_EQ(model.at(k), v);
  });
  EXPECT_EQ(seen, model.size());
  map.erase(1000);  // absent: nothing happens
  EXPECT_EQ(map.size(), model.size());
}

struct Case {
  const Algorithm* algorithm;
};

class AllAlgorithms : public ::testing::TestWithParam<const Algorithm*> {};

TEST_P(AllAlgorithms, VerifiesForAllSizes) {
  const Algorithm& a = *GetParam();
  int verified = 0;
  for (int p : testing::sizes()) {
    const auto mapping = testing::mapping_for(p);
    for (Params x : testing::params_for(a.op, p)) {
      // Off the whole partition too (hardware steps must then be avoided), on fewer sizes.
      const bool both = p <= 12 || p == 64;
      for (bool whole : {true, false}) {
        if (!whole && !both) continue;
        x.topology.mapping = mapping.get();
        x.topology.whole_partition = whole && mapping->shape().node_count() == p;
        if (!a.applicable(x).empty()) continue;
        const Schedule s = build_schedule(a, x);
        VerifyOptions o;
        const VerifyResult r = verify(s, x, o);
        ASSERT_TRUE(r.ok) << a.name << " p=" << p << " bytes=" << x.bytes() << " root=" << x.root
                          << "\n"
                          << r.summary();
        ++verified;
      }
    }
  }
  EXPECT_GT(verified, 0) << a.name << " was applicable to no parameter set";
}

std::string name_of(const ::testing::TestParamInfo<const Algorithm*>& info) {
  std::string n = std::string(to_string(info.param->op)) + "_" + std::string(info.param->name);
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

std::vector<const Algorithm*> every() {
  std::vector<const Algorithm*> v;
  for (const Algorithm& a : all_algorithms())
    v.push_back(&a);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Registry, AllAlgorithms, ::testing::ValuesIn(every()), name_of);

TEST(Registry, NamesAreUniqueAndFindable) {
  for (const Algorithm& a : all_algorithms()) {
    EXPECT_EQ(find_algorithm(a.op, a.name), &a);
    EXPECT_FALSE(a.description.empty()) << a.name;
  }
  EXPECT_EQ(find_algorithm(Collective::bcast, "no-such-algorithm"), nullptr);
}

TEST(Registry, BuildScheduleRejectsBadParameters) {
  const Algorithm* a = find_algorithm(Collective::bcast, "binomial");
  ASSERT_NE(a, nullptr);
  Params x = Params::bcast(4, 7, 10);
  try {
    build_schedule(*a, x);
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("root 7"), std::string::npos) << e.what();
  }
  EXPECT_THROW(build_schedule(*a, Params::allreduce(4, 1, DataType::i32, ReduceOp::sum)),
               std::invalid_argument);
}

}  // namespace
}  // namespace bgl::collectives

namespace bgl::collectives {
namespace {

// The sweep above is only as good as the verifier's sensitivity: dropping any one step of a
// correct schedule (which loses data, unmatches a message or skips a combination) must be caught.
TEST_P(AllAlgorithms, DroppingAnyStepIsCaught) {
  const Algorithm& a = *GetParam();
  for (int p : {5, 8}) {
    const auto mapping = testing::mapping_for(p);
    for (Params x : testing::params_for(a.op, p)) {
      x.topology.mapping = mapping.get();
      x.topology.whole_partition = mapping->shape().node_count() == p;
      if (!a.applicable(x).empty() || x.bytes() == 0) continue;
      const Schedule s = build_schedule(a, x);
      for (int r = 0; r < p; ++r) {
        const Program& pr = s.programs[static_cast<std::size_t>(r)];
        for (StepId drop = 0; drop < pr.size(); ++drop) {
          const Step& victim = pr.step(drop);
          // Zero-byte local steps and zero-byte messages carry no data to lose.
          if ((victim.kind == StepKind::copy || victim.kind == StepKind::reduce) &&
              victim.src.bytes == 0)
            continue;
          Schedule m = s;
          Program q(r);
          q.scratch_bytes = pr.scratch_bytes;
          for (StepId i = 0; i < pr.size(); ++i) {
            if (i == drop) continue;
            Step st = pr.step(i);
            std::erase(st.deps, drop);
            for (StepId& d : st.deps)
              if (d > drop) --d;
            q.add(st);
          }
          m.programs[static_cast<std::size_t>(r)] = q;
          EXPECT_FALSE(verify(m, x).ok) << a.name << " p=" << p << " rank " << r << " without step "
                                        << drop << ": " << to_string(victim);
        }
      }
    }
  }
}

}  // namespace
}  // namespace bgl::collectives
