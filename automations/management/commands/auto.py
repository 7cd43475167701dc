"""`python manage.py auto <kind> <action> ...` — the CLI face of the controls (SPEC §5)."""
from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from automations.plan_report import plan_lines
from automations.recipe import RecipeError, load_recipe, unfilled_placeholders
from automations.workdir import find_recipe
from budgets.plan import resolve


class Command(BaseCommand):
    help = "Check (and, as the engine lands, run and steer) a recipe: auto <web|task> check NAME_OR_PATH [ARGS...]"

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=["web", "task"])
        parser.add_argument("action", choices=["check"])
        parser.add_argument("target", help="a recipe name in the recipes repository, or a path to a file")
        parser.add_argument("recipe_args", nargs="*", metavar="ARGS")

    def handle(self, *args, kind, action, target, recipe_args, **options):
        return getattr(self, f"do_{action}")(kind, target, recipe_args)

    def do_check(self, kind: str, target: str, recipe_args: list[str]) -> None:
        spec = self._load(kind, target)
        plan = resolve(spec.do, spec.loop_while)
        executor = spec.executor_model or settings.RYSH_EXECUTOR_MODEL
        judge = spec.judge or settings.RYSH_JUDGE_MODEL
        for line in plan_lines(spec, plan, executor=executor, judge=judge):
            self.stdout.write(line)
        warnings = [*spec.warnings, *plan.warnings,
                    *unfilled_placeholders(spec, recipe_args if recipe_args else None)]
        if warnings:
            self.stdout.write("warnings:")
            for warning in warnings:
                self.stdout.write(f"  - {warning}")
        self.stdout.write(f"ok: {spec.target} is valid")

    def _load(self, kind: str, target: str):
        try:
            path = find_recipe(target, kind=kind, root=settings.RYSH_RECIPES_REPO)
            return load_recipe(path, kind=kind)
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from None
        except RecipeError as exc:
            for issue in exc.issues:
                self.stderr.write(str(issue))
            raise CommandError(f"{len(exc.issues)} error(s) in {target}") from None
