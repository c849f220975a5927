"""The ASGI helpers of the HTTP server: request headers read once per value, the shared deadline timer."""

from __future__ import annotations

import asyncio

import pytest
from mcpgen.runtime.server.http import asgi
from mcpgen.runtime.server.http.asgi import BodyDeadline, BodyTimeout, Timers, headers_of


def test_headers_are_read_the_same_whether_seen_before_or_not() -> None:
    raw = [(b"Host", b" example.test "), (b"accept", b"application/json\t"), (b"x-list", b"a"), (b"x-list", b"b")]
    expected = {"host": "example.test", "accept": "application/json", "x-list": "a,b"}
    assert headers_of({"headers": raw}) == expected
    again = [(bytes(name), bytes(value)) for name, value in raw]  # equal values, other objects
    assert headers_of({"headers": again}) == expected
    assert headers_of({"headers": [[b"host", b"a"], (bytearray(b"Z"), b"q")]}) == {"host": "a", "z": "q"}
    assert headers_of({}) == {}


def test_credentials_and_long_values_are_never_kept_and_the_kept_ones_are_bounded() -> None:
    secret = (b"authorization", b"Bearer not-kept")
    long = (b"x-long", b"v" * 1000)
    assert headers_of({"headers": [secret, long]}) == {"authorization": "Bearer not-kept", "x-long": "v" * 1000}
    assert secret not in asgi._SEEN_HEADERS
    assert long not in asgi._SEEN_HEADERS
    for n in range(asgi._SEEN_MOST * 2):
        assert headers_of({"headers": [(b"x-n", b"%d" % n)]}) == {"x-n": str(n)}
        assert len(asgi._SEEN_HEADERS) <= asgi._SEEN_MOST


class _Entry:
    def __init__(self, name: str, served: list[str]) -> None:
        self.name, self.served = name, served

    def due(self) -> None:
        self.served.append(self.name)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_shared_timer_serves_due_deadlines_in_time_and_never_dropped_ones(anyio_backend: str) -> None:
    loop = asyncio.get_running_loop()
    timers = Timers(loop)
    served: list[str] = []
    late, early, dropped = _Entry("late", served), _Entry("early", served), _Entry("dropped", served)
    now = loop.time()
    timers.add(late, now + 0.2)
    timers.add(dropped, now + 0.01)  # sooner than the one the timer was set for: the timer moves
    timers.add(early, now + 0.05)
    timers.discard(dropped)
    waited = loop.create_future()
    loop.call_at(now + 0.1, waited.set_result, None)
    await waited
    assert served == ["early"]  # (the timer set for "dropped" found nothing due and was set for "early")
    done = loop.create_future()
    loop.call_at(now + 0.3, done.set_result, None)
    await done
    assert served == ["early", "late"]
    timers.add(_Entry("after close", served), loop.time())
    timers.close()
    await asyncio.sleep(0.01)
    assert served == ["early", "late"]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_body_past_its_deadline_raises_body_timeout_through_the_shared_timer(anyio_backend: str) -> None:
    timers = Timers(asyncio.get_running_loop())
    never = asyncio.Event()

    async def receive() -> dict[str, object]:
        await never.wait()
        raise AssertionError("unreachable")

    deadline = BodyDeadline(receive, 0.05, timers)
    with pytest.raises(BodyTimeout):
        await deadline()
    assert not timers._due  # the deadline was taken off once served

    async def whole() -> dict[str, object]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    assert (await BodyDeadline(whole, 0.05, timers)())["body"] == b"{}"
    assert not timers._due
