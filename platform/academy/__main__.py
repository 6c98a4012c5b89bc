"""`python -m academy COMMAND`: the same commands as `flask --app academy COMMAND` (academy/cli/), e.g.

    python -m academy worker          an RQ grading worker (REDIS_URL)
"""
from flask.cli import FlaskGroup

from academy import create_app

cli = FlaskGroup(create_app=create_app, help="Deep Learning Academy: the commands of `flask --app academy`.")

if __name__ == "__main__":
    cli()
