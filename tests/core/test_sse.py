"""The SSE parser: the event-stream rules, whatever the chunking."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from mcpgen.runtime.core.sse import HEAD_CHARS, SseEvent, SseParser


def parse(stream: bytes, limit: int | None = None) -> tuple[list[SseEvent], SseParser]:
    parser = SseParser(limit)
    return parser.feed(stream), parser


def test_fields_of_one_event() -> None:
    events, parser = parse(b"event: note\nid: 7\nretry: 250\ndata: hello\n\n")
    assert events == [SseEvent("hello", "note", "7")]
    assert parser.last_event_id == "7" and parser.retry == 250


def test_multi_line_data_is_joined_with_newlines() -> None:
    events, _ = parse(b"data: first\ndata:second\ndata:  third\ndata\n\n")
    assert events == [SseEvent("first\nsecond\n third\n")]


def test_every_line_ending_works() -> None:
    for end in (b"\n", b"\r\n", b"\r"):
        events, _ = parse(b"data: a" + end + b"data: b" + end + end + b"data: c" + end + end)
        assert [e.data for e in events] == ["a\nb", "c"], end


def test_comments_and_unknown_fields_are_ignored() -> None:
    events, _ = parse(b": keep-alive\n:\nfoo: bar\ndata: x\n: between\n\n:\r\n")
    assert events == [SseEvent("x")]


def test_an_event_without_data_is_not_dispatched_but_its_id_counts() -> None:
    events, parser = parse(b"id: prime\n\nevent: nothing\n\n")
    assert events == [] and parser.last_event_id == "prime"


def test_the_priming_event_has_empty_data() -> None:
    events, parser = parse(b"id: event-1\nretry: 500\ndata: \n\n")
    assert events == [SseEvent("", id="event-1")] and parser.retry == 500


def test_the_last_event_id_persists_and_an_id_with_nul_is_ignored() -> None:
    events, parser = parse(b"id: 1\ndata: a\n\ndata: b\n\nid: x\x00y\ndata: c\n\nid\ndata: d\n\n")
    assert [(e.data, e.id) for e in events] == [("a", "1"), ("b", "1"), ("c", "1"), ("d", "")]
    assert parser.last_event_id == ""


def test_retry_must_be_digits() -> None:
    _, parser = parse(b"retry: 1.5\nretry: -3\nretry: soon\n\n")
    assert parser.retry is None
    _, parser = parse(b"retry: 0\n\n")
    assert parser.retry == 0


def test_a_leading_byte_order_mark_is_dropped_once() -> None:
    events, _ = parse(b"\xef\xbb\xbfdata: x\n\n")
    assert events == [SseEvent("x")]
    events, _ = parse(b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\n")
    assert events == [], "a second BOM is part of the field name"


def test_an_unfinished_event_at_the_end_is_not_dispatched() -> None:
    events, _ = parse(b"data: done\n\ndata: half")
    assert events == [SseEvent("done")]


def test_a_cr_at_a_chunk_boundary_ends_one_line() -> None:
    parser = SseParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\n\r") == [SseEvent("a")]
    assert parser.feed(b"\ndata: b\r\r") == [SseEvent("b")]


def test_utf8_split_across_chunks() -> None:
    data = "data: grüße 世界\n\n".encode()
    parser = SseParser()
    events = [e for i in range(len(data)) for e in parser.feed(data[i : i + 1])]
    assert events == [SseEvent("grüße 世界")]


def test_an_event_over_the_limit_keeps_its_head_and_the_next_is_whole() -> None:
    big = b'data: {"id": 3, "result": "' + b"x" * 5000 + b'"}\n\ndata: small\n\n'
    events, _ = parse(big, limit=1000)
    assert events[0].size_at_least > 1000
    assert events[0].data.startswith('{"id": 3') and len(events[0].data) <= HEAD_CHARS
    assert events[1] == SseEvent("small")


def test_many_data_lines_over_the_limit() -> None:
    stream = b"data: 0123456789\n" * 300 + b"\n" + b"data: after\n\n"
    parser = SseParser(1000)
    events = [e for i in range(0, len(stream), 7) for e in parser.feed(stream[i : i + 7])]
    assert events[0].size_at_least > 1000 and events[1] == SseEvent("after")


def test_a_line_that_never_ends_holds_no_more_than_the_limit() -> None:
    parser = SseParser(1000)
    parser.feed(b"data: ")
    for _ in range(1000):
        parser.feed(b"x" * 1000)
    assert len(parser._line) < 2000 + HEAD_CHARS  # bounded while the line goes on
    events = parser.feed(b"\n\n")
    assert events[0].size_at_least >= 1_000_000 and events[0].data == "x" * HEAD_CHARS


messages = st.lists(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x00"), max_size=30),
    max_size=4,
)
ends = st.sampled_from(["\n", "\r\n", "\r"])


@given(
    st.lists(st.tuples(messages, st.one_of(st.none(), st.text(alphabet="abc123", max_size=5)), ends), max_size=6),
    st.lists(st.integers(min_value=1, max_value=17), min_size=1, max_size=30),
)
def test_any_chunking_gives_the_same_events(events: list[tuple[list[str], str | None, str]], cuts: list[int]) -> None:
    text = ""
    expected = []
    last_id = None
    for lines, event_id, end in events:
        if event_id is not None:
            text += f"id: {event_id}{end}"
            last_id = event_id
        text += "".join(f"data: {line}{end}" for line in lines)
        text += end
        if lines:
            expected.append(SseEvent("\n".join(lines), id=last_id))
    data = text.encode()
    parser = SseParser()
    got: list[SseEvent] = []
    position, index = 0, 0
    while position < len(data):
        size = cuts[index % len(cuts)]
        got += parser.feed(data[position : position + size])
        position += size
        index += 1
    assert got == expected
    assert parser.last_event_id == last_id
