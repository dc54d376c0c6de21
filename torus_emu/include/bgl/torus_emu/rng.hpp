#pragma once
#include <cstdint>

namespace bgl::torus_emu {

// xoshiro-style small fast generator for adaptive routing choices: per task, never shared.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed ? seed : 0x9e3779b97f4a7c15ULL) {}
  std::uint64_t next() {
    // splitmix64: good enough statistical quality for route choices, one multiply-xorshift chain.
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) for small n (bias is negligible for n <= 3).
  unsigned below(unsigned n) { return static_cast<unsigned>((next() >> 32) * n >> 32); }

 private:
  std::uint64_t state_;
};

}  // namespace bgl::torus_emu
