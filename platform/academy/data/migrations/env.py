"""Alembic environment: runs on the connection `academy.data.db.upgrade` hands over, or on the config's URL."""
from alembic import context
from sqlalchemy import create_engine

from academy.data.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url"))
    try:
        with engine.begin() as connection:
            _run(connection)
    finally:
        engine.dispose()  # no pooled connection left open: a database server being stopped need not wait for it


def _run(connection) -> None:  # noqa: ANN001
    # render_as_batch: SQLite cannot ALTER most things; batch mode copies the table instead.
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata,
                      literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
