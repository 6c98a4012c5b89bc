"""sessions that can be revoked, guest activity, one pending submission per learner, fair keys

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 21:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

PENDING = "status IN ('queued', 'running')"


def upgrade() -> None:
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.add_column(sa.Column('session_version', sa.Integer(), server_default=sa.text('0'),
                                      nullable=False))
        batch_op.add_column(sa.Column('last_seen_at', sa.DateTime(), nullable=True))
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('fair_key', sa.String(length=100), nullable=True))
    # A database from before the limit may hold several pending submissions of one learner: the oldest
    # keeps its place, the others end as errors (their code stays stored) so the unique index can exist.
    op.execute(sa.text(
        "UPDATE submissions SET status = 'error', error_message = 'Not graded: only one submission per "
        "learner may wait for grading. Your code is saved: submit it again.' "
        f"WHERE {PENDING} AND id NOT IN (SELECT MIN(id) FROM submissions WHERE {PENDING} GROUP BY user_id)"))
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.create_index('ix_submissions_one_pending', ['user_id'], unique=True,
                              sqlite_where=sa.text(PENDING), postgresql_where=sa.text(PENDING))


def downgrade() -> None:
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.drop_index('ix_submissions_one_pending')
        batch_op.drop_column('fair_key')
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.drop_column('last_seen_at')
        batch_op.drop_column('session_version')
