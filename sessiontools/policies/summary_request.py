"""The request shape of an agent that sends its own Responses call to summarise (`resummarize`):
agent-free, so that the endpoint sends any agent's the same way (`endpoint.client`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ResponsesRequest:
    """A request an agent sends as a Responses call, whatever `--api` says: its own body (the model
    is replaced by the configured one) and headers, to ENDPOINT/responses, streamed. A chat request
    (anything else: `system`, `user`, `max_tokens`) goes in `--api`'s format."""

    body: Mapping[str, Any]
    headers: Mapping[str, str]
