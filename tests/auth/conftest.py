"""The authorization tests: the in-process world of `support.auth_env`, fresh for each test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from support.auth_env import Env


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    environment = Env()
    async with environment.http:
        yield environment
