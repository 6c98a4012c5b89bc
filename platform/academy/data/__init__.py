"""The data: the database (`db.py`: engine, sessions, Alembic's `migrations/`), its tables (`models/`), and what
reads and writes them for more than one part of the app: accounts (`accounts.py`), learners' progress
(`progress.py`), the gradebooks (`gradebook.py`), roles and the audit log (`roles.py`). Its modules import none of
the web's, jobs' or LTI's."""
