"""Typed events between agents: one pydantic model at the boundary,
so a malformed event is refused, never half-handled."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..engine.spec import NAME_RE
from ..errors import SherpaError

__all__ = ["MAX_PAYLOAD_BYTES", "Event", "EventError", "parse_event"]

MAX_PAYLOAD_BYTES = 256 * 1024
_MAX_ID = 200


class EventError(SherpaError):
    """An event is malformed (unknown field, wrong type, oversized payload); the message names the field."""

    def __init__(self, message: str, field: str | None = None):
        self.field = field
        super().__init__(message)


class Event(BaseModel):
    """What agents exchange: a name (a trigger for the receiver), a sender, a topic or a recipient, a payload.

    Every event belongs to a task: without a correlation id, the event's own id starts one.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(default_factory=lambda: uuid.uuid4().hex, min_length=1, max_length=_MAX_ID)
    name: str = Field(min_length=1, max_length=_MAX_ID)
    sender: str = Field(default="operator", max_length=_MAX_ID)
    topic: str | None = Field(default=None, min_length=1, max_length=_MAX_ID)
    recipient: str | None = Field(default=None, min_length=1, max_length=_MAX_ID)
    payload: dict[str, Any] = Field(default_factory=dict)
    timestamp: float = Field(default_factory=time.time)
    correlation_id: str | None = Field(default=None, min_length=1, max_length=_MAX_ID)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME_RE.match(value):
            raise ValueError(f"'{value}' is not a trigger name (letters, digits, _ and -, not starting with a digit)")
        return value

    @field_validator("payload")
    @classmethod
    def _payload_size(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            size = len(json.dumps(value, separators=(",", ":")).encode())
        except (TypeError, ValueError) as exc:
            raise ValueError(f"payload is not JSON-serialisable: {exc}") from None
        if size > MAX_PAYLOAD_BYTES:
            raise ValueError(
                f"payload is {size} bytes serialised; the limit is {MAX_PAYLOAD_BYTES} bytes (put large data "
                "in shared memory and send a reference)"
            )
        return value

    @model_validator(mode="after")
    def _routed_and_correlated(self) -> Event:
        if self.topic is None and self.recipient is None:
            raise ValueError("an event needs a topic or a recipient")
        if self.correlation_id is None:
            object.__setattr__(self, "correlation_id", self.id)
        return self

    def body(self) -> dict[str, Any]:
        """The JSON-ready dict: what goes on a wire, in a store row, and into the receiver's context as `event`."""
        return self.model_dump(mode="json")

    def to_json(self) -> str:
        return self.model_dump_json()


def parse_event(data: Any) -> Event:
    """An Event from a dict, JSON text or bytes; raises EventError naming the first bad field."""
    if isinstance(data, Event):
        return data
    if isinstance(data, (bytes, bytearray)):
        try:
            data = bytes(data).decode()
        except UnicodeDecodeError as exc:
            raise EventError(f"event is not UTF-8 text: {exc.reason}") from None
    if isinstance(data, str):
        if len(data) > MAX_PAYLOAD_BYTES * 2:
            raise EventError(
                f"event is {len(data)} characters; the limit is about {MAX_PAYLOAD_BYTES} bytes of payload", "payload"
            )
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise EventError(f"event is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise EventError(
            f"an event is a JSON object with name, topic or recipient, and payload; got {type(data).__name__}"
        )
    try:
        return Event.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        more = f" (and {len(exc.errors()) - 1} more problems)" if len(exc.errors()) > 1 else ""
        if err["type"] == "extra_forbidden":
            message = f"unknown field '{loc}' (fields: {', '.join(Event.model_fields)})"
        elif err["type"] == "missing":
            message = f"missing field '{loc}'"
        elif loc:
            message = f"field '{loc}': {err['msg']}"
        else:
            message = err["msg"].removeprefix("Value error, ")
        raise EventError(f"malformed event: {message.replace('Value error, ', '')}{more}", loc or None) from None
