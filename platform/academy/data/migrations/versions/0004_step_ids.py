"""lesson progress by step id instead of step number

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 00:00:00

Positions stored before this referred to the course as it is on disk now (upgrade before changing the
course): position P becomes the id of step P, and "read up to F" becomes a visit of each of steps 1..F.
A lesson that no longer exists keeps nothing but its row's resume point at its first step.
"""
from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def _step_ids() -> dict[str, tuple[str, ...]]:
    """Each lesson's step ids, from the course the app serves (academy.data.db.upgrade passes its folder)."""
    from grader.core.course import load_course

    root = op.get_context().config.attributes.get("course_root")
    course = load_course(Path(root) if root else None)
    return {lesson.id: lesson.step_ids for lesson in course.lessons}


def upgrade() -> None:
    steps = _step_ids()
    op.create_table(
        'step_visits',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('lesson_id', sa.String(length=100), nullable=False),
        sa.Column('step_id', sa.String(length=100), nullable=False),
        sa.Column('seen_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('user_id', 'lesson_id', 'step_id'))
    with op.batch_alter_table('lesson_progress', schema=None) as batch_op:
        batch_op.add_column(sa.Column('step_id', sa.String(length=100), nullable=True))
    connection = op.get_bind()
    rows = connection.execute(sa.text(
        "SELECT id, user_id, lesson_id, position, furthest, updated_at FROM lesson_progress")).all()
    for row_id, user_id, lesson_id, position, furthest, updated_at in rows:
        ids = steps.get(lesson_id, ())
        resume = ids[min(max(position, 1), len(ids)) - 1] if ids else ''
        connection.execute(sa.text("UPDATE lesson_progress SET step_id = :step WHERE id = :id"),
                           {"step": resume, "id": row_id})
        for step_id in ids[:max(furthest, 0)]:
            connection.execute(sa.text(
                "INSERT INTO step_visits (user_id, lesson_id, step_id, seen_at) "
                "VALUES (:user, :lesson, :step, :seen)"),
                {"user": user_id, "lesson": lesson_id, "step": step_id, "seen": updated_at})
    with op.batch_alter_table('lesson_progress', schema=None) as batch_op:
        batch_op.alter_column('step_id', existing_type=sa.String(length=100), nullable=False)
        batch_op.drop_column('furthest')
        batch_op.drop_column('position')


def downgrade() -> None:
    steps = _step_ids()
    with op.batch_alter_table('lesson_progress', schema=None) as batch_op:
        batch_op.add_column(sa.Column('position', sa.Integer(), server_default=sa.text('1'), nullable=False))
        batch_op.add_column(sa.Column('furthest', sa.Integer(), server_default=sa.text('1'), nullable=False))
    connection = op.get_bind()
    rows = connection.execute(sa.text("SELECT id, user_id, lesson_id, step_id FROM lesson_progress")).all()
    for row_id, user_id, lesson_id, step_id in rows:
        ids = steps.get(lesson_id, ())
        seen = set(connection.execute(sa.text(
            "SELECT step_id FROM step_visits WHERE user_id = :user AND lesson_id = :lesson"),
            {"user": user_id, "lesson": lesson_id}).scalars())
        position = ids.index(step_id) + 1 if step_id in ids else 1
        furthest = max([ids.index(s) + 1 for s in seen if s in ids] + [position])
        connection.execute(sa.text("UPDATE lesson_progress SET position = :p, furthest = :f WHERE id = :id"),
                           {"p": position, "f": furthest, "id": row_id})
    with op.batch_alter_table('lesson_progress', schema=None) as batch_op:
        batch_op.drop_column('step_id')
    op.drop_table('step_visits')
