"""LTI registrations an instructor removes are kept, marked removed, so their learners keep their accounts

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-07 07:00:00

- lti_platforms.removed_at: when an instructor removed the registration (NULL: in use). Removing one used to
  delete its row, and with it (ON DELETE CASCADE) every lti_identities row of its learners: registering the same
  issuer and client id again then made each learner a new, empty account. Now the row stays, its launches are
  refused and its key leaves /lti/jwks; registering the same issuer and client id again brings the same row
  back, and a learner's identity (registration = issuer + client id, deployment, `sub`) finds the same
  account. Added in place like 0008: no table is rebuilt, every existing row keeps its id and its identities.
  Rows from before are all in use (a removed registration had no row left), so nothing else moves.
"""
import sqlalchemy as sa
from alembic import op

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('lti_platforms', sa.Column('removed_at', sa.DateTime(), nullable=True))


def downgrade() -> None:
    # A removed registration has no place in the old schema: its row goes, as removal did then (its identities
    # with it, by their ON DELETE CASCADE).
    # Explicitly, child tables first: SQLite applies no ON DELETE while migrating (foreign keys are off).
    removed = "(SELECT id FROM lti_platforms WHERE removed_at IS NOT NULL)"
    op.execute("DELETE FROM lti_grade_links WHERE identity_id IN "
               f"(SELECT id FROM lti_identities WHERE platform_id IN {removed})")
    op.execute(f"DELETE FROM lti_identities WHERE platform_id IN {removed}")
    op.execute(f"DELETE FROM lti_deployments WHERE platform_id IN {removed}")
    op.execute("DELETE FROM lti_platforms WHERE removed_at IS NOT NULL")
    with op.batch_alter_table('lti_platforms') as batch:
        batch.drop_column('removed_at')
