"""confirmed email addresses, and sign-ups waiting for their address to be confirmed

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-07 06:00:00

- users.email_confirmed_at: when the account's owner proved the address is theirs (a confirmation link opened,
  with the account's password), or when an operator vouched for it (`create-user`). NULL: unconfirmed, and
  every account from before this migration starts so (docs/web.md, "Confirmed email addresses", says how an
  operator confirms them). Only a confirmed address is a gradebook's matching key (academy/data/gradebook.py).
- users.confirmation_sent_at: the last confirmation mail sent for the account (a new link is rate-limited).
  Both added in place like 0008: `users` is not rebuilt.
- signup_link_mails: each sign-up link mailed to an address that an unconfirmed account holds (academy/
  confirmation.py). Such a sign-up is not refused: a link goes to the address, and whoever opens it chooses the
  password and gets the account, the address confirmed; the unconfirmed holder loses it. A row holds only the
  address and when: it bounds the mails one address gets, whoever signs up.
"""
import sqlalchemy as sa
from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('users', sa.Column('email_confirmed_at', sa.DateTime(), nullable=True))
    op.add_column('users', sa.Column('confirmation_sent_at', sa.DateTime(), nullable=True))
    op.create_table(
        'signup_link_mails',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('email', sa.String(length=254), nullable=False, index=True),
        sa.Column('sent_at', sa.DateTime(), nullable=False, index=True),
    )


def downgrade() -> None:
    op.drop_table('signup_link_mails')
    op.execute('ALTER TABLE users DROP COLUMN confirmation_sent_at')
    op.execute('ALTER TABLE users DROP COLUMN email_confirmed_at')
