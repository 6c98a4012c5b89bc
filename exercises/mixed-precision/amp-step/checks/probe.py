"""Runs in the learner's process: call train_step on the scenario and record what it does."""
import scenario
from courselib.probes import amp_step_probe
from grader.checks.learner.probing import install_amp_spies


def prepare():
    install_amp_spies()


def probe(api):
    return amp_step_probe(api, scenario.TASK)
