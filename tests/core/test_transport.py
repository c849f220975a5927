"""`TransportContext`: a value handlers and transports share, so it stays immutable."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest
from mcpgen.runtime.core.transport import TransportContext


def made() -> TransportContext:
    return TransportContext("http", headers={"host": "example.test"}, auth="alice", request_scoped=True)


def test_its_fields_are_what_it_was_built_with() -> None:
    context = made()
    assert (context.kind, context.headers, context.auth) == ("http", {"host": "example.test"}, "alice")
    assert (context.can_send_request, context.reply, context.request_scoped) == (True, None, True)
    assert TransportContext("stdio") == TransportContext(kind="stdio", can_send_request=True)


@pytest.mark.parametrize("name", [field.name for field in dataclasses.fields(TransportContext)])
def test_a_field_can_be_neither_assigned_nor_deleted(name: str) -> None:
    context = made()
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(context, name, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(context, name)
    assert context == made()


def test_replace_copy_and_pickle_give_equal_or_changed_values() -> None:
    context = made()
    changed = dataclasses.replace(context, auth="bob")
    assert changed.auth == "bob" and context.auth == "alice"
    assert copy.copy(context) == context and copy.deepcopy(context) == context
    assert pickle.loads(pickle.dumps(context)) == context


def test_a_context_without_headers_is_hashable_by_value() -> None:
    assert hash(TransportContext("stdio")) == hash(TransportContext("stdio"))
    assert {TransportContext("stdio"), TransportContext("stdio")} == {TransportContext("stdio")}
