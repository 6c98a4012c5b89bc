"""user ids never reused, a random session secret per user, draft sizes, sign-in failures

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02 01:00:00

Until now SQLite gave a new user the id of the newest deleted one (an INTEGER PRIMARY KEY without
AUTOINCREMENT), so a cookie or any row that still named a deleted guest came to name the next account.
`users` is rebuilt with AUTOINCREMENT (PostgreSQL's sequence never goes back already); every id stays
as it was, so every foreign key still points at the same user. Rows that name a user who no longer exists
(left by a delete made with foreign keys off, e.g. from the sqlite3 shell) are removed first: the
next user could otherwise have inherited them. The session version becomes a random secret per user:
every cookie from before this migration is signed out once.
"""
import secrets

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

CHILDREN = ('api_tokens', 'submissions', 'drafts', 'lesson_progress', 'step_visits', 'quiz_answers', 'hint_reveals')


def _sqlite() -> bool:
    return op.get_bind().dialect.name == 'sqlite'


def _refuse_cascades() -> None:
    """Rebuilding `users` drops the old table; with SQLite's foreign keys on, that drop would delete every row
    that references a user (ON DELETE CASCADE). academy.data.db.upgrade turns them off around migrations."""
    if _sqlite() and op.get_bind().exec_driver_sql('PRAGMA foreign_keys').scalar():
        raise RuntimeError('migration 0007 rebuilds the users table: run it with PRAGMA foreign_keys=OFF '
                           '(academy.data.db.upgrade does), or SQLite deletes every row that references a user')


def _rebuild_users(autoincrement: bool):  # noqa: ANN202 - alembic's BatchOperations
    return op.batch_alter_table('users', recreate='always' if _sqlite() else 'auto',
                                table_kwargs={'sqlite_autoincrement': autoincrement})


def upgrade() -> None:
    _refuse_cascades()
    connection = op.get_bind()
    for table in CHILDREN:
        connection.exec_driver_sql(f'DELETE FROM {table} WHERE user_id NOT IN (SELECT id FROM users)')
    connection.exec_driver_sql('DELETE FROM hint_reveals WHERE submission_id NOT IN (SELECT id FROM submissions)')

    op.add_column('users', sa.Column('session_secret', sa.String(length=64), nullable=True))
    for (user_id,) in connection.execute(sa.text('SELECT id FROM users')).all():
        connection.execute(sa.text('UPDATE users SET session_secret = :secret WHERE id = :id'),
                           {'secret': secrets.token_urlsafe(32), 'id': user_id})
    with _rebuild_users(autoincrement=True) as batch_op:
        batch_op.alter_column('session_secret', existing_type=sa.String(length=64), nullable=False)
        batch_op.drop_column('session_version')

    with op.batch_alter_table('drafts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('size_bytes', sa.Integer(), server_default=sa.text('0'), nullable=False))
        batch_op.add_column(sa.Column('address', sa.String(length=64), nullable=True))
        batch_op.create_index('ix_drafts_address', ['address'], unique=False)
    octets = 'length(CAST(code AS BLOB))' if _sqlite() else 'octet_length(code)'
    connection.exec_driver_sql(f'UPDATE drafts SET size_bytes = {octets}')

    op.create_table(
        'signin_failures',
        sa.Column('key', sa.String(length=80), nullable=False),
        sa.Column('failures', sa.Integer(), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('last_failure_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('key'))
    op.create_index('ix_signin_failures_last_failure_at', 'signin_failures', ['last_failure_at'], unique=False)


def downgrade() -> None:
    _refuse_cascades()
    op.drop_index('ix_signin_failures_last_failure_at', table_name='signin_failures')
    op.drop_table('signin_failures')
    with op.batch_alter_table('drafts', schema=None) as batch_op:
        batch_op.drop_index('ix_drafts_address')
        batch_op.drop_column('address')
        batch_op.drop_column('size_bytes')
    with _rebuild_users(autoincrement=False) as batch_op:
        batch_op.add_column(sa.Column('session_version', sa.Integer(), server_default=sa.text('0'), nullable=False))
        batch_op.drop_column('session_secret')
