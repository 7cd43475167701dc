"""The until lint (docs/recipes.md): can the judge check this goal from the result alone?

The judge reads only the pass's saved result and the `until:` text, and answers YES or NO.
A goal it can check names something it can count or see in that result: a number, a label
(a quoted text or a word in capitals such as PUBLISHED), a URL or a path, a file. A goal
that leans on words it must guess ("good", "enough", "properly") is decided by the judge's
taste, not the result, so it may never say YES, or say it too early.

The lint only warns, never refuses: a human may know better. Pure: stdlib only.
"""

from __future__ import annotations

import re

SUGGESTION = (
    "name what it can count or see instead (a number of items, a label, a URL, a file), "
    'e.g. until: "results.md lists at least 10 items, each with a URL and a one-line summary"'
)

# Words that always leave the judge to guess, whatever else the goal names.
VAGUE = (
    "good",
    "good enough",
    "enough",
    "properly",
    "proper",
    "high quality",
    "high-quality",
    "as needed",
    "as necessary",
    "as appropriate",
    "if needed",
    "appropriate",
    "appropriately",
    "nice",
    "nicely",
    "reasonable",
    "reasonably",
    "sufficient",
    "sufficiently",
    "adequate",
    "adequately",
    "satisfactory",
    "decent",
    "well",
    "well-written",
    "better",
    "best",
    "great",
    "excellent",
    "polished",
    "thorough",
    "thoroughly",
    "comprehensive",
    "makes sense",
    "looks right",
)

# Words that are only vague when nothing countable or visible goes with them: "complete and
# not labelled PARTIAL" is checkable, a bare "the research is complete" is not.
LOOSE = (
    "complete",
    "completed",
    "completely",
    "done",
    "finished",
    "ready",
    "correct",
    "correctly",
    "fully",
    "strong",
    "accurate",
    "useful",
    "relevant",
)

_NUMBER_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty hundred thousand dozen single"
).split()

_EXTENSIONS = (
    "md markdown txt csv tsv json jsonl yaml yml html htm xml pdf png jpe?g gif svg webp log py js ts sql "
    "xlsx? docx? pptx? zip"
).split()

# What the judge can observe in a result. Placeholders ({{args}}) are removed first: what
# fills them is not known here, and a URL or number inside one is not the goal's own.
_OBSERVABLE = (
    ("a count", re.compile(r"\d|\b(?:" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)),
    ("a quoted label", re.compile(r"'[^'\n]+'|\"[^\"\n]+\"|`[^`\n]+`|“[^”\n]+”|‘[^’\n]+’")),
    ("a label in capitals", re.compile(r"\b[A-Z][A-Z_]{1,}\b")),
    ("a URL", re.compile(r"https?://|\burls?\b|\blinks?\b", re.IGNORECASE)),
    ("a path", re.compile(r"(?<![\w/])/[\w\-.~/]*")),
    # starts only where a name can start, so a long run of names stays linear
    ("a file", re.compile(r"(?<![\w-])[\w-]+\.(?:" + "|".join(_EXTENSIONS) + r")\b", re.IGNORECASE)),
)
_PLACEHOLDER = re.compile(r"\{\{[^{}\n]*\}\}")  # as catalogue.recipe.placeholders finds them
# "as well" means "also"; it is not a judgement of quality.
_NOT_VAGUE = re.compile(r"\bas well\b", re.IGNORECASE)


def _word_re(words: tuple[str, ...]) -> re.Pattern:
    # Longest first, so "good enough" wins over "good" and "enough".
    alternatives = sorted((re.escape(word).replace(r"\ ", r"\s+") for word in words), key=len, reverse=True)
    return re.compile(r"(?<![\w-])(?:" + "|".join(alternatives) + r")(?![\w-])", re.IGNORECASE)


_VAGUE_RE = _word_re(VAGUE)
_LOOSE_RE = _word_re(LOOSE)


def observables(goal: str) -> list[str]:
    """What kinds of observable thing the goal names ("a count", "a URL"...), in a fixed order."""
    text = _PLACEHOLDER.sub(" ", goal)
    return [kind for kind, pattern in _OBSERVABLE if pattern.search(text)]


def vague_words(goal: str) -> list[str]:
    """The guess-words in the goal, lower-cased, each once, in order of appearance; the loose
    ones only when the goal names nothing observable."""
    text = _NOT_VAGUE.sub(" ", _PLACEHOLDER.sub(" ", goal))
    found = [match.group(0) for match in _VAGUE_RE.finditer(text)]
    if not observables(goal):
        found += [match.group(0) for match in _LOOSE_RE.finditer(text)]
        found.sort(key=text.find)
    return list(dict.fromkeys(" ".join(word.lower().split()) for word in found))


def goal_warning(goal: str) -> str | None:
    """One warning for a goal the judge cannot check from the result alone, else None.
    An empty goal is not linted here: budgets/plan.py already says the loop cannot run."""
    if not goal or not goal.strip():
        return None
    words = vague_words(goal)
    blind = not observables(goal)
    if not words and not blind:
        return None
    reasons = []
    if blind:
        reasons.append("names nothing the judge can count or see in the result")
    if words:
        reasons.append("leans on words the judge must guess: " + ", ".join(f'"{word}"' for word in words))
    return "the goal " + " and ".join(reasons) + "; " + SUGGESTION
