"""names and SIS ids on accounts, what a validation saw

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-05 01:00:00

- users.name (the display name the gradebooks' "Student" column shows) and users.sis_id (Canvas's "SIS User
  ID", unique where set), added in place like 0008: `users` is not rebuilt, so its AUTOINCREMENT and every
  row that references a user stay as they are. sis_id's uniqueness is an index (SQLite cannot add a UNIQUE
  column).
- validation_runs.content_hash: the exercise folder's hash as validated, so the overview says when the
  files changed since.
"""
import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('users', sa.Column('name', sa.String(length=100), nullable=True))
    op.add_column('users', sa.Column('sis_id', sa.String(length=100), nullable=True))
    op.create_index('ix_users_sis_id', 'users', ['sis_id'], unique=True)
    op.add_column('validation_runs', sa.Column('content_hash', sa.String(length=64), nullable=True))


def downgrade() -> None:
    op.execute('ALTER TABLE validation_runs DROP COLUMN content_hash')
    op.drop_index('ix_users_sis_id', table_name='users')
    op.execute('ALTER TABLE users DROP COLUMN sis_id')
    op.execute('ALTER TABLE users DROP COLUMN name')
