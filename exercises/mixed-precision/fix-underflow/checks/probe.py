"""Runs in the learner's process: train with the learner's function and record what it does."""
import scenario
from grader.checks.learner.probes import training_probe
from grader.checks.learner.probing import install_amp_spies


def prepare():
    install_amp_spies()


def probe(api):
    return training_probe(api, *scenario.TASK.build(api.seed, api.device), scenario.STEPS)
