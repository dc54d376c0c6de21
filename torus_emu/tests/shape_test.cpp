#include "bgl/torus_emu/shape.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "bgl/torus_emu/direction.hpp"
#include "bgl/torus_emu/error.hpp"

namespace bgl::torus_emu {
namespace {

using ::testing::HasSubstr;

constexpr std::array<Direction, kDirections> kAllDirections{Direction::x_plus, Direction::x_minus,
                                                            Direction::y_plus, Direction::y_minus,
                                                            Direction::z_plus, Direction::z_minus};

template <class F>
std::string config_error_of(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no ConfigError thrown>";
}

Coord at(const Shape& s, NodeId n) {
  return s.coord(n);
}

TEST(Direction, HelpersAreConsistent) {
  for (Direction d : kAllDirections) {
    EXPECT_EQ(make_direction(dim_of(d), sign_of(d)), d);
    EXPECT_EQ(opposite(opposite(d)), d);
    EXPECT_NE(opposite(d), d);
    EXPECT_EQ(dim_of(opposite(d)), dim_of(d));
    EXPECT_EQ(sign_of(opposite(d)), -sign_of(d));
  }
  EXPECT_EQ(dim_of(Direction::y_minus), Dim::y);
  EXPECT_EQ(sign_of(Direction::z_minus), -1);
  EXPECT_EQ(to_string(Direction::x_minus), "-x");
  EXPECT_EQ(to_string(Direction::z_plus), "+z");
  EXPECT_EQ(to_char(Dim::y), 'y');
}

TEST(Shape, ParsesExtentsAndDefaultsToTorus) {
  const Shape s = Shape::parse("4x3x2");
  EXPECT_EQ(s.extent(Dim::x), 4);
  EXPECT_EQ(s.extent(Dim::y), 3);
  EXPECT_EQ(s.extent(Dim::z), 2);
  EXPECT_EQ(s.node_count(), 24);
  EXPECT_TRUE(s.is_torus(Dim::x));
  EXPECT_TRUE(s.is_torus(Dim::y));
  EXPECT_TRUE(s.is_torus(Dim::z));
  EXPECT_EQ(s.to_string(), "4x3x2");
  EXPECT_EQ(s, Shape({4, 3, 2}, {true, true, true}));
}

TEST(Shape, ParsesMeshDimensionsInAnyOrder) {
  const Shape s = Shape::parse("8x8x16", "zx");
  EXPECT_FALSE(s.is_torus(Dim::x));
  EXPECT_TRUE(s.is_torus(Dim::y));
  EXPECT_FALSE(s.is_torus(Dim::z));
  EXPECT_EQ(s.to_string(), "8x8x16 mesh:xz");
  EXPECT_EQ(Shape::parse("4x4x2", "z").to_string(), "4x4x2 mesh:z");
  EXPECT_EQ(Shape::parse("4x4x2", "yzx").to_string(), "4x4x2 mesh:xyz");
  EXPECT_EQ(Shape::parse("1x1x1").node_count(), 1);
  EXPECT_EQ(Shape::parse("64x64x64").node_count(), 64 * 64 * 64);
}

TEST(Shape, RejectsBadExtentsQuotingTheInput) {
  EXPECT_EQ(config_error_of([] { Shape::parse("4x0x2"); }),
            "shape \"4x0x2\": extent of y must be 1..64, got 0");
  EXPECT_EQ(config_error_of([] { Shape::parse("65x1x1"); }),
            "shape \"65x1x1\": extent of x must be 1..64, got 65");
  EXPECT_EQ(config_error_of([] { Shape::parse("4x4x-1"); }),
            "shape \"4x4x-1\": extent of z must be 1..64, got -1");
  EXPECT_THAT(config_error_of([] { Shape::parse("99999999999x1x1"); }),
              HasSubstr("extent of x must be 1..64"));
  for (const char* bad : {"8", "4x4", "4x4x2x1", "", "x4x2", "4x4x", "4xx4", "4X4X2"}) {
    EXPECT_THAT(config_error_of([&] { Shape::parse(bad); }),
                HasSubstr("shape \"" + std::string(bad) + "\": "))
        << bad;
  }
  EXPECT_THAT(config_error_of([] { Shape::parse("8"); }), HasSubstr("three extents"));
  EXPECT_EQ(config_error_of([] { Shape::parse("4xax2"); }),
            "shape \"4xax2\": extent of y is not a number: \"a\"");
  for (const char* bad : {"4x4x2 ", " 4x4x2", "4x1.5x2", "4x+4x2", "4x4x2a"}) {
    EXPECT_THAT(config_error_of([&] { Shape::parse(bad); }), HasSubstr("not a number")) << bad;
  }
}

TEST(Shape, RejectsBadMeshDimensions) {
  EXPECT_EQ(config_error_of([] { Shape::parse("4x4x2", "xq"); }),
            "mesh dimensions \"xq\": 'q' is not one of x, y, z");
  EXPECT_EQ(config_error_of([] { Shape::parse("4x4x2", "zyz"); }),
            "mesh dimensions \"zyz\": 'z' is listed twice");
}

TEST(Shape, ConstructorNamesTheBadDimension) {
  EXPECT_EQ(config_error_of([] {
              Shape({4, 4, 0}, {true, true, true});
            }),
            "shape extent of z must be 1..64, got 0");
}

TEST(Shape, CoordToString) {
  EXPECT_EQ(to_string(Coord{1, 22, 3}), "(1,22,3)");
  EXPECT_EQ(to_string(Coord{}), "(0,0,0)");
}

TEST(Shape, NodeIdsNumberXFastest) {
  const Shape s = Shape::parse("4x3x2");
  EXPECT_EQ(s.node_id({0, 0, 0}), 0u);
  EXPECT_EQ(s.node_id({1, 0, 0}), 1u);
  EXPECT_EQ(s.node_id({0, 1, 0}), 4u);
  EXPECT_EQ(s.node_id({0, 0, 1}), 12u);
  EXPECT_EQ(s.node_id({3, 2, 1}), 23u);
  EXPECT_EQ(s.coord(17), (Coord{1, 1, 1}));
}

TEST(Shape, GeometryRoundTripsForManyShapes) {
  for (const char* text : {"1x1x1", "2x1x1", "1x2x1", "1x1x2", "2x2x2", "4x3x2", "3x5x7", "8x8x8",
                           "64x1x1", "1x64x3", "16x4x9", "7x1x13"}) {
    const Shape s = Shape::parse(text);
    EXPECT_EQ(s.to_string(), text);
    EXPECT_EQ(Shape::parse(s.to_string()), s);
    std::set<Coord> seen;
    for (NodeId id = 0; id < static_cast<NodeId>(s.node_count()); ++id) {
      const Coord c = s.coord(id);
      ASSERT_TRUE(s.contains(c)) << text << " id " << id;
      ASSERT_EQ(s.node_id(c), id) << text;
      ASSERT_EQ(static_cast<int>(id), c.x + s.extent(Dim::x) * (c.y + s.extent(Dim::y) * c.z));
      seen.insert(c);
    }
    EXPECT_EQ(static_cast<int>(seen.size()), s.node_count()) << text;
  }
}

TEST(Shape, ContainsChecksEveryBound) {
  const Shape s = Shape::parse("4x3x2");
  EXPECT_TRUE(s.contains({3, 2, 1}));
  EXPECT_FALSE(s.contains({4, 0, 0}));
  EXPECT_FALSE(s.contains({0, 3, 0}));
  EXPECT_FALSE(s.contains({0, 0, 2}));
  EXPECT_FALSE(s.contains({-1, 0, 0}));
  EXPECT_FALSE(s.contains({0, -1, 0}));
  EXPECT_FALSE(s.contains({0, 0, -1}));
}

TEST(Shape, TorusNeighboursWrapAround) {
  const Shape s = Shape::parse("4x4x2");
  const NodeId origin = s.node_id({0, 0, 0});
  EXPECT_EQ(at(s, *s.neighbour(origin, Direction::x_plus)), (Coord{1, 0, 0}));
  EXPECT_EQ(at(s, *s.neighbour(origin, Direction::x_minus)), (Coord{3, 0, 0}));
  EXPECT_EQ(at(s, *s.neighbour(origin, Direction::y_minus)), (Coord{0, 3, 0}));
  EXPECT_EQ(at(s, *s.neighbour(s.node_id({3, 3, 1}), Direction::x_plus)), (Coord{0, 3, 1}));
  EXPECT_EQ(at(s, *s.neighbour(s.node_id({3, 3, 1}), Direction::y_plus)), (Coord{3, 0, 1}));
  // Extent 2 torus: both ways along z reach the same node.
  EXPECT_EQ(at(s, *s.neighbour(origin, Direction::z_plus)), (Coord{0, 0, 1}));
  EXPECT_EQ(at(s, *s.neighbour(origin, Direction::z_minus)), (Coord{0, 0, 1}));
  EXPECT_EQ(at(s, *s.neighbour(s.node_id({2, 1, 1}), Direction::z_plus)), (Coord{2, 1, 0}));
}

TEST(Shape, MeshNeighboursStopAtTheEdge) {
  const Shape s = Shape::parse("4x4x3", "xz");
  const NodeId origin = s.node_id({0, 0, 0});
  EXPECT_FALSE(s.neighbour(origin, Direction::x_minus).has_value());
  EXPECT_FALSE(s.neighbour(origin, Direction::z_minus).has_value());
  EXPECT_EQ(at(s, *s.neighbour(origin, Direction::y_minus)), (Coord{0, 3, 0}));  // y is a torus
  const NodeId far = s.node_id({3, 1, 2});
  EXPECT_FALSE(s.neighbour(far, Direction::x_plus).has_value());
  EXPECT_FALSE(s.neighbour(far, Direction::z_plus).has_value());
  EXPECT_EQ(at(s, *s.neighbour(far, Direction::x_minus)), (Coord{2, 1, 2}));
  EXPECT_EQ(at(s, *s.neighbour(far, Direction::z_minus)), (Coord{3, 1, 1}));
}

TEST(Shape, ExtentOneHasNoLinksEvenOnATorus) {
  for (const char* mesh : {"", "xyz"}) {
    const Shape s = Shape::parse("1x1x1", mesh);
    for (Direction d : kAllDirections)
      EXPECT_FALSE(s.neighbour(0, d).has_value());
  }
  const Shape line = Shape::parse("5x1x1");
  for (NodeId n = 0; n < 5; ++n) {
    for (Direction d :
         {Direction::y_plus, Direction::y_minus, Direction::z_plus, Direction::z_minus}) {
      EXPECT_FALSE(line.neighbour(n, d).has_value());
    }
    EXPECT_TRUE(line.neighbour(n, Direction::x_plus).has_value());
  }
}

TEST(Shape, NeighbourRelationIsSymmetricAndStaysInOneDimension) {
  for (const char* mesh : {"", "x", "yz", "xyz"}) {
    const Shape s = Shape::parse("4x2x3", mesh);
    for (NodeId n = 0; n < static_cast<NodeId>(s.node_count()); ++n) {
      for (Direction d : kAllDirections) {
        const auto m = s.neighbour(n, d);
        if (!m) continue;
        ASSERT_LT(*m, static_cast<NodeId>(s.node_count()));
        EXPECT_EQ(s.neighbour(*m, opposite(d)), n) << s.to_string() << " node " << n;
        const Coord a = s.coord(n);
        const Coord b = s.coord(*m);
        for (Dim other : {Dim::x, Dim::y, Dim::z}) {
          if (other != dim_of(d)) {
            EXPECT_EQ(a[other], b[other]);
          }
        }
        EXPECT_NE(a[dim_of(d)], b[dim_of(d)]);
      }
    }
  }
}

TEST(Shape, MeshHasFewerLinksThanTorus) {
  // 4x4x1: a torus node has 4 links; a 4x4 mesh has 2 * (3*4) * 2 directed links in total.
  const auto links = [](const Shape& s) {
    int count = 0;
    for (NodeId n = 0; n < static_cast<NodeId>(s.node_count()); ++n) {
      for (Direction d : kAllDirections)
        count += s.neighbour(n, d).has_value() ? 1 : 0;
    }
    return count;
  };
  EXPECT_EQ(links(Shape::parse("4x4x1")), 16 * 4);
  EXPECT_EQ(links(Shape::parse("4x4x1", "xy")), 2 * 2 * 3 * 4);
}

}  // namespace
}  // namespace bgl::torus_emu
