"""confirmed email addresses, and sign-ups waiting for their address to be confirmed

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-07 06:00:00

- users.email_confirmed_at: when the account's owner proved the address is theirs (a confirmation link opened,
  with the account's password), or when an operator vouched for it (`create-user`). NULL: unconfirmed, and
  every account from before this migration starts so (docs/web.md, "Confirmed email addresses", says how an
  operator confirms them). Only a confirmed address is a gradebook's matching key (academy/gradebook.py).
- users.confirmation_sent_at: the last confirmation mail sent for the account (a new link is rate-limited).
  Both added in place like 0008: `users` is not rebuilt.
- pending_signups: a sign-up whose address an unconfirmed account holds (academy/confirmation.py). It is not
  refused: a link goes to the address, and whoever opens it and types the sign-up's password gets the
  account, the address confirmed; the unconfirmed holder loses it.
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
        'pending_signups',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('email', sa.String(length=254), nullable=False, index=True),
        sa.Column('name', sa.String(length=100), nullable=True),
        sa.Column('password_hash', sa.String(length=256), nullable=False),
        sa.Column('guest_id', sa.Integer(), sa.ForeignKey('users.id', ondelete='SET NULL'), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False, index=True),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    op.drop_table('pending_signups')
    op.execute('ALTER TABLE users DROP COLUMN confirmation_sent_at')
    op.execute('ALTER TABLE users DROP COLUMN email_confirmed_at')
