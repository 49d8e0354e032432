"""The token ledger: one row per model call, and the per-tier table a run ends with."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from research_core.settings import TierSettings


@dataclass(frozen=True)
class LedgerEntry:
    seq: int
    tier: str
    model: str
    purpose: str
    step: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    outcome: str = "ok"


@dataclass(frozen=True)
class TierTotals:
    tier: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class Ledger:
    prices: dict[str, TierSettings]
    entries: list[LedgerEntry] = field(default_factory=list)

    def record(self, tier: str, model: str, purpose: str, step: int,
               tokens: tuple[int, int], outcome: str = "ok") -> LedgerEntry:
        prompt, completion = tokens
        price = self.prices.get(tier, TierSettings())
        cost = (prompt * price.price_in_per_mtok + completion * price.price_out_per_mtok) / 1e6
        entry = LedgerEntry(
            seq=len(self.entries) + 1, tier=tier, model=model, purpose=purpose, step=step,
            prompt_tokens=prompt, completion_tokens=completion, cost_usd=cost, outcome=outcome,
        )
        self.entries.append(entry)
        return entry

    def mark_last(self, outcome: str) -> None:
        """Note that the last call's output was unusable (its tokens were still spent)."""
        self.entries[-1] = replace(self.entries[-1], outcome=outcome)

    def by_purpose(self) -> dict[str, tuple[int, int]]:
        """Per call kind: the calls made and how many replies were accepted."""
        out: dict[str, tuple[int, int]] = {}
        for e in self.entries:
            made, accepted = out.get(e.purpose, (0, 0))
            out[e.purpose] = (made + 1, accepted + (e.outcome == "ok"))
        return out

    def totals(self) -> list[TierTotals]:
        tiers = sorted({e.tier for e in self.entries}, key=_tier_order)
        return [self._tier_totals(t) for t in tiers]

    def _tier_totals(self, tier: str) -> TierTotals:
        rows = [e for e in self.entries if e.tier == tier]
        return TierTotals(
            tier=tier, calls=len(rows),
            prompt_tokens=sum(e.prompt_tokens for e in rows),
            completion_tokens=sum(e.completion_tokens for e in rows),
            cost_usd=sum(e.cost_usd for e in rows),
        )

    def table(self) -> str:
        """The per-tier table (calls, tokens, cost), plus a total row."""
        head = (f"{'tier':<10}{'calls':>7}{'prompt':>10}{'completion':>12}"
                f"{'total':>10}{'cost $':>10}")
        rows = [head]
        for t in self.totals():
            rows.append(_row(t.tier, t.calls, t.prompt_tokens, t.completion_tokens, t.cost_usd))
        all_ = self.totals()
        rows.append(_row(
            "TOTAL", sum(t.calls for t in all_), sum(t.prompt_tokens for t in all_),
            sum(t.completion_tokens for t in all_), sum(t.cost_usd for t in all_),
        ))
        return "\n".join(rows)


def _row(name: str, calls: int, prompt: int, completion: int, cost: float) -> str:
    total = prompt + completion
    return f"{name:<10}{calls:>7}{prompt:>10}{completion:>12}{total:>10}{cost:>10.4f}"


def _tier_order(tier: str) -> tuple[int, str]:
    order = {"planner": 0, "executor": 1, "reporter": 2}
    return (order.get(tier, 9), tier)
