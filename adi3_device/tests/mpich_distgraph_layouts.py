#!/usr/bin/env python3
"""Why placing distributed graphs cannot be the default while MPICH's topo tests pass.

MPICH's topo/dgraph_unwgt and topo/distgraph1 run on 4 ranks and read the neighbours of the
communicator made with reorder = 1 in MPI_COMM_WORLD's numbering. This prints, for bglrun's
default 4-task partitions (2x2x1 heater, 2x1x1 VN, mapping XYZT), the torus hops of their graphs
under the identity and under the best of all 24 renamings, and for dgraph_unwgt's ring the
renamings its check accepts and what they cost. distgraph1's random layouts are rebuilt with
glibc's rand(), as the test does. (adi3_device/README.md, "Why placing distributed graphs is not
the default".)
"""
import ctypes
import itertools

N = 4
libc = ctypes.CDLL("libc.so.6")
RAND_MAX = 2147483647


def hops_heater(a, b):  # 2x2x1: rank r at (r % 2, r // 2)
    return abs(a % 2 - b % 2) + abs(a // 2 - b // 2)


def hops_vn(a, b):  # 2x1x1 in VN mode: rank r on node r % 2, t = r // 2
    return abs(a % 2 - b % 2)


def cost(edges, place, hops):  # place[graph node] = world rank that plays it
    return sum(hops(place[u], place[v]) for u, v in edges)


def distgraph1_layouts():
    """distgraph1.c's create_graph_layout(0..9) as rank 0 builds and broadcasts them."""
    for g in range(10):
        lay = [[0] * N for _ in range(N)]
        if g == 0:
            lay = [[(i + 2) * (j + 1) for j in range(N)] for i in range(N)]
        elif g == 1:
            lay = [[(i + 2) * (j + 1) if j % 2 else 0 for j in range(N)] for i in range(N)]
        elif g == 2:
            lay[0][0] = 10  # "only self-edges", built by rank 0
        elif g >= 4:
            libc.srand(g)
            for i in range(N):
                for j in range(N):
                    if libc.rand() * 1.0 / RAND_MAX < 0.33:
                        lay[i][j] = 0
                    else:
                        lay[i][j] = libc.rand() % 100
        yield g, lay


def main():
    perms = list(itertools.permutations(range(N)))
    ring = [(w, (w + s) % N) for w in range(N) for s in (-1, 1)]
    for name, hops in (("heater 2x2x1", hops_heater), ("vn 2x1x1", hops_vn)):
        print(name)
        best = min(cost(ring, p, hops) for p in perms)
        # new_rank_of[w]: dgraph_unwgt accepts it iff every declared neighbour w+-1 gets a new
        # rank that is again a world neighbour of w
        accepted = [q for q in perms
                    if all({q[(w - 1) % N], q[(w + 1) % N]} <= {(w - 1) % N, (w + 1) % N}
                           for w in range(N))]
        costs = sorted({cost(ring, [q.index(j) for j in range(N)], hops) for q in accepted})
        print(f"  dgraph_unwgt ring: identity {cost(ring, list(range(N)), hops)}, best {best}; "
              f"{len(accepted)} renamings pass its check, costing {costs}")
        for g, lay in distgraph1_layouts():
            edges = [(i, j) for i in range(N) for j in range(N) if lay[i][j] and i != j]
            ident = cost(edges, list(range(N)), hops)
            best = min(cost(edges, p, hops) for p in perms)
            print(f"  distgraph1 layout {g}: {len(edges)} edges, identity {ident} hops, "
                  f"best {best}{'  <- placement renames' if best < ident else ''}")


if __name__ == "__main__":
    main()
