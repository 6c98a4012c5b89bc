"""a random device secret per user: what a device cookie is bound to

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03 01:00:00

A device cookie (academy/web/backoff.py: "this browser signed in to the account before") is bound to the
account's device secret and password hash: a password change or "sign out everywhere else" replaces the
secret, and every device cookie issued before stops counting. Rows from before start with none (NULL):
their device cookies, of the old shape, count for nothing already, and the next sign-in issues a new one.
The column is added and dropped in place (SQLite 3.35+ drops columns itself): `users` is not rebuilt, so
its AUTOINCREMENT and every row that references a user stay as they are.
"""
import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('users', sa.Column('device_secret', sa.String(length=64), nullable=True))


def downgrade() -> None:
    op.execute('ALTER TABLE users DROP COLUMN device_secret')
