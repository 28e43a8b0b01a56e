"""Journey: with Streamlit's OIDC sign-in configured, reports and datasets belong to the
signed-in user.

A local OpenID Connect provider (oidc-provider-mock, on 127.0.0.1 only) signs in two
users through its login form in Chromium; the app is served with a secrets.toml of its
own (``--secrets.files``) that points Streamlit's ``[auth]`` at that provider. Alice
makes a report; Bob can open its presentation link read-only but cannot rename, edit or
delete it; once Alice marks it private, Bob's link shows nothing of it. Alice loads a
dataset; Bob uses it but cannot rename, delete or replace it; Alice deletes it. Nobody
signed in sees a sign-in button instead of any report, and is asked to sign in before
uploading. (One journey, so each user signs in once.)
"""

import secrets
import subprocess
import sys

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import _free_port, _serve, stop, wait_for
from tests.e2e.helpers import no_errors, shot, wait_idle
from tests.e2e.test_journey_dataset_owner import cannot_change, delete, load, upload
from ulr.data import catalog
from ulr.report import saved as reports
from ulr.simulate import obd_like_log

pytest.importorskip("authlib", reason="Streamlit's st.login needs Authlib")
pytest.importorskip("oidc_provider_mock", reason="the local OIDC provider")


@pytest.fixture(scope="module")
def provider():
    """The mock OIDC provider on a free 127.0.0.1 port; its issuer URL."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "oidc_provider_mock", "--host", "127.0.0.1",
                             "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    issuer = f"http://127.0.0.1:{port}"
    try:
        wait_for(issuer + "/.well-known/openid-configuration", proc, "the OIDC provider",
                 timeout=30)
        yield issuer
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def auth_app(provider, tmp_path_factory):
    """The app served with ``[auth]`` pointing at the provider (secrets in a temp folder)."""
    path = tmp_path_factory.mktemp("oidc") / "secrets.toml"
    path.write_text(
        "[auth]\n"
        'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        f'cookie_secret = "{secrets.token_hex(32)}"\n'
        'client_id = "ulr-e2e"\n'
        f'client_secret = "{secrets.token_hex(16)}"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n',
        encoding="utf-8")
    yield from _serve("--secrets.files", str(path))


def sign_in(browser, url, user):
    """A new browser signed in as ``user`` through the provider's login form."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    page.set_default_timeout(30_000)
    page.goto(url + "/report")
    wait_idle(page)
    expect(page.get_by_text("Sign in to make, open and present reports.")).to_be_visible()
    page.locator('[data-testid="stMain"]').get_by_role("button", name="Sign in").click()
    page.locator("input[name=sub]").fill(user)  # the provider's form
    page.get_by_role("button", name="Authorize", exact=True).click()
    page.wait_for_url(url + "/**")
    wait_idle(page)
    expect(page.locator('[data-testid="stSidebar"]').get_by_text(f"Signed in as {user}")
           ).to_be_visible()
    return ctx, page


def test_only_the_signed_in_owner_changes_a_report_or_a_dataset(browser, auth_app, provider,
                                                                tmp_path):
    alice_ctx, alice = sign_in(browser, auth_app, "alice@example.com")
    bob_ctx, bob = sign_in(browser, auth_app, "bob@example.com")
    anon_ctx = browser.new_context()
    try:
        alice.goto(auth_app + "/data")
        wait_idle(alice)
        alice.get_by_role("button", name="Add to report").click()
        expect(alice.get_by_text("to the report (1 item)")).to_be_visible()
        alice.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Report").click()
        wait_idle(alice)
        name = alice.get_by_role("textbox", name="Report name")
        name.fill("Alice findings")
        name.press("Enter")
        wait_idle(alice)
        rid = reports.latest(actor=f"oidc:{provider}|alice@example.com", db=auth_app.db).id
        assert reports.get_info(rid, actor=reports.OPERATOR, db=auth_app.db).name == \
            "Alice findings"

        # Bob: the report page is read-only for him ...
        bob.goto(auth_app + f"/report?report={rid}")
        wait_idle(bob)
        expect(bob.get_by_text("belongs to someone else")).to_be_visible()
        expect(bob.get_by_role("textbox", name="Report name")).to_have_value("Alice findings")
        expect(bob.get_by_role("textbox", name="Report name")).to_be_disabled()
        expect(bob.get_by_role("textbox", name="Title", exact=True)).to_be_disabled()
        bob.get_by_role("button", name="Item actions").first.click()  # the item's menu
        expect(bob.get_by_role("button", name="Remove")).to_be_disabled()
        bob.keyboard.press("Escape")
        expect(bob.get_by_role("button", name="Delete report")).to_be_disabled()
        expect(bob.get_by_role("checkbox", name="Yes, delete this report")).to_be_disabled()
        shot(bob, "oidc_non_owner_report")
        # ... and the presentation link shows him the slides
        bob.goto(auth_app + f"/present?report={rid}")
        wait_idle(bob)
        deck = bob.frame_locator("iframe").first
        expect(deck.locator("body")).to_contain_text("Alice findings")
        expect(deck.locator("body")).to_contain_text("CTR by position")
        assert no_errors(bob) == []

        # nobody signed in: no report, a sign-in button
        anon = anon_ctx.new_page()
        anon.goto(auth_app + f"/present?report={rid}")
        wait_idle(anon)
        expect(anon.get_by_text("Sign in to see this presentation.")).to_be_visible()
        expect(anon.locator("iframe")).to_have_count(0)

        # Alice makes it private: Bob's link now shows nothing of it
        alice.get_by_text("Private: only I can open it").click()  # the label: the box is hidden
        expect(alice.get_by_role("checkbox", name="Private: only I can open it")).to_be_checked()
        wait_idle(alice)
        assert reports.get_info(rid, actor=reports.OPERATOR, db=auth_app.db).private
        bob.reload()
        wait_idle(bob)
        expect(bob.get_by_text("does not exist here or is private")).to_be_visible()
        expect(bob.locator("body")).not_to_contain_text("Alice findings")
        assert no_errors(alice) == []

        # a dataset belongs to whoever loaded it, as a report does
        path = tmp_path / "slots.csv"
        obd_like_log(impressions=200, items=12, row_timestamps=True).to_csv(path, index=False)
        upload(alice, auth_app, path, "alice signed")
        load(alice, "alice signed")
        info = catalog.get_dataset(catalog.cursor(auth_app.db), "alice signed")
        assert info.owner == f"oidc:{provider}|alice@example.com"
        cannot_change(bob, auth_app, path, "alice signed")
        anon.goto(auth_app + "/data")
        wait_idle(anon)
        anon.get_by_text("Upload a click log", exact=True).click()
        expect(anon.get_by_text("Sign in to upload a click log", exact=False)).to_be_visible()
        expect(anon.locator('input[type="file"]')).to_have_count(0)
        delete(alice, auth_app, "alice signed")
        assert "alice signed" not in [
            d.name for d in catalog.list_datasets(catalog.cursor(auth_app.db))]
        assert no_errors(alice) == [] and no_errors(bob) == []
    finally:
        for ctx in (alice_ctx, bob_ctx, anon_ctx):
            ctx.close()
    info = reports.get_info(rid, actor=reports.OPERATOR, db=auth_app.db)
    assert (info.name, info.items) == ("Alice findings", 1)
    assert info.owner == f"oidc:{provider}|alice@example.com"
