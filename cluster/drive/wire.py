"""Kafka's wire protocol, spoken with Kafka's own classes: a request is a generated ``*RequestData``
of the release's kafka-clients jar, serialised with its header by ``RequestUtils``, and a response is
parsed by ``AbstractResponse.parseResponse`` into its ``*ResponseData``. kmc only frames them (a
4-byte size, then the bytes) and picks each API's version from the broker's ApiVersions answer.

A request can be sent and its answer collected later (``send`` / ``receive``), which is how a
JoinGroup the coordinator parks until the rebalance completes is held while other requests go on.
Every wait is bounded.
"""

from __future__ import annotations

import select
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from kmc.checker.errors import UserError
from kmc.oracles import jvm

CONNECT_TIMEOUT_S = 10.0
RESPONSE_TIMEOUT_S = 15.0
CLIENT_ID = "kmc-drive"


class BrokerGoneError(Exception):
    """The broker closed the connection or did not answer in time."""


def java(name: str) -> Any:
    return jvm.jclass(name)


def api_key(name: str) -> Any:
    """An ``ApiKeys`` constant by its name (``CONSUMER_GROUP_HEARTBEAT``)."""
    return getattr(java("org.apache.kafka.common.protocol.ApiKeys"), name)


def message(name: str) -> Any:
    """A new generated message of the release (``ConsumerGroupHeartbeatRequestData``)."""
    return java(f"org.apache.kafka.common.message.{name}")()


def java_ints(values: Any) -> Any:
    """A java.util.List<Integer> (a Python int would go in as a Long)."""
    integer = java("java.lang.Integer")
    return java_list([integer(int(v)) for v in values])


def java_list(values: Any) -> Any:
    array_list = java("java.util.ArrayList")()
    for value in values:
        array_list.add(value)
    return array_list


@dataclass
class Connection:
    """One client connection to one broker, its API versions negotiated when it opens."""

    host: str
    port: int
    pinned_versions: dict[str, int] = field(default_factory=dict)
    """Versions the caller fixes (an API's newest version may mean another protocol)."""
    sock: socket.socket | None = None
    versions: dict[int, tuple[int, int]] = field(default_factory=dict)
    _next_correlation: int = 0
    _sent: dict[int, Any] = field(default_factory=dict)
    _answers: dict[int, Any] = field(default_factory=dict)

    @classmethod
    def open(cls, address: str, pinned_versions: dict[str, int] | None = None) -> Connection:
        host, _, port = address.rpartition(":")
        conn = cls(host, int(port), dict(pinned_versions or {}))
        try:
            conn.sock = socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S)
        except OSError as exc:
            raise BrokerGoneError(f"cannot connect to the broker at {address}: {exc}") from None
        answer = conn.call("API_VERSIONS", message("ApiVersionsRequestData"), version=0)
        if answer.errorCode() != 0:
            raise BrokerGoneError(f"the broker at {address} refused ApiVersions (error {answer.errorCode()})")
        conn.versions = {int(k.apiKey()): (int(k.minVersion()), int(k.maxVersion())) for k in answer.apiKeys()}
        return conn

    def version(self, api: str) -> int:
        """The version to speak: the one pinned, else the newest both sides know."""
        key = api_key(api)
        span = self.versions.get(int(key.id))
        if span is None:
            raise UserError(f"the broker does not support {api}: its release cannot run this step")
        pinned = self.pinned_versions.get(api)
        if pinned is not None:
            if not span[0] <= pinned <= span[1]:
                raise UserError(f"the broker speaks {api} versions {span[0]}-{span[1]}, not {pinned}")
            return pinned
        return min(span[1], int(key.latestVersion()))

    def send(self, api: str, data: Any, version: int | None = None) -> int:
        """Send a request; return its correlation id for ``receive``."""
        if self.sock is None:
            raise BrokerGoneError("the connection is closed")
        self._next_correlation += 1
        correlation = self._next_correlation
        chosen = self.version(api) if version is None else version
        header = java("org.apache.kafka.common.requests.RequestHeader")(api_key(api), chosen, CLIENT_ID, correlation)
        buffer = java("org.apache.kafka.common.requests.RequestUtils").serialize(
            header.data(), header.headerVersion(), data, chosen
        )
        payload = bytes(buffer.array()[buffer.arrayOffset() : buffer.arrayOffset() + buffer.limit()])
        try:
            self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        except OSError as exc:
            raise BrokerGoneError(f"the broker at {self.host}:{self.port} closed the connection: {exc}") from None
        self._sent[correlation] = header
        return correlation

    def receive(self, correlation: int, timeout_s: float = RESPONSE_TIMEOUT_S) -> Any:
        """The response to one request sent earlier; answers to others are kept for their turn."""
        deadline = time.monotonic() + timeout_s
        while correlation not in self._answers:
            self._read_one(deadline)
        return self._answers.pop(correlation)

    def ready(self, correlation: int) -> bool:
        """Whether the answer to a request has arrived (without waiting)."""
        while correlation not in self._answers and self.sock is not None:
            readable, _, _ = select.select([self.sock], [], [], 0)
            if not readable:
                break
            self._read_one(time.monotonic() + RESPONSE_TIMEOUT_S)
        return correlation in self._answers

    def call(self, api: str, data: Any, version: int | None = None, timeout_s: float = RESPONSE_TIMEOUT_S) -> Any:
        return self.receive(self.send(api, data, version), timeout_s)

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def _read_one(self, deadline: float) -> None:
        size = struct.unpack(">i", self._read_exactly(4, deadline))[0]
        body = self._read_exactly(size, deadline)
        correlation = struct.unpack(">i", body[:4])[0]
        header = self._sent.pop(correlation, None)
        if header is None:
            raise BrokerGoneError(f"the broker answered a request never sent (correlation id {correlation})")
        buffer = java("java.nio.ByteBuffer").wrap(body)
        response = java("org.apache.kafka.common.requests.AbstractResponse").parseResponse(buffer, header)
        self._answers[correlation] = response.data()

    def _read_exactly(self, count: int, deadline: float) -> bytes:
        assert self.sock is not None
        chunks = bytearray()
        while len(chunks) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrokerGoneError(f"the broker at {self.host}:{self.port} did not answer in time")
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(count - len(chunks))
            except TimeoutError:
                continue
            except OSError as exc:
                raise BrokerGoneError(f"the connection to {self.host}:{self.port} failed: {exc}") from None
            if not chunk:
                raise BrokerGoneError(f"the broker at {self.host}:{self.port} closed the connection")
            chunks += chunk
        return bytes(chunks)


def error_name(code: int) -> str:
    """Kafka's name of an error code (``FENCED_MEMBER_EPOCH``)."""
    return str(java("org.apache.kafka.common.protocol.Errors").forCode(code).name())
