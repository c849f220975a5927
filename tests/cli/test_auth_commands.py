"""`mcpgen inspect --url` and `mcpgen call --url` against a protected mcpgen server: they sign in
with OAuth when the server asks (the browser step replaced by a headless redirect handler, since
the test authorization server redirects at once), keep the tokens in an owner-only file under the
user's configuration folder for the next command, and `--no-auth` refuses to authorize."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcpgen.codegen.cli import main
from mcpgen.runtime import RequestContext, Server
from mcpgen.runtime.auth import AuthInfo, HeadlessRedirectHandler, RedirectHandler
from mcpgen.runtime.cli import commands as cli
from support.auth_served import Deployment, deployed_in_thread


def make_server() -> Server:
    server = Server("protected-cli")

    @server.tool()
    def whoami(ctx: RequestContext) -> str:
        assert isinstance(ctx.auth, AuthInfo)
        return f"hello {ctx.auth.subject}"

    return server


@pytest.fixture
def site(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Deployment]:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr(cli, "redirect_handler", headless)
    with deployed_in_thread(make_server(), scopes_supported=["notes:read"]) as deployment:
        yield deployment


def headless() -> RedirectHandler:
    return HeadlessRedirectHandler()


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_call_signs_in_when_asked_and_the_next_command_reuses_the_tokens(site: Deployment, tmp_path: Path) -> None:
    code, out = run("call", "whoami", "--url", site.url)
    assert (code, out.strip()) == (0, "hello user-1")
    assert len(site.auth_server.seen("/authorize")) == 1

    tokens = tmp_path / "config" / "mcpgen" / "tokens.json"
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    assert site.url in json.loads(tokens.read_text())["tokens"]

    code, out = run("inspect", "--json", "--url", site.url)
    assert code == 0, out
    assert [t["name"] for t in json.loads(out)["tools"]] == ["whoami"]
    assert len(site.auth_server.seen("/authorize")) == 1, "the stored tokens served the second command"


def test_no_auth_refuses_to_authorize(site: Deployment) -> None:
    code, out = run("call", "whoami", "--no-auth", "--url", site.url)
    assert code == 1
    assert "requires authorization (HTTP 401); run without --no-auth to sign in" in out
    assert site.auth_server.seen("/authorize") == []


def test_a_failed_sign_in_is_one_clear_line(site: Deployment) -> None:
    site.auth_server.iss_mode = "wrong"  # the redirect names another issuer: a mix-up attack
    code, out = run("inspect", "--url", site.url)
    assert code == 1
    assert out.startswith("Error: authorization failed: AuthorizationResponseError:"), out
    assert len(out.strip().splitlines()) == 1
    assert site.auth_server.grants("authorization_code") == [], "no code was redeemed"


def test_logout_revokes_and_forgets_the_kept_tokens(site: Deployment, tmp_path: Path) -> None:
    assert run("call", "whoami", "--url", site.url)[0] == 0
    tokens = tmp_path / "config" / "mcpgen" / "tokens.json"
    kept = json.loads(tokens.read_text())["tokens"][site.url]
    code, out = run("logout", "--url", site.url)
    assert (code, out.strip()) == (0, f"signed out of {site.url}: the tokens were revoked and forgotten")
    assert site.url not in json.loads(tokens.read_text())["tokens"]
    revoked = [r.form()["token"] for r in site.auth_server.seen("/revoke")]
    assert revoked == [kept["refresh_token"], kept["access_token"]]
    assert run("logout", "--url", site.url) == (0, f"no sign-in was kept for {site.url}\n")
    assert run("call", "whoami", "--url", site.url)[0] == 0
    assert len(site.auth_server.seen("/authorize")) == 2, "signed out: the next command signs in again"
