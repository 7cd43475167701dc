"""What a test command said, in short (the `test_run` tool, docs/agent-tools.md). Pure.

A test suite's log can be far longer than the few facts the agent needs: how many tests passed,
failed and errored, and which failed first and why. `summarize` reads those facts from the log
of pytest, `go test` or unittest, or from any "N passed, M failed" line; when nothing parses it
keeps the exit status and the log's tail, so the answer is never empty.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

FIRST_FAILURES = 5  # failures listed in full (id and a few lines each)
FAILURE_LINES = 6  # lines kept of each
LINE_CHARS = 300  # a kept line longer than this is cut
TAIL_LINES = 30  # when nothing parses: the last lines of the log

_COUNT = r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)"
# pytest's last line: "==== 2 failed, 8 passed, 1 error in 0.31s ====" (or without the rules, -q)
PYTEST_SUMMARY = re.compile(rf"^=*\s*((?:{_COUNT}(?:, )?)+) in [0-9.]+s", re.MULTILINE)
PYTEST_NONE = re.compile(r"^=*\s*no tests ran in [0-9.]+s", re.MULTILINE)
PYTEST_SHORT = re.compile(r"^(FAILED|ERROR) (\S+)(?: - (.*))?$", re.MULTILINE)
PYTEST_SECTION = re.compile(r"^_{3,} (?:ERROR (?:at \w+ of|collecting) )?(.+?) _{3,}$", re.MULTILINE)
LOCATION = re.compile(r"^\S+:\d+: \w+")  # pytest's "tests/test_a.py:4: AssertionError"
GO_RESULT = re.compile(r"^\s*--- (PASS|FAIL|SKIP): (\S+)", re.MULTILINE)
GO_PACKAGE_FAIL = re.compile(r"^FAIL\s+(\S+)\s+\[(build failed|setup failed)\]", re.MULTILINE)
UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in [0-9.]+s", re.MULTILINE)
UNITTEST_FAILED = re.compile(r"^FAILED \(([^)]*)\)", re.MULTILINE)
UNITTEST_HEAD = re.compile(r"^(FAIL|ERROR): (\S+) \(([^)]+)\)", re.MULTILINE)
GENERIC = re.compile(r"(\d+)\s+(passed|passing|failed|failing|failures?|errors?|skipped|pending)\b", re.IGNORECASE)


@dataclass
class Failure:
    id: str
    lines: list[str] = field(default_factory=list)


@dataclass
class Summary:
    """What test_run answers. `format`: which reader understood the log (pytest, go, unittest,
    counts) or "unparsed", with the log's `tail` instead of counts."""

    status: str  # passed | failed | killed
    exit_status: int | None
    format: str = "unparsed"
    passed: int | None = None
    failed: int | None = None
    errors: int | None = None
    skipped: int | None = None
    failures: list[Failure] = field(default_factory=list)
    more_failures: int = 0  # failures named in the log beyond those listed
    tail: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        shown = {k: v for k, v in asdict(self).items() if v not in (None, [], 0) or k in ("exit_status", "status")}
        if self.format != "unparsed":
            shown.update({k: getattr(self, k) or 0 for k in ("passed", "failed", "errors", "skipped")})
        return shown


def summarize(log: str, exit_status: int | None, killed: str | None = None) -> Summary:
    """The facts of a test command's `log` (stdout and stderr) and how it ended."""
    status = "killed" if killed else ("passed" if exit_status == 0 else "failed")
    summary = Summary(status=status, exit_status=exit_status)
    for reader in (_pytest, _go, _unittest, _counts):
        if reader(log, summary):
            break
    else:
        summary.tail = [_cut(line) for line in log.rstrip("\n").splitlines()[-TAIL_LINES:]]
    if len(summary.failures) > FIRST_FAILURES:
        summary.more_failures = len(summary.failures) - FIRST_FAILURES
        summary.failures = summary.failures[:FIRST_FAILURES]
    return summary


def counts_of(text: str) -> dict[str, int]:
    """pytest's "2 failed, 8 passed, 1 error" as {"failed": 2, "passed": 8, "errors": 1}."""
    counts: dict[str, int] = {}
    for number, word in re.findall(_COUNT, text):
        key = {"error": "errors", "warning": "warnings"}.get(word, word)
        counts[key] = counts.get(key, 0) + int(number)
    return counts


def _pytest(log: str, summary: Summary) -> bool:
    found = list(PYTEST_SUMMARY.finditer(log))
    if not found:
        if not PYTEST_NONE.search(log):
            return False
        counts = {}
    else:
        counts = counts_of(found[-1].group(1))
    _set(summary, "pytest", counts.get("passed", 0), counts.get("failed", 0), counts.get("errors", 0))
    summary.skipped = counts.get("skipped", 0)
    sections = _sections(log)
    for kind, test_id, message in PYTEST_SHORT.findall(log):
        lines = sections.get(test_id.split("::")[-1]) or ([message] if message else [])
        summary.failures.append(Failure(test_id if kind == "FAILED" else f"{test_id} (error)", lines))
    if not summary.failures:  # no short summary (-rN): the sections' own titles
        summary.failures = [Failure(name, lines) for name, lines in sections.items()]
    return True


def _sections(log: str) -> dict[str, list[str]]:
    """pytest's failure sections ("____ test_name ____" then the traceback): the `E` lines
    (what was expected and what came), else the last lines, by the test's name."""
    found = list(PYTEST_SECTION.finditer(log))
    sections = {}
    for k, head in enumerate(found):
        end = found[k + 1].start() if k + 1 < len(found) else len(log)
        body = log[head.end() : end]
        body = re.split(r"^(?:=+ short test summary|-+ Captured )", body, maxsplit=1, flags=re.MULTILINE)[0]
        lines = [line for line in body.splitlines() if line.strip()]
        wanted = [line for line in lines if line.startswith("E ")]
        if wanted and LOCATION.match(lines[-1]):
            wanted = [*wanted[: FAILURE_LINES - 1], lines[-1]]  # where it failed, last
        wanted = wanted or lines[-FAILURE_LINES:]
        name = head.group(1).split("::")[-1].split(".")[-1]
        sections[name] = [_cut(line) for line in wanted[:FAILURE_LINES]]
    return sections


def _go(log: str, summary: Summary) -> bool:
    results = GO_RESULT.findall(log)
    broken = GO_PACKAGE_FAIL.findall(log)
    if not results and not broken:
        return False
    verdicts = [verdict for verdict, _ in results]
    _set(summary, "go", verdicts.count("PASS"), verdicts.count("FAIL"), len(broken))
    summary.skipped = verdicts.count("SKIP")
    lines = log.splitlines()
    for k, line in enumerate(lines):
        match = GO_RESULT.match(line)
        if match and match.group(1) == "FAIL":
            said = [x.strip() for x in _indented_after(lines, k) or _logged_before(lines, k)]
            summary.failures.append(Failure(match.group(2), [_cut(x) for x in said[:FAILURE_LINES]]))
    summary.failures += [Failure(f"{package} ({why})") for package, why in broken]
    return True


def _indented_after(lines: list[str], k: int) -> list[str]:
    """The lines `go test` indents below a `--- FAIL:` line (what the test logged)."""
    indent = len(lines[k]) - len(lines[k].lstrip())
    said = []
    for line in lines[k + 1 :]:
        if not line.strip() or len(line) - len(line.lstrip()) <= indent or GO_RESULT.match(line):
            break
        said.append(line)
    return said


def _logged_before(lines: list[str], k: int) -> list[str]:
    """What a test logged above its `--- FAIL:` line (go 1.14 on prints it as it comes)."""
    said = []
    for line in reversed(lines[:k]):
        if line.startswith(("=== ", "--- ")) or not line.startswith((" ", "\t")):
            break
        said.append(line)
    return said[::-1]


def _unittest(log: str, summary: Summary) -> bool:
    ran = UNITTEST_RAN.findall(log)
    if not ran:
        return False
    total = int(ran[-1])
    failed = errors = skipped = 0
    verdict = UNITTEST_FAILED.findall(log)
    for part in (verdict[-1] if verdict else "").split(","):
        name, _, number = part.strip().partition("=")
        if number.isdigit():
            failed += int(number) if name == "failures" else 0
            errors += int(number) if name == "errors" else 0
            skipped += int(number) if name == "skipped" else 0
    skipped = skipped or sum(int(n) for n in re.findall(r"^OK \(skipped=(\d+)\)", log, re.MULTILINE))
    _set(summary, "unittest", max(total - failed - errors - skipped, 0), failed, errors)
    summary.skipped = skipped
    blocks = re.split(r"^={20,}$", log, flags=re.MULTILINE)
    for block in blocks:
        head = UNITTEST_HEAD.search(block)
        if head:
            block = block[: ran.start()] if (ran := UNITTEST_RAN.search(block)) else block
            body = [line for line in block[head.end() :].splitlines() if line.strip() and not set(line) <= {"-"}]
            wanted = body[-FAILURE_LINES:]
            where, name = head.group(3), head.group(2)
            test_id = where if where.endswith(f".{name}") else f"{where}.{name}"  # 3.11 names it whole
            summary.failures.append(Failure(test_id, [_cut(x) for x in wanted]))
    return True


def _counts(log: str, summary: Summary) -> bool:
    """Any runner's "N passed, M failed" (jest, mocha, cargo, a script's own): the last line
    of the log that says such counts."""
    for line in reversed(log.splitlines()):
        found = GENERIC.findall(line)
        if not found:
            continue
        counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
        for number, word in found:
            word = word.lower()
            key = (
                "passed"
                if word in ("passed", "passing")
                else "skipped"
                if word in ("skipped", "pending")
                else "errors"
                if word.startswith("error")
                else "failed"
            )
            counts[key] += int(number)
        _set(summary, "counts", counts["passed"], counts["failed"], counts["errors"])
        summary.skipped = counts["skipped"]
        return True
    return False


def _set(summary: Summary, form: str, passed: int, failed: int, errors: int) -> None:
    summary.format, summary.passed, summary.failed, summary.errors = form, passed, failed, errors


def _cut(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"
