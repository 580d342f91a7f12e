"""Which GPUs are busy when: the first-fit placement every run of the layout goes through."""

from __future__ import annotations

from fleetledger.generator.model import Node


class Calendar:
    """Which GPUs are busy when: a tiny first-fit scheduler over per-GPU busy intervals."""

    def __init__(self, nodes: list[Node]):
        self.gpus: dict[str, int] = {}
        self.busy: dict[tuple[str, int], list[tuple[int, int]]] = {}
        for n in nodes:
            self.add(n)

    def add(self, node: Node) -> None:
        """A node joins the fleet with all its GPUs free."""
        self.gpus[node.host] = node.gpus
        self.busy.update({(node.host, g): [] for g in range(node.gpus)})

    def free(self, host: str, gpu: int, a: int, b: int) -> bool:
        return all(e <= a or s >= b for s, e in self.busy[(host, gpu)])

    def reserve(self, host: str, gpus: list[int], a: int, b: int) -> None:
        for g in gpus:
            if not self.free(host, g, a, b):
                raise ValueError(f"GPU {host}:{g} is already busy in [{a}, {b})")
            self.busy[(host, g)].append((a, b))

    def place(
        self, hosts: list[str], k: int, earliest: int, dur: int
    ) -> tuple[int, str, list[int]]:
        """Earliest (start, host, gpu indices) where k GPUs of one host are free for dur."""
        best: tuple[int, str, list[int]] | None = None
        for host in hosts:
            cands = {earliest}
            for g in range(self.gpus[host]):
                cands.update(e for _, e in self.busy[(host, g)] if e > earliest)
            for t in sorted(cands):
                if best is not None and t >= best[0]:
                    break
                free = [g for g in range(self.gpus[host]) if self.free(host, g, t, t + dur)]
                if len(free) >= k:
                    best = (t, host, free[:k])
                    break
        assert best is not None
        return best
