"""The web front: the blueprints (`lessons.py` the learner's pages, `api.py` the JSON API, `auth.py` accounts and
sign-in, `instructor.py` the instructor's pages) and what guards them: who is asking (`security.py`), the rate
limits (`limits.py`), wrong passwords' delays (`backoff.py`), confirmed addresses (`confirmation.py`, mailing through
`mail.py`), what the edges accept (`inputs.py`), the error pages (`errors.py`). This file imports nothing: an
administrator's command that needs one module of the package (`confirm-email`) gets that module alone."""
