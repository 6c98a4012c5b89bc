"""regrade runs

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-06 10:12:41.208337
"""
from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None

BUSY = "status IN ('queued', 'running')"


def upgrade() -> None:
    op.create_table('regrade_runs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('exercise_id', sa.String(length=200), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('error_message', sa.Text(), nullable=True),
    sa.Column('total', sa.Integer(), nullable=False),
    sa.Column('regraded', sa.Integer(), nullable=False),
    sa.Column('changed', sa.Integer(), nullable=False),
    sa.Column('failed', sa.Integer(), nullable=False),
    sa.Column('changes_json', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('started_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.Column('finished_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('regrade_runs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_regrade_runs_exercise_id'), ['exercise_id'], unique=False)
        # One queued or running regrade per exercise (a partial index: SQLite and PostgreSQL both have them).
        batch_op.create_index('ix_regrade_runs_one_busy', ['exercise_id'], unique=True,
                              sqlite_where=sa.text(BUSY), postgresql_where=sa.text(BUSY))


def downgrade() -> None:
    with op.batch_alter_table('regrade_runs', schema=None) as batch_op:
        batch_op.drop_index('ix_regrade_runs_one_busy')
        batch_op.drop_index(batch_op.f('ix_regrade_runs_exercise_id'))

    op.drop_table('regrade_runs')
