"""names and SIS ids on accounts, what a validation saw, LTI 1.3 registrations and launches

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-05 01:00:00

- users.name (the display name the gradebooks' "Student" column shows) and users.sis_id (Canvas's "SIS User
  ID", unique where set), added in place like 0008: `users` is not rebuilt, so its AUTOINCREMENT and every
  row that references a user stay as they are. sis_id's uniqueness is an index (SQLite cannot add a UNIQUE
  column).
- validation_runs.content_hash: the exercise folder's hash as validated, so the overview says when the
  files changed since.
- lti_platforms, lti_deployments, lti_identities, lti_grade_links, lti_values (academy/lti.py).
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
    op.create_table(
        'lti_platforms',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('name', sa.String(length=100), nullable=False),
        sa.Column('issuer', sa.String(length=255), nullable=False),
        sa.Column('client_id', sa.String(length=255), nullable=False),
        sa.Column('auth_login_url', sa.String(length=1000), nullable=False),
        sa.Column('auth_token_url', sa.String(length=1000), nullable=False),
        sa.Column('key_set_url', sa.String(length=1000), nullable=False),
        sa.Column('auth_audience', sa.String(length=1000), nullable=True),
        sa.Column('tool_private_key', sa.Text(), nullable=False),
        sa.Column('tool_kid', sa.String(length=100), nullable=False, unique=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.UniqueConstraint('issuer', 'client_id'),
        sqlite_autoincrement=True,
    )
    op.create_table(
        'lti_deployments',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('platform_id', sa.Integer(), sa.ForeignKey('lti_platforms.id', ondelete='CASCADE'),
                  nullable=False, index=True),
        sa.Column('deployment_id', sa.String(length=255), nullable=False),
        sa.UniqueConstraint('platform_id', 'deployment_id'),
    )
    op.create_table(
        'lti_identities',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('platform_id', sa.Integer(), sa.ForeignKey('lti_platforms.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('deployment_id', sa.String(length=255), nullable=False),
        sa.Column('sub', sa.String(length=255), nullable=False),
        sa.Column('user_id', sa.Integer(), sa.ForeignKey('users.id', ondelete='CASCADE'), nullable=False,
                  unique=True),
        sa.Column('email', sa.String(length=254), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('last_launch_at', sa.DateTime(), nullable=False),
        sa.UniqueConstraint('platform_id', 'deployment_id', 'sub'),
    )
    op.create_table(
        'lti_grade_links',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('identity_id', sa.Integer(), sa.ForeignKey('lti_identities.id', ondelete='CASCADE'),
                  nullable=False, index=True),
        sa.Column('user_id', sa.Integer(), sa.ForeignKey('users.id', ondelete='CASCADE'), nullable=False,
                  index=True),
        sa.Column('exercise_id', sa.String(length=200), nullable=False),
        sa.Column('resource_link_id', sa.String(length=255), nullable=False),
        sa.Column('ags_json', sa.Text(), nullable=False),
        sa.Column('sent_score', sa.Float(), nullable=True),
        sa.Column('sent_at', sa.DateTime(), nullable=True),
        sa.Column('error', sa.Text(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
        sa.UniqueConstraint('identity_id', 'resource_link_id'),
    )
    op.create_table(
        'lti_values',
        sa.Column('key', sa.String(length=255), primary_key=True),
        sa.Column('value', sa.Text(), nullable=False),
        sa.Column('expires_at', sa.DateTime(), nullable=False, index=True),
    )


def downgrade() -> None:
    op.drop_table('lti_values')
    op.drop_table('lti_grade_links')
    op.drop_table('lti_identities')
    op.drop_table('lti_deployments')
    op.drop_table('lti_platforms')
    op.execute('ALTER TABLE validation_runs DROP COLUMN content_hash')
    op.drop_index('ix_users_sis_id', table_name='users')
    op.execute('ALTER TABLE users DROP COLUMN sis_id')
    op.execute('ALTER TABLE users DROP COLUMN name')
