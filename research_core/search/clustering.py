"""Grouping passages by what they are about: agglomerative clustering with average linkage
(group-average clustering; Manning, Raghavan & Schütze, *Introduction to Information
Retrieval*, 2008, ch. 17) over the embedder's cosines, the dendrogram cut at `k` clusters, and
each cluster's medoid (the member most similar to the others) as its representative. Two
clusters at least `alike` similar merge below the cut too: two copies of one report are one
cluster, however few clusters there are.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

Matrix = Sequence[Sequence[float]]


def average_link(sims: Matrix, k: int, alike: float = 1.0) -> list[list[int]]:
    """The indices of `sims` (a square similarity matrix) in at most `k` clusters (fewer
    where some are `alike`), each in index order, clusters in the order of their first
    member."""
    clusters = [[i] for i in range(len(sims))]
    while len(clusters) > 1:
        link, a, b = max((_link(sims, x, y), i, j)
                         for (i, x), (j, y) in combinations(enumerate(clusters), 2))
        if len(clusters) <= k and link < alike:
            break
        clusters[a] = sorted(clusters[a] + clusters.pop(b))
    return sorted(clusters)


def _link(sims: Matrix, a: list[int], b: list[int]) -> float:
    return sum(sims[i][j] for i in a for j in b) / (len(a) * len(b))


def medoid(sims: Matrix, members: list[int]) -> int:
    """The member most similar to the cluster's others (the first of equals)."""
    return max(members, key=lambda i: (sum(sims[i][j] for j in members if j != i), -i))
