"""`redsearch usage [--user U] [--channel C] [--all]`: what each user and channel has used this
day and this month (every period with --all), against the caps of the policy file
(RED_POLICY_FILE), read from the store (DATABASE_URL or the SQLite file in RED_DATA_DIR)."""

from __future__ import annotations

from research_core.budget.caps import amount
from research_core.policy import MEASURES, Caps, Policy
from research_core.settings import Settings
from research_core.store.sql import SqlStore
from research_core.store.usage import UsageLine, UsageStore

HEAD = f"{'scope':<8}{'key':<16}{'period':<16}{'runs':>6}{'tokens':>12}{'cost $':>11}  caps"


async def run_usage(user: str | None, channel: str | None, every_period: bool = False,
                    settings: Settings | None = None) -> int:
    settings = settings or Settings.from_env()
    store = await SqlStore.open(settings.db_url, settings.db_origin)
    try:
        lines = await UsageStore(store).lines(user, channel, current_only=not every_period)
    finally:
        await store.close()
    print(render(lines, settings.policy))
    return 0


def render(lines: list[UsageLine], policy: Policy) -> str:
    if not lines:
        return "no usage recorded"
    rows = [HEAD]
    for line in lines:
        u = line.usage
        rows.append(f"{line.scope:<8}{line.key:<16}{line.period:<16}{u.runs:>6}"
                    f"{u.tokens:>12,}{u.cost_usd:>11.4f}  {_caps(policy.caps, line)}")
    return "\n".join(rows)


def _caps(caps: Caps, line: UsageLine) -> str:
    limits = caps.limits(line.scope, "day" if line.period.startswith("day:") else "month")
    shown = [amount(m, cap) for m in MEASURES if (cap := limits.cap(m)) is not None]
    return ", ".join(shown) or "none"
