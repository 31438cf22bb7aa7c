"""The one error a learner's setting raises, at the bottom of the package so every layer can use it."""
from helpers.i18n import tr


class ConfigError(ValueError):
    """A setting is wrong. The message names it, says why, and what to try."""

    def __init__(self, setting: str, problem: str, fix: str):
        self.setting, self.problem, self.fix = setting, problem, fix
        super().__init__(tr("{setting}: {problem} Try: {fix}", setting=setting, problem=problem, fix=fix))
