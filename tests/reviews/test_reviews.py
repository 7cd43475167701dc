import pytest
from django.core.exceptions import PermissionDenied

from catalogue.models import Recipe, RecipeVersion
from catalogue.repo import PushRejected
from catalogue.sync import recipe_for_run, recipes_sync
from reviews.models import ChangeRequest, ReviewComment
from reviews.services import (
    ReviewError,
    change_request_approve,
    change_request_close,
    change_request_delete,
    change_request_open,
    change_request_rename,
    change_request_request_changes,
    change_request_update,
    identity_for,
    plan_delta,
    text_diff,
)
from tests.recipes_git import (  # noqa: F401
    BROKEN,
    git,
    make_user,
    recipe_text,
    remote,
    work,
)

pytestmark = pytest.mark.django_db
REPORT = ".rysh/automations/tasks/report.md"


@pytest.fixture
def grace(db):
    return make_user("grace", first_name="Grace", last_name="Hopper")


@pytest.fixture
def linus(db):
    return make_user("linus")


def branch_head(repo, branch):
    return git(repo, "rev-parse", f"refs/heads/{branch}")


def test_it_commits_an_edit_to_a_review_branch_as_the_user(work, grace):
    recipes_sync()
    main = work.head()
    change = change_request_open(
        user=grace,
        kind="task",
        name="report",
        text=recipe_text("bigger", size="5b", total="25b"),
        message="Bigger budget\n\nThe report needs more room.",
    )
    assert work.head() == main  # the tracked branch is untouched
    assert change.branch == f"rysh/cr-{change.pk}-report"
    assert branch_head(work.path, change.branch) == change.head_sha
    assert git(work.path, "log", "-1", "--format=%an <%ae>|%s", change.head_sha) == (
        "Grace Hopper <grace@example.com>|Bigger budget"
    )
    assert (change.title, change.state, change.base_sha) == ("Bigger budget", "open", main)
    assert change.base_text == recipe_text()
    assert change.proposed_text == recipe_text("bigger", size="5b", total="25b")


def test_it_falls_back_to_a_made_up_address_for_users_without_email(db):
    user = make_user("noemail")
    user.email = ""
    assert identity_for(user).email == "noemail@rysh.invalid"
    assert identity_for(user).name == "noemail"


def test_it_refuses_viewers_and_empty_or_bad_changes(work, grace):
    viewer = make_user("vera", role="viewer")
    with pytest.raises(PermissionDenied):
        change_request_open(user=viewer, kind="task", name="report", text="x", message="m")
    with pytest.raises(ReviewError, match="nothing changed"):
        change_request_open(user=grace, kind="task", name="report", text=recipe_text(), message="m")
    with pytest.raises(ReviewError, match="already exists"):
        change_request_open(user=grace, kind="task", name="report", text="x", create=True)
    with pytest.raises(ReviewError, match="not a recipe name"):
        change_request_open(user=grace, kind="task", name="../evil", text="x", create=True)
    with pytest.raises(ReviewError, match="is not on main"):
        change_request_open(user=grace, kind="task", name="ghost", text="x")
    assert ChangeRequest.objects.count() == 0


def test_the_author_cannot_approve_their_own_change(work, grace):
    change = change_request_open(user=grace, kind="task", name="report", text=recipe_text("x"))
    with pytest.raises(PermissionDenied, match="your own"):
        change_request_approve(change=change, user=grace, seen_head=change.head_sha)
    with pytest.raises(PermissionDenied):
        change_request_approve(change=change, user=make_user("vera", role="viewer"), seen_head=change.head_sha)
    change.refresh_from_db()
    assert change.state == "open"


def test_approving_fast_forwards_and_syncs_the_new_version(work, grace, linus):
    recipes_sync()
    change = change_request_open(
        user=grace, kind="task", name="report", text=recipe_text("five", size="5b", total="25b"), message="Five"
    )
    change = change_request_approve(change=change, user=linus, seen_head=change.head_sha)
    assert change.state == "merged" and change.merged_by == linus
    assert work.head() == change.head_sha == change.merged_sha  # a fast-forward
    report = Recipe.objects.get(name="report")
    assert report.latest.commit_sha == change.head_sha
    assert report.latest.author == "Grace Hopper <grace@example.com>"
    assert report.latest.message == "Five"
    assert [c.verdict for c in change.comments.all()] == ["approve", "event"]
    with pytest.raises(ReviewError, match="not open"):
        change_request_approve(change=change, user=linus, seen_head=change.head_sha)


def test_approving_after_the_branch_moved_makes_a_merge_commit(work, grace, linus):
    recipes_sync()
    change = change_request_open(user=grace, kind="task", name="report", text=recipe_text("new"))
    moved = work.commit("Someone edits scout", webs__scout=recipe_text("elsewhere"))
    change = change_request_approve(change=change, user=linus, seen_head=change.head_sha)
    assert change.state == "merged"
    assert git(work.path, "log", "-1", "--format=%P|%an|%cn", work.head()) == (
        f"{moved} {change.head_sha}|Grace Hopper|linus"
    )
    recipes = {r.name: r.latest for r in Recipe.objects.select_related("latest")}
    assert recipes["report"].spec["description"] == "new"
    assert recipes["scout"].spec["description"] == "elsewhere"
    assert recipes["report"].message.startswith(f"Merge change request #{change.pk}")


def test_a_conflict_is_reported_and_nothing_is_lost(work, grace, linus):
    recipes_sync()
    change = change_request_open(user=grace, kind="task", name="report", text=recipe_text("ours"))
    theirs = work.commit("Same lines elsewhere", tasks__report=recipe_text("theirs"))
    change = change_request_approve(change=change, user=linus, seen_head=change.head_sha)
    assert change.state == "conflict" and change.conflicts == [REPORT]
    assert work.head() == theirs
    assert branch_head(work.path, change.branch) == change.head_sha
    assert "merge conflicts in .rysh/automations/tasks/report.md" in change.comments.last().body
    # the author resolves it by revising on top of the current main; then it merges
    change = change_request_update(change=change, user=grace, text=recipe_text("both"), message="Take both")
    assert change.state == "open" and change.base_sha == theirs
    assert change.base_text == recipe_text("theirs")
    change = change_request_approve(change=change, user=linus, seen_head=change.head_sha)
    assert change.state == "merged"
    assert Recipe.objects.get(name="report").latest.spec["description"] == "both"


def test_a_broken_change_merges_but_the_good_version_keeps_running(work, grace, linus):
    recipes_sync()
    good = Recipe.objects.get(name="report").good
    change = change_request_open(user=grace, kind="task", name="report", text=BROKEN)
    change_request_approve(change=change, user=linus, seen_head=change.head_sha)
    recipe, version = recipe_for_run(kind="task", name="report")
    assert version == good
    assert not recipe.latest.valid


def test_requesting_changes_then_revising(work, grace, linus):
    change = change_request_open(user=grace, kind="task", name="report", text=recipe_text("a"))
    with pytest.raises(PermissionDenied):
        change_request_request_changes(change=change, user=grace)
    change = change_request_request_changes(change=change, user=linus, body="Too big")
    assert change.state == "changes requested"
    with pytest.raises(PermissionDenied, match="only the author"):
        change_request_update(change=change, user=linus, text=recipe_text("b"))
    old_head = change.head_sha
    change = change_request_update(change=change, user=grace, text=recipe_text("b"), message="Smaller")
    assert change.state == "open"
    assert git(work.path, "log", "-1", "--format=%P", change.head_sha) == old_head
    assert [c.verdict for c in change.comments.all()] == ["request changes", "update"]


def test_rename_and_delete_are_change_requests_too(work, grace, linus):
    recipes_sync()
    rename = change_request_rename(user=grace, kind="task", name="report", new_name="summary")
    change_request_approve(change=rename, user=linus, seen_head=rename.head_sha)
    assert Recipe.objects.get(name="report").archived
    assert Recipe.objects.get(name="summary").latest.text == recipe_text()
    delete = change_request_delete(user=grace, kind="web", name="scout", message="Not needed")
    change_request_approve(change=delete, user=linus, seen_head=delete.head_sha)
    scout = Recipe.objects.get(name="scout")
    assert scout.archived and scout.versions.count() == 1


def test_create_from_scratch(work, grace, linus):
    change = change_request_open(user=grace, kind="task", name="fresh", text=recipe_text("new"), create=True)
    assert change.base_text == "" and change.action == "create"
    change_request_approve(change=change, user=linus, seen_head=change.head_sha)
    assert Recipe.objects.get(name="fresh").good.spec["description"] == "new"


def test_closing_keeps_the_branch(work, grace, linus):
    change = change_request_open(user=grace, kind="task", name="report", text=recipe_text("x"))
    with pytest.raises(PermissionDenied):
        change_request_close(change=change, user=linus)
    change = change_request_close(change=change, user=grace)
    assert change.state == "closed"
    assert branch_head(work.path, change.branch) == change.head_sha
    with pytest.raises(ReviewError):
        change_request_approve(change=change, user=linus, seen_head=change.head_sha)


def test_two_approvals_at_once_merge_once(work, grace, linus):
    change = change_request_open(user=grace, kind="task", name="report", text=recipe_text("x"))
    ChangeRequest.objects.filter(pk=change.pk).update(state="merging")  # another approver holds it
    with pytest.raises(ReviewError, match="not open"):
        change_request_approve(change=change, user=linus, seen_head=change.head_sha)


def test_a_claim_left_by_a_dead_process_expires(work, grace, linus):
    from datetime import timedelta

    from django.utils import timezone

    change = change_request_open(user=grace, kind="task", name="report", text=recipe_text("x"))
    work_git = git(work.path, "update-ref", "refs/heads/main", change.head_sha)  # pushed, then died
    assert work_git == ""
    ChangeRequest.objects.filter(pk=change.pk).update(
        state="merging", updated_at=timezone.now() - timedelta(minutes=11)
    )
    change = change_request_approve(change=change, user=linus, seen_head=change.head_sha)
    assert change.state == "merged" and change.merged_sha == change.head_sha


def test_with_a_remote_a_concurrent_push_between_edit_and_approve(remote, grace, linus):
    """The bare 'remote': our edit, then someone pushes to main, then the approval."""
    recipes_sync()
    change = change_request_open(user=grace, kind="task", name="report", text=recipe_text("ours"))
    assert git(remote.bare, "rev-parse", f"refs/heads/{change.branch}") == change.head_sha
    remote.commit("Pushed meanwhile", webs__scout=recipe_text("pushed"))
    remote.push()
    change = change_request_approve(change=change, user=linus, seen_head=change.head_sha)
    assert change.state == "merged"
    remote_main = git(remote.bare, "rev-parse", "refs/heads/main")
    assert remote_main == change.merged_sha
    assert git(remote.bare, "log", "-1", "--format=%P", remote_main).split()[1] == change.head_sha
    versions = {r.name: r.latest.spec["description"] for r in Recipe.objects.select_related("latest")}
    assert versions == {"report": "ours", "scout": "pushed"}
    assert RecipeVersion.objects.filter(message="Pushed meanwhile").exists()


def test_with_a_remote_a_conflicting_push_leaves_both_sides_intact(remote, grace, linus):
    change = change_request_open(user=grace, kind="task", name="report", text=recipe_text("ours"))
    remote.commit("Theirs", tasks__report=recipe_text("theirs"))
    remote.push()
    pushed = git(remote.bare, "rev-parse", "refs/heads/main")
    change = change_request_approve(change=change, user=linus, seen_head=change.head_sha)
    assert change.state == "conflict" and change.conflicts == [REPORT]
    assert git(remote.bare, "rev-parse", "refs/heads/main") == pushed
    assert git(remote.bare, "rev-parse", f"refs/heads/{change.branch}") == change.head_sha


def test_with_a_remote_a_push_that_races_the_merge_is_retried(remote, grace, linus, monkeypatch):
    from catalogue.repo import GitRepo

    change = change_request_open(user=grace, kind="task", name="report", text=recipe_text("ours"))
    real_publish, raced = GitRepo.publish, []

    def publish_after_someone_else(self, branch, new, old):
        if branch == "main" and not raced:  # between our fetch and our push, a push lands
            raced.append(True)
            remote.pull()
            remote.commit("Raced", webs__scout=recipe_text("raced"))
            remote.push()
        return real_publish(self, branch, new, old)

    monkeypatch.setattr(GitRepo, "publish", publish_after_someone_else)
    change = change_request_approve(change=change, user=linus, seen_head=change.head_sha)
    assert change.state == "merged" and raced
    names = {r.name: r.latest.spec["description"] for r in Recipe.objects.select_related("latest")}
    assert names == {"report": "ours", "scout": "raced"}


def test_a_failed_merge_puts_the_request_back(work, grace, linus, monkeypatch):
    from catalogue.repo import GitRepo

    change = change_request_open(user=grace, kind="task", name="report", text=recipe_text("x"))

    def always_moved(self, branch, new, old):
        raise PushRejected("moved")

    monkeypatch.setattr(GitRepo, "publish", always_moved)
    with pytest.raises(ReviewError, match="kept moving"):
        change_request_approve(change=change, user=linus, seen_head=change.head_sha)
    change.refresh_from_db()
    assert change.state == "open"
    assert not ReviewComment.objects.filter(verdict="approve").exists()


def test_the_text_diff_numbers_and_classes_lines():
    rows = text_diff("a\nb\nc\n", "a\nB\nc\nd\n")
    assert [(r.kind, r.text, r.old, r.new) for r in rows] == [
        ("hunk", "@@ -1,3 +1,4 @@", None, None),
        ("ctx", "a", 1, 1),
        ("del", "b", 2, None),
        ("add", "B", None, 2),
        ("ctx", "c", 3, 3),
        ("add", "d", None, 4),
    ]
    assert text_diff("same\n", "same\n") == []


def test_the_plan_delta_says_what_tonight_costs():
    delta = plan_delta(
        recipe_text(size="4b", total="20b"), recipe_text(size="5b", total="25b"), kind="task", name="report"
    )
    assert delta.worst_line == "worst case 1s → 25b, +$10.00"  # on the default claude-sonnet-5-5
    assert delta.before.summary[2] == "outer:   tokensTotal=4000000  duration=0s"
    assert [changed for _, _, changed in delta.summary_rows] == [False, True, True]
    assert plan_delta(None, recipe_text(), kind="task", name="x").worst_line == ("worst case — → 1s, +$40.00")
    assert plan_delta(recipe_text(), None, kind="task", name="x").worst_line == ("worst case 1s → —, −$40.00")
    assert plan_delta(recipe_text(), BROKEN, kind="task", name="x").worst_line == ("worst case 1s → invalid")


def test_a_model_that_changes_generation_says_the_same_work_counts_about_30_percent_more():
    old = recipe_text().replace("---\ndescription", "---\nmodel: claude-sonnet-4-6\ndescription", 1)
    delta = plan_delta(old, recipe_text(), kind="task", name="report")  # to the default, claude-sonnet-5-5
    assert delta.notes == [
        "the model changes generation, claude-sonnet-4-6 (4.x) to claude-sonnet-5-5 (5.x): its tokenizer counts "
        "about 30% more tokens for the same text, so the same work now counts about 30% more tokens against the "
        "same budget"
    ]
    assert "fewer" in plan_delta(recipe_text(), old, kind="task", name="report").notes[0]
    assert plan_delta(recipe_text(), recipe_text(size="5b"), kind="task", name="report").notes == []
    assert plan_delta(old, BROKEN, kind="task", name="report").notes == []
