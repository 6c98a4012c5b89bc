"""Accounts: sign up, sign in (password hashed with werkzeug's scrypt KDF), guests, API tokens.

    blueprint.py    the blueprint, where a page goes back to, the password check, the notice of a mailed link
    signin.py       sign up, sign in, guests, merging a guest, sign out
    account.py      the account's page: sessions, password, name, API tokens, confirming the address
"""
from academy.data.accounts import create_account
from academy.web.auth import account, signin  # noqa: F401 - their routes on bp
from academy.web.auth.blueprint import back_here, bp, check_password

__all__ = ["back_here", "bp", "check_password", "create_account"]
