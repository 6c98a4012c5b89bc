"""Guests in Chromium: signing out warns first; signing in from a guest session offers to merge."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser]


def test_guest_sign_out_warning_and_merge(page: Page, live_server: str, shoot) -> None:  # noqa: ANN001
    # An account with nothing done yet.
    page.goto(f"{live_server}/auth/signup")
    page.get_by_label("Your name").fill("Merge Tester")
    page.get_by_label("Email").fill("merge@example.org")
    page.get_by_label("Password").fill("password123")
    page.get_by_role("button", name="Create account").click()
    page.get_by_role("link", name="Sign out").click()  # an account's sign-out asks first, as a guest's does
    page.locator("#signout").get_by_role("button", name="Sign out").click()

    # A guest reads two cards, then wants to sign out: warned, with the way to keep the progress.
    page.get_by_role("button", name="Start as a guest").click()
    page.goto(f"{live_server}/lessons/mixed-precision")
    page.get_by_role("link", name="Next →").click()
    page.get_by_role("link", name="Sign out").click()
    expect(page.locator(".guest-warning")).to_contain_text("Signing out loses your progress (2 steps opened")
    expect(page.get_by_role("link", name="Create an account to keep it")).to_be_visible()
    shoot(page, "08-guest-sign-out")

    # Instead the guest signs in to the account, and merges.
    page.goto(f"{live_server}/auth/signin")
    page.get_by_label("Email").fill("merge@example.org")
    page.get_by_label("Password").fill("password123")
    page.locator("form.stack").get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Keep your guest progress?")).to_be_visible()
    shoot(page, "09-merge-offer")
    page.get_by_role("button", name="Merge into my account").click()
    expect(page.locator(".flash.info")).to_contain_text("Your guest progress is now part of your account.")
    expect(page.locator("#lesson-mixed-precision .progress-text")).to_have_text(re.compile(r"^2 of \d+ steps done"))
    expect(page.locator(".who")).to_have_text("Merge Tester")  # the header names the account by its name
