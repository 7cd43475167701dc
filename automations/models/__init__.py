"""Models: the recipe catalogue (git -> RecipeVersion) and runs (Run -> Pass -> Step -> events)."""
from automations.models.recipes import Recipe, RecipeVersion, RepoState  # noqa: F401
from automations.models.runs import Approval, Pass, Run, RunEvent, Step  # noqa: F401
from automations.models.reviews import ChangeRequest, ReviewComment  # noqa: F401
from automations.models.schedules import RecipeSchedule  # noqa: F401,E402
