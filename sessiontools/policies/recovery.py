"""An agent's recovery rule after a rejected request, as state along a walk (`Recovery`).
Re-exported by `policies.base`."""

from __future__ import annotations

from typing import ClassVar


class Recovery:
    """An agent's recovery rule after the provider rejects a request as too long, as state along a
    walk: the walk (`replay.walk`) asks it, and only it, whether to compact and
    retry. Default: retry whenever the policy is reactive."""

    __slots__ = ("reactive", "tried")
    #: Its only state is `tried`, which `run_started` clears and `replied` clears or leaves by the stop
    #: reason alone, so a span of replies is a column of which clear it (`replay.walk_span`). Each
    #: class vouches for itself: a subclass that does not set it in its own body is not taken.
    clears_only: ClassVar[bool] = True

    def __init__(self, reactive: bool) -> None:
        self.reactive = reactive
        self.tried = False  # a recovery was attempted and nothing has re-armed it since

    def run_started(self) -> None:
        """A user message starts a run."""
        self.tried = False

    def replied(self, stop_reason: str | None) -> None:
        """The provider answered a request (`stop_reason` as recorded)."""
        self.tried = False

    def may_retry(self) -> bool:
        """Whether the agent compacts and retries after a rejection now."""
        return self.reactive

    def retrying(self) -> None:
        """The agent compacts and retries."""
        self.tried = True
