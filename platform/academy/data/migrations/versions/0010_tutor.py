"""the tutor's conversations

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07 03:00:00

- tutor_messages: each question a learner asked the tutor about a step and each answer as shown (academy/tutor/).
"""
import sqlalchemy as sa
from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'tutor_messages',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('user_id', sa.Integer(), sa.ForeignKey('users.id', ondelete='CASCADE'), nullable=False),
        sa.Column('lesson_id', sa.String(length=100), nullable=False),
        sa.Column('step_id', sa.String(length=100), nullable=False),
        sa.Column('exercise_id', sa.String(length=200), nullable=True),
        sa.Column('role', sa.String(length=16), nullable=False),
        sa.Column('text', sa.Text(), nullable=False),
        sa.Column('sources_json', sa.Text(), nullable=True),
        sa.Column('outcome', sa.String(length=16), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
    )
    op.create_index('ix_tutor_messages_user_step', 'tutor_messages', ['user_id', 'lesson_id', 'step_id'])
    op.create_index('ix_tutor_messages_exercise_id', 'tutor_messages', ['exercise_id'])
    op.create_index('ix_tutor_messages_created_at', 'tutor_messages', ['created_at'])


def downgrade() -> None:
    op.drop_table('tutor_messages')
