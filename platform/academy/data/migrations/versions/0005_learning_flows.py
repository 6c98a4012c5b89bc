"""quiz answers by option id; hint reveals; submissions of kind run

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 01:00:00

Before this, an answer stored the option's 0-based position (`choice`). Options now have ids, by default
their 1-based position, and a quiz file that reorders options gives each the id of its old position
(grader.core.course.QuizOption), so choice C becomes option id C + 1 whatever the course on disk says.
Every submission stored before is an attempt: kind "grade".
"""
import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('kind', sa.String(length=8), server_default='grade', nullable=False))
    op.create_table(
        'hint_reveals',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('submission_id', sa.Integer(), nullable=False),
        sa.Column('check_id', sa.String(length=100), nullable=False),
        sa.Column('number', sa.Integer(), nullable=False),
        sa.Column('revealed_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['submission_id'], ['submissions.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('submission_id', 'check_id', 'number'))
    op.create_index('ix_hint_reveals_user_id', 'hint_reveals', ['user_id'])
    op.create_index('ix_hint_reveals_submission_id', 'hint_reveals', ['submission_id'])
    with op.batch_alter_table('quiz_answers', schema=None) as batch_op:
        batch_op.add_column(sa.Column('option_id', sa.String(length=100), nullable=True))
    op.execute("UPDATE quiz_answers SET option_id = CAST(choice + 1 AS VARCHAR(100))")
    with op.batch_alter_table('quiz_answers', schema=None) as batch_op:
        batch_op.alter_column('option_id', existing_type=sa.String(length=100), nullable=False)
        batch_op.drop_column('choice')


def downgrade() -> None:
    """Ids that are not numbers (given in a quiz file after this migration) go back as position 0."""
    with op.batch_alter_table('quiz_answers', schema=None) as batch_op:
        batch_op.add_column(sa.Column('choice', sa.Integer(), server_default=sa.text('0'), nullable=False))
    connection = op.get_bind()
    for row_id, option_id in connection.execute(sa.text("SELECT id, option_id FROM quiz_answers")).all():
        choice = int(option_id) - 1 if option_id.isdigit() and int(option_id) > 0 else 0
        connection.execute(sa.text("UPDATE quiz_answers SET choice = :c WHERE id = :id"), {"c": choice, "id": row_id})
    with op.batch_alter_table('quiz_answers', schema=None) as batch_op:
        batch_op.drop_column('option_id')
    op.drop_index('ix_hint_reveals_submission_id', table_name='hint_reveals')
    op.drop_index('ix_hint_reveals_user_id', table_name='hint_reveals')
    op.drop_table('hint_reveals')
    op.execute("DELETE FROM submissions WHERE kind = 'run'")
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.drop_column('kind')
