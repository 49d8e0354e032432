"""The project's fake Slack with a 429 storm: for a while, a share of all Web API calls is
answered HTTP 429 with `Retry-After`, on top of the fake's own per-channel pacing. Every 429
answered (storm or pacing) is recorded, so the time clients were told to wait can be summed."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from playground.fake_slack import FakeSlack
from playground.fake_slack_messages import JSON


@dataclass(frozen=True)
class RateLimited:
    at: float
    method: str
    retry_after_s: int
    storm: bool  # False: the fake's one-post-a-second-per-channel pacing


class StormySlack(FakeSlack):
    def __init__(self, token: str, post_interval: float = 1.0, seed: int = 0) -> None:
        super().__init__(token=token, post_interval=post_interval)
        self.rng = random.Random(seed)
        self.limited: list[RateLimited] = []
        self._storm_until = 0.0
        self._storm_share = 0.0
        self._storm_retry_after = 1

    def storm(self, duration_s: float, share: float, retry_after_s: int) -> None:
        """From now on for `duration_s`, answer `share` of all calls with 429."""
        self._storm_until = time.monotonic() + duration_s
        self._storm_share = share
        self._storm_retry_after = retry_after_s

    @property
    def storming(self) -> bool:
        return time.monotonic() < self._storm_until

    def _ratelimited(self, method: str, params: JSON) -> int | None:
        paced = super()._ratelimited(method, params)
        if paced is not None:
            self.limited.append(RateLimited(time.time(), method, paced, storm=False))
            return paced
        if self.storming and self.rng.random() < self._storm_share:
            self.limited.append(RateLimited(time.time(), method, self._storm_retry_after,
                                            storm=True))
            return self._storm_retry_after
        return None
