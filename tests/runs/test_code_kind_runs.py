"""rysh's code kind, run (docs/coding-loops.md): rysh's published `softdev-loop`, synced from
`.rysh/automations/codes/` of a real repository, runs on the real anthropic SDK against the
fake Messages server with `{{workdir}}` filled with the folder its commands run in and `{{goal}}`
with its argument — in the prompt, the next pass's prompt and the judge's goal. `--workdir`
moves the agent at run time; runs of one recipe with other arguments go side by side, each in
its own copy and results folder, and the same arguments are refused naming the run that holds
them."""

import json
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents.task_tools import TaskTools
from catalogue.sync import recipes_sync
from runs import services, worker
from runs.models import Run
from runs.wiring import arm_run
from schedules.services import schedule_add, schedule_tick
from tests.fakes.anthropic_server import fake_anthropic  # noqa: F401 (fixture)
from tests.recipes_git import git
from tests.runs.test_view_runs import client_for, user_with
from tests.workspaces.conftest import code_repo  # noqa: F401 (fixture)
from workspaces.copies import Copy

pytestmark = pytest.mark.django_db(transaction=True)

SOFTDEV = (Path(__file__).resolve().parents[1] / "fixtures" / "softdev-loop.md").read_text(encoding="utf-8")
GOAL = "add a Sum function"
JUDGED_NO = "NO\ngo vet was not run"
JUDGED_YES = "YES\nthe goal is implemented and the tests are green"


@pytest.fixture
def softdev(code_repo, settings):
    """The code repository (pkg/ holds the code) with rysh's softdev-loop, verbatim, in codes/,
    synced into the catalogue."""
    folder = code_repo / ".rysh/automations/codes"
    folder.mkdir(parents=True)
    (folder / "softdev-loop.md").write_text(SOFTDEV, encoding="utf-8")
    git(code_repo, "add", "-A")
    git(code_repo, "commit", "-q", "-m", "rysh's softdev-loop")
    settings.RYSH_RECIPES_BRANCH = "main"
    recipes_sync()
    return code_repo


def serve(fake, turns: list[dict], verdicts: list[str]) -> None:
    """The model's turns in order (then "Done."), and the judge's verdicts in order."""
    turns, verdicts = list(turns), list(verdicts)

    def answer(body):
        if "independent judge" in str(body.get("system")):
            return {"text": verdicts.pop(0)}
        return turns.pop(0) if turns else {"text": "Done: Sum added; go test ./... is green."}

    fake.responder = answer


def bash(command: str) -> dict:
    return {"text": f"$ {command}", "tool_calls": [{"name": "bash", "input": {"command": command}}]}


def sent(fake) -> list[dict]:
    return [r.json for r in fake.requests]


def first_text(body: dict) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def judged(bodies) -> list[dict]:
    return [b for b in bodies if "independent judge" in str(b.get("system"))]


def worked(bodies) -> list[dict]:
    return [b for b in bodies if "independent judge" not in str(b.get("system"))]


def folder_of(run: Run) -> Path:
    return Copy(Path(run.workspace.home)).tree / run.workspace.workdir


def test_rysh_softdev_loop_from_codes_runs_with_workdir_and_goal_filled(fake_anthropic, softdev):
    serve(fake_anthropic, [bash("pwd"), {"text": "Sum added."}, bash("pwd")], [JUDGED_NO, JUDGED_YES])
    run = services.run_start(kind="code", name_or_path="softdev-loop", args=[GOAL])
    assert (run.kind, run.target, run.provider, run.recipe.good.path) == (
        "code",
        "code/softdev-loop",
        "anthropic",
        ".rysh/automations/codes/softdev-loop.md",
    )
    worker.execute(run.pk, arm_run)
    run.refresh_from_db()
    assert (run.state, run.cause, run.pass_number) == ("finished", "fulfilled", 2)
    where = str(folder_of(run))
    bodies = sent(fake_anthropic)
    assert "{{" not in json.dumps(bodies)  # no placeholder reaches the model, anywhere
    first, second = [b for b in worked(bodies) if len(b["messages"]) == 1]
    assert f"You run one pass of a Go software-development loop in {where}, working\ntoward: {GOAL}" in first_text(
        first
    )
    # pass 2: the prompt again, and iterate_with with the goal, in the same folder
    assert f"loop in {where}, working" in first_text(second)
    assert f'The previous pass did not finish the goal "{GOAL}". Re-run' in first_text(second)
    # the judge reads the goal with its argument filled
    goals = [first_text(b) for b in judged(bodies)]
    assert len(goals) == 2 and all(f'The goal "{GOAL}" is implemented, `go test ./...` passes' in g for g in goals)
    # the folder the prompt names is where the agent's commands run
    outputs = [r["content"] for p in run.passes.order_by("number") for s in p.steps.all() for r in s.tool_results]
    assert outputs and all(out.startswith("exit status: 0") and f"\n{where}\n" in f"\n{out}\n" for out in outputs)


def test_auto_code_run_workdir_moves_the_agent_and_every_worker_rearms_it_there(fake_anthropic, softdev):
    serve(fake_anthropic, [bash("pwd; ls")], [JUDGED_YES])
    out = StringIO()
    call_command("auto", "code", "run", "softdev-loop", GOAL, "--workdir", "pkg/", stdout=out)
    run = Run.objects.get()
    assert f"run #{run.pk} queued: code/softdev-loop" in out.getvalue()
    assert run.overrides == {"workdir": "pkg"} and run.workspace.workdir == "pkg"
    worker.execute(run.pk, arm_run)
    run.refresh_from_db()
    where = folder_of(run)
    assert where.name == "pkg" and run.cause == "fulfilled"
    assert f"loop in {where}, working" in first_text(sent(fake_anthropic)[0])
    listing = run.passes.get().steps.first().tool_results[0]["content"]
    assert f"{where}\n" in listing and "calc.py" in listing and "test_calc.py" in listing
    # re-armed from the run alone (another worker, a continue): the same folder
    assert arm_run(run, tools=TaskTools(Path(run.output_dir))).spec.workdir == "pkg"


def test_a_dry_run_says_where_the_agent_will_work(softdev):
    out = StringIO()
    call_command("auto", "code", "run", "softdev-loop", GOAL, "--workdir", "pkg", "--dry-run", stdout=out)
    text = out.getvalue()
    assert "loop in <the run's working copy>/pkg, working" in text and f"toward: {GOAL}" in text
    assert re.search(r"working copy: its own copy of the repository from main at [0-9a-f]{8} .*, working in pkg;", text)
    assert Run.objects.count() == 0


@pytest.mark.parametrize(
    ("workdir", "said"),
    [
        ("nowhere", "code/softdev-loop: workdir 'nowhere' is no folder of"),
        ("../elsewhere", "--workdir: '../elsewhere' climbs out of the repository with '..'"),
        ("/srv", "--workdir: expected a folder relative to the repository's root"),
    ],
)
def test_a_workdir_that_is_no_folder_of_the_repository_is_refused(fake_anthropic, softdev, workdir, said):
    with pytest.raises(CommandError, match=said.replace(".", r"\.").replace("(", r"\(")):
        call_command("auto", "code", "run", "softdev-loop", GOAL, "--workdir", workdir, stdout=StringIO())
    assert Run.objects.count() == 0


def test_workdir_is_refused_on_a_recipe_without_a_working_copy(softdev, recipe_file):
    path = recipe_file("Write notes.", "notes")
    with pytest.raises(services.RunRefused, match="--workdir: task/notes has no working copy"):
        services.run_start(kind="task", name_or_path=str(path), args=[], workdir="pkg")


# -- side by side -------------------------------------------------------------------------------


def start(args: list[str], **options) -> Run:
    return services.run_start(kind="code", name_or_path="softdev-loop", args=args, provider="anthropic", **options)


def test_runs_with_other_arguments_go_side_by_side_each_in_its_own_copy_and_folder(fake_anthropic, softdev):
    serve(fake_anthropic, [bash("echo one > note.txt"), {"text": "one"}, bash("echo two > note.txt")], ["YES\nok"] * 2)
    one, two = start(["add Sum"]), start(["add Max"])
    also = start(["add Sum"], workdir="pkg")  # the same arguments elsewhere: a slot of its own
    assert Run.objects.filter(state="queued").count() == 3
    assert len({one.slot, two.slot, also.slot}) == 3 and one.slot.startswith("code/softdev-loop/add-sum-")
    assert len({one.output_dir, two.output_dir, also.output_dir}) == 3
    assert Path(one.output_dir).parent == Path(two.output_dir).parent  # under the recipe's own folder
    assert Path(one.output_dir).parent.parts[-3:] == ("codes", "softdev-loop", "results")
    for run in (one, two):
        worker.execute(run.pk, arm_run)
    one.refresh_from_db(), two.refresh_from_db()
    assert (one.cause, two.cause) == ("fulfilled", "fulfilled")
    assert one.workspace.home != two.workspace.home
    assert (folder_of(one) / "note.txt").read_text() == "one\n"
    assert (folder_of(two) / "note.txt").read_text() == "two\n"
    # each run's own diff, by `auto code diff`
    assert "+one" in auto("code", "diff", f"#{one.pk}") and "+two" in auto("code", "diff", f"#{two.pk}")


def test_the_same_arguments_are_refused_naming_the_run_that_holds_them(fake_anthropic, softdev):
    first = start([GOAL])
    with pytest.raises(services.RunRefused) as refused:
        start([GOAL])
    assert str(refused.value) == (
        f"code/softdev-loop already has an active run with these arguments: run #{first.pk} (queued, pass 0/5; "
        "`auto code status softdev-loop` shows it); stop or cancel it first"
    )
    assert refused.value.holder == first
    # on the CLI: its id and the status command
    with pytest.raises(CommandError, match=rf"run #{first.pk} \(queued.*`auto code status softdev-loop`"):
        call_command("auto", "code", "run", "softdev-loop", GOAL, stdout=StringIO())


def test_the_run_form_links_the_run_that_holds_the_slot(fake_anthropic, softdev):
    first = start([GOAL])
    operator = client_for(user_with("operator"))
    response = operator.post("/recipes/code/softdev-loop/run/", {"arg_0": GOAL})
    page = response.content.decode()
    assert response.status_code == 400 and Run.objects.count() == 1
    assert f'<a id="run-holder" href="/runs/{first.pk}/">Open run #{first.pk}</a>' in page
    assert 'name="headless"' not in page  # a coding run drives no browser


def test_a_plain_task_keeps_one_active_run_whatever_its_arguments(recipe_file):
    path = recipe_file("---\nargs: [topic]\n---\nWrite about {{topic}}.", "notes")
    first = services.run_start(kind="task", name_or_path=str(path), args=["tides"])
    with pytest.raises(services.RunRefused, match=rf"task/notes already has an active run: run #{first.pk}"):
        services.run_start(kind="task", name_or_path=str(path), args=["moons"])


def auto(*words) -> str:
    out = StringIO()
    call_command("auto", *words, stdout=out)
    return out.getvalue()


def test_cli_verbs_by_name_pick_a_run_by_its_arguments_or_refuse_naming_them(fake_anthropic, softdev):
    one, two = start(["add Sum"]), start(["add Max"])
    status = auto("code", "status", "softdev-loop")
    assert f"#{one.pk}" in status and f"#{two.pk}" in status and "add Sum" in status and "add Max" in status
    for verb in ("stop", "cancel", "continue", "results", "diff"):
        with pytest.raises(CommandError) as ambiguous:
            auto("code", verb, "softdev-loop")
        said = str(ambiguous.value)
        assert f"code/softdev-loop has 2 active runs: #{one.pk} (queued, args: add Sum); #{two.pk}" in said
        assert f"Name one by its id (#{one.pk}), or give its arguments after the recipe's name" in said
    assert f"run #{two.pk} cancelled before it started" in auto("code", "cancel", "softdev-loop", "add Max")
    assert f"run #{one.pk} stopped" in auto("code", "stop", f"#{one.pk}")
    two.refresh_from_db(), one.refresh_from_db()
    assert (one.state, two.state_label) == ("finished", "paused(cancelled)")
    assert f"run #{two.pk} continues" in auto("code", "continue", "softdev-loop")  # one left: no doubt


def test_schedules_of_one_code_recipe_with_other_arguments_start_side_by_side(fake_anthropic, softdev):
    for name, goal in (("nightly-sum", "add Sum"), ("nightly-max", "add Max"), ("again-sum", "add Sum")):
        schedule_add(name=name, kind="code", recipe="softdev-loop", args=[goal], when="@daily")
    assert "started run #" in schedule_tick("nightly-sum") and "started run #" in schedule_tick("nightly-max")
    first = Run.objects.earliest("pk")
    said = schedule_tick("again-sum")
    assert f"tick failed: code/softdev-loop already has an active run with these arguments: run #{first.pk}" in said
    assert [run.args for run in Run.objects.order_by("pk")] == [["add Sum"], ["add Max"]]


def test_the_dashboard_tells_side_by_side_runs_apart_and_shows_no_headless_for_them(fake_anthropic, softdev):
    one, two = start(["add Sum"]), start(["add Max"])
    page = client_for(user_with("viewer")).get("/").content.decode()
    for run, goal in ((one, "add Sum"), (two, "add Max")):
        row = page.partition(f'id="run-row-{run.pk}"')[2].partition("</tr>")[0]
        assert f">{goal}</span>" in row and "<td>—</td>" in row and "<td>yes</td>" not in row


def test_a_resume_is_seeded_from_the_results_folder_of_the_run_it_resumes(fake_anthropic, softdev, tmp_path):
    serve(fake_anthropic, [], ["YES\nok"])
    earlier = start([GOAL])
    # a run from before slots had folders: its results in the recipe's folder itself
    folder = Path(earlier.output_dir).parent
    (folder / "notes.md").write_text("Sum is half done: tests written, not the code.")
    Run.objects.filter(pk=earlier.pk).update(output_dir=str(folder), state="finished", cause="stopped by user")
    earlier.refresh_from_db()
    again = services.run_resume(run=earlier)
    assert again.output_dir != str(folder)  # its slot's own folder
    worker.execute(again.pk, arm_run)
    seed = first_text(worked(sent(fake_anthropic))[0])
    assert f"This run resumes run #{earlier.pk}. Its latest result (notes.md)" in seed
    assert "Sum is half done" in seed
