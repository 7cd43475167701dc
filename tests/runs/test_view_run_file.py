"""The results viewer reads only the head of a file: never a huge or binary result whole."""

from pathlib import Path

import pytest

from runs import views
from runs.results import snapshots
from runs.views import TEXT_VIEW_LIMIT
from tests.runs.test_view_runs import client_for, finished, user_with  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db


@pytest.fixture
def reads(monkeypatch):
    """The size of every read made on a file the viewer opened (-1: the whole file)."""
    asked: list[int] = []
    real_open = Path.open

    class Recording:
        def __init__(self, handle):
            self.handle = handle

        def read(self, size=-1):
            asked.append(size)
            return self.handle.read(size)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def __getattr__(self, name):
            return getattr(self.handle, name)

    def recording_open(self, mode="r", *args, **kwargs):
        handle = real_open(self, mode, *args, **kwargs)
        return Recording(handle) if "b" in mode and "r" in mode else handle

    def whole(self):
        asked.append(-1)
        return real_open(self, "rb").read()

    monkeypatch.setattr(Path, "open", recording_open)
    monkeypatch.setattr(Path, "read_bytes", whole)
    return asked


def saved(run, name: str, data: bytes, reads: list | None = None) -> None:
    """A result file the run saved, kept in its last pass's snapshot as the engine keeps it
    (the snapshot's own reads are not the viewer's)."""
    (Path(run.output_dir) / name).write_bytes(data)
    last = run.passes.order_by("-number").first()
    last.snapshot_at = None
    snapshots.snapshot_pass(last, Path(run.output_dir), since=None)
    if reads is not None:
        reads.clear()


def test_it_shows_only_the_head_of_a_file_over_the_limit_and_says_it_was_cut(finished, reads):  # noqa: F811
    saved(finished, "big.txt", b"a" * TEXT_VIEW_LIMIT + b"TAIL-NEVER-SHOWN" * 100_000, reads)  # ~2 MB
    response = client_for(user_with("viewer")).get(f"/runs/{finished.pk}/files/big.txt")
    assert response.status_code == 200
    page = response.content.decode()
    assert "The file is cut here" in page and f"first {TEXT_VIEW_LIMIT // 1024} KB" in page
    assert "TAIL-NEVER-SHOWN" not in page and "a" * 1000 in page
    assert reads and all(0 < size <= TEXT_VIEW_LIMIT + 1 for size in reads), reads


def test_a_file_within_the_limit_is_shown_whole_without_a_cut_note(finished, reads):  # noqa: F811
    saved(finished, "exact.txt", b"b" * (TEXT_VIEW_LIMIT - 3) + "é!".encode(), reads)  # exactly the limit
    page = client_for(user_with("viewer")).get(f"/runs/{finished.pk}/files/exact.txt").content.decode()
    assert "The file is cut here" not in page and "é!" in page
    assert all(0 < size <= TEXT_VIEW_LIMIT + 1 for size in reads), reads


def test_a_cut_inside_a_character_drops_it_rather_than_showing_garbage(finished):  # noqa: F811
    saved(finished, "split.txt", b"c" * (TEXT_VIEW_LIMIT - 1) + "é".encode() + b"more")  # é straddles the cut
    page = client_for(user_with("viewer")).get(f"/runs/{finished.pk}/files/split.txt").content.decode()
    assert "The file is cut here" in page and "\ufffd" not in page


def test_a_binary_result_is_offered_as_a_download_not_shown(finished):  # noqa: F811
    saved(finished, "shot.jpg", b"\xff\xd8\xff\xe0\0\x10JFIF\0" + b"\x80" * 5000)
    client = client_for(user_with("viewer"))
    page = client.get(f"/runs/{finished.pk}/files/shot.jpg").content.decode()
    assert "This file is not text" in page and "JFIF" not in page
    download = client.get(f"/runs/{finished.pk}/files/shot.jpg?download=1")
    assert b"".join(download.streaming_content).startswith(b"\xff\xd8")


def test_read_head_reads_one_byte_past_the_limit_at_most(tmp_path, reads):
    target = tmp_path / "f.bin"
    target.write_bytes(b"x" * 100)
    with target.open("rb") as handle:
        assert views._read_head(handle, 10) == (b"x" * 10, True)
    with target.open("rb") as handle:
        assert views._read_head(handle, 100) == (b"x" * 100, False)
    assert reads == [11, 101]
