"""The slot a run holds (runs/slots.py): one per recipe, or for a recipe with a working copy one
per arguments and --workdir, with a results folder of its own that is a safe, readable name."""

import re

from hypothesis import given
from hypothesis import strategies as st

from runs.slots import PLAIN_FOLDER, run_slot, slot_folder, slot_label

ARGS = st.lists(st.text(max_size=60), max_size=4)
WORKDIR = st.none() | st.sampled_from([".", "pkg", "pkg/sub", "tiny-calc"])


def test_a_recipe_without_a_copy_has_one_slot_whatever_its_arguments():
    assert run_slot("task/notes", side_by_side=False, args=["tides"], workdir=None) == "task/notes"
    assert run_slot("web/scout", side_by_side=False, args=[], workdir=None) == "web/scout"


def test_a_coding_run_s_slot_reads_as_its_arguments():
    slot = run_slot("code/softdev-loop", side_by_side=True, args=["add a Sum function"], workdir=None)
    assert re.fullmatch(r"code/softdev-loop/add-a-sum-function-[0-9a-f]{8}", slot)
    assert run_slot("code/softdev-loop", side_by_side=True, args=[], workdir=None) == "code/softdev-loop"
    assert slot_folder([], None) == PLAIN_FOLDER


@given(ARGS, WORKDIR, ARGS, WORKDIR)
def test_other_arguments_or_workdir_make_another_slot_and_folder(args, workdir, other, other_workdir):
    mine, theirs = slot_folder(args, workdir), slot_folder(other, other_workdir)
    if (args, workdir) == (other, other_workdir):
        assert mine == theirs and slot_label(args, workdir) == slot_label(other, other_workdir)
    else:  # the digest tells apart what slugs alike ("a b" and "a-b")
        assert mine != theirs


@given(ARGS, WORKDIR)
def test_a_slot_folder_is_one_safe_name_of_bounded_length(args, workdir):
    folder = slot_folder(args, workdir)
    assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", folder) and len(folder) <= 49
    assert folder not in (".", "..") and "/" not in folder
    assert len(run_slot("t" * 210, side_by_side=True, args=args, workdir=workdir)) <= 260
