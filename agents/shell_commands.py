"""What a shell command line runs, as the approval patterns of commands read it (`bash(git push:*)`,
docs/approvals.md): a real shell parser (tree-sitter-bash), then each simple command reduced to
the program it runs and its words.

Reduced: quotes and escapes removed (`gi''t`, `"git"`, `g\\it`, `$'git'`), a path to its base name
(`/usr/bin/git`), wrappers and their options peeled off (`env -i`, `timeout 5`, `nice`, `nohup`,
`command -p`, `exec`, `sudo`, `xargs` …), git's global options (`-C .`, `--no-pager`, `-c
user.name=…`), every command of a list, pipeline, subshell, compound command, function body and
command or process substitution, and `sh|bash|… -c SCRIPT` read as a command line of its own.

A word the line does not spell out (`$X`, `$(…)`, a glob, a brace expansion) is WILD: it could be
any words, so a pattern holds a command when such a word stands where the pattern's words are.

What cannot be reduced is *unreadable*, and every command pattern holds it (fail closed): text
run as commands (`eval`, `source`, `trap`, a shell reading its input or a script file), a command
name that is an expansion, an alias or function defined inline, git told to run other commands
(`-c alias.p=push`, `git config alias.…`), settings that make the shell or git run text (`PS4=`,
`GIT_CONFIG_*=`), arithmetic over variables (bash runs `$(…)` found in a variable it evaluates),
options a wrapper does not have, and text the parser cannot read.

Pure: no Django. The sandbox stays the boundary; this is a person's say on top of it, and it reads
the command line, not what a program does (a script file, a Makefile, `python -c`, a copy of git
under another name are other programs).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from functools import cache, lru_cache

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

# an approval pattern of commands, `bash(git push:*)`: the tool and its spec (runs.approvals
# matches it; a policy file's rules are checked against it: policies.rules)
COMMAND_PATTERN = re.compile(r"(?P<tool>[a-z_][a-z0-9_]*)\((?P<spec>.*)\)\Z", re.DOTALL)
WILD = None  # a word whose text the command line does not say
MAX_DEPTH = 8  # `sh -c "sh -c '…'"` nested deeper than this is unreadable

# -- approval subjects -------------------------------------------------------------------------------


class CommandSubject(str):
    """An approval subject read from a command line (its text is what a person is shown); it says
    itself whether a command pattern's spec (`git push:*`, `make deploy`) holds it."""

    unreadable = False

    def held_by(self, spec: str) -> bool:
        raise NotImplementedError


class SimpleCommand(CommandSubject):
    words: tuple[str | None, ...]

    def __new__(cls, words: tuple[str | None, ...]) -> SimpleCommand:
        subject = super().__new__(cls, " ".join("…" if word is WILD else word for word in words))
        subject.words = words
        return subject

    def held_by(self, spec: str) -> bool:
        spec = spec.strip()
        prefix = spec.endswith(":*")
        target = pattern_words(spec[:-2] if prefix else spec)
        if not target:
            return prefix  # `bash(:*)`: every command
        return could_be(self.words, target, prefix=prefix)


class Unreadable(CommandSubject):
    unreadable = True

    def held_by(self, spec: str) -> bool:
        return True


def pattern_words(spec: str) -> tuple[str, ...]:
    """A pattern's words as a command's are read: quotes removed, the program by its base name."""
    try:
        words = shlex.split(spec)
    except ValueError:
        words = spec.split()
    return (_base_name(words[0]), *words[1:]) if words else ()


def could_be(words: tuple[str | None, ...], target: tuple[str, ...], *, prefix: bool) -> bool:
    """Whether `words` could be `target` (or start with it, for a prefix): a WILD word stands for
    any number of words, none included."""

    @cache
    def fits(i: int, j: int) -> bool:
        if j == len(target):
            return prefix or all(word is WILD for word in words[i:])
        if i == len(words):
            return False
        if words[i] is WILD:
            return fits(i + 1, j) or fits(i, j + 1)
        return words[i] == target[j] and fits(i + 1, j + 1)

    return fits(0, 0)


def command_subjects(command: str) -> list[str]:
    """What the approval patterns of `bash` are matched against: the command as given, each simple
    command it runs (SimpleCommand) and, when it cannot be read, why (Unreadable)."""
    reading = read_command_line(command)
    subjects: list[str] = [command.strip()]
    subjects += [SimpleCommand(words) for words in reading.commands]  # each kept: texts may repeat, words not
    subjects += [Unreadable(why) for why in reading.unreadable]
    return subjects


# -- reading -------------------------------------------------------------------------------------------


@dataclass
class Reading:
    commands: list[tuple[str | None, ...]] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(Language(tree_sitter_bash.language()))


def read_command_line(text: str) -> Reading:
    reading = Reading()
    _Reader(reading).line(text, depth=0)
    reading.commands = list(dict.fromkeys(reading.commands))
    reading.unreadable = list(dict.fromkeys(reading.unreadable))
    return reading


# builtins and programs that run text, or name variables whose evaluation can
EVALUATORS = {
    "eval": "eval runs text as commands",
    "source": "source runs a file's commands",
    ".": ". runs a file's commands",
    "alias": "an alias defined inline",
    "trap": "trap runs text as commands",
    "fc": "fc runs commands from the history",
    "let": "let evaluates arithmetic over variables",
    "bind": "bind can run text as commands",
    "complete": "complete can run text as commands",
    "compgen": "compgen can run text as commands",
    "enable": "enable can load new builtins",
}
# a reserved word where a command's name stands: the parser misread a compound command
RESERVED = frozenset("{ } ! [[ ]] if then else elif fi case esac for select while until do done function in".split())
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "yash", "posh", "ash", "fish", "rbash"})
# variables whose value a shell or git runs or reads as configuration
RISKY_VARIABLE = re.compile(
    r"(PS[0-9]|PROMPT_COMMAND|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|BASH_FUNC_.*|PAGER|EDITOR|VISUAL|LD_PRELOAD|LD_AUDIT"
    r"|GIT_(?!(AUTHOR|COMMITTER)_(NAME|EMAIL|DATE)$|DIR$|WORK_TREE$|INDEX_FILE$|TERMINAL_PROMPT$).*)\Z"
)
ARITHMETIC_OPERATORS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})


class _Refused(Exception):
    """A command that cannot be reduced; the message says why."""


class _Reader:
    def __init__(self, reading: Reading):
        self.reading = reading

    def refuse(self, text: str, why: str) -> None:
        shown = " ".join(text.split())
        shown = shown if len(shown) <= 200 else shown[:199] + "…"
        self.reading.unreadable.append(f"{shown}: {why} (cannot tell what it runs)")

    def line(self, text: str, *, depth: int) -> None:
        if depth > MAX_DEPTH:
            self.refuse(text, f"shells nested more than {MAX_DEPTH} deep")
            return
        tree = _parser().parse(text.encode("utf-8", "surrogatepass"))
        if tree.root_node.has_error:
            self.refuse(text, "the shell's grammar cannot read it")
        self.walk(tree.root_node, depth)

    # -- the tree ----------------------------------------------------------------------------------

    def walk(self, node: Node, depth: int) -> None:
        """Every node once: each simple command reduced, every construct that runs text refused."""
        try:
            self.visit(node, depth)
        except _Refused as refused:
            self.refuse(_text(node), str(refused))
        for child in node.children:
            self.walk(child, depth)

    def visit(self, node: Node, depth: int) -> None:
        kind = node.type
        if kind == "command":
            self.command(node, depth)
        elif kind == "function_definition":
            raise _Refused("a function defined inline")
        elif kind == "variable_assignment":
            _check_variable(_text(node.children[0]).partition("[")[0])
        elif kind in ("declaration_command", "unset_command"):
            _check_declaration(node)
        elif kind == "expansion" and re.search(r"@P\}\Z", _text(node)):
            raise _Refused("${…@P} runs the commands in a variable's value")
        elif _names_a_variable(_arithmetic_parts(node)):
            raise _Refused("arithmetic over variables runs the commands their values hold")

    def command(self, node: Node, depth: int) -> None:
        words: list[str | None] = []
        for child in node.children:
            if child.type == "variable_assignment" or child.type.endswith("redirect") or not child.is_named:
                continue  # checked by the walk: an assignment's name, a redirect's substitutions
            target = child.named_children[0] if child.type == "command_name" else child
            words.append(word_value(target))
        self.reduce(words, depth)

    # -- one simple command ------------------------------------------------------------------------

    def reduce(self, words: list[str | None], depth: int) -> None:
        """Record `words` (a simple command) as what it runs, peeling wrappers off one at a time."""
        while words:
            if words[0] is WILD:
                raise _Refused("the command's name is an expansion, a glob or a substitution")
            name = _base_name(words[0])
            words = [name, *words[1:]]
            if name in RESERVED:
                raise _Refused(f"{name!r} where a command's name stands")
            if name in EVALUATORS:
                raise _Refused(EVALUATORS[name])
            _check_builtin(name, words)
            if name in SHELLS:
                self.record(words)
                self.shell(words, depth)
                return
            if name == "git":
                self.record(git_words(words))
                return
            if name in WRAPPERS:
                self.record(words)
                inner = WRAPPERS[name](words[1:])
                if isinstance(inner, _Script):
                    self.line(inner.text, depth=depth + 1)
                    return
                words = inner
                continue
            if name == "find":
                for command in find_commands(words):
                    self.reduce(command, depth)
            self.record(words)
            return

    def record(self, words: list[str | None]) -> None:
        self.reading.commands.append(tuple(words))

    def shell(self, words: list[str | None], depth: int) -> None:
        """`bash -c SCRIPT` reads SCRIPT as a command line; a shell reading a file or its input
        runs commands nobody can see here."""
        script, operands, informational = _shell_arguments(words[1:])
        if script is not None:
            if operands and operands[0] is WILD:
                raise _Refused("the script given to -c is an expansion")
            if not operands:
                raise _Refused("-c without a script")
            self.line(operands[0], depth=depth + 1)
            return
        if operands:
            raise _Refused("a shell running a script file")
        if not informational:
            raise _Refused("a shell reading commands from its input")


@dataclass(frozen=True)
class _Script:
    """What a wrapper runs through a shell (`sudo -s CMD`, `watch CMD`, `env -S 'CMD'`)."""

    text: str


def _text(node: Node) -> str:
    return node.text.decode("utf-8", "replace")


def _base_name(word: str) -> str:
    return word.rstrip("/").rsplit("/", 1)[-1] if "/" in word.rstrip("/") else word


def _check_variable(name: str) -> None:
    if RISKY_VARIABLE.match(name):
        raise _Refused(f"setting {name}, which the shell or git runs or reads as configuration")


def _check_declaration(node: Node) -> None:
    """`declare -i` evaluates arithmetic; a name with a subscript, or one the line does not spell,
    is evaluated by the shell (`unset 'a[$(cmd)]'` runs cmd)."""
    for child in node.named_children:
        if child.type in ("variable_assignment", "variable_name"):
            continue
        value = word_value(child)
        if value is WILD or "[" in value:
            raise _Refused("a declared or unset name the shell evaluates")
        if re.fullmatch(r"[-+][A-Za-z]*i[A-Za-z]*", value):
            raise _Refused("an integer variable evaluates arithmetic over variables")
        if value.startswith(("-", "+")):
            continue
        _check_variable(value.partition("=")[0])


def _check_builtin(name: str, words: list[str | None]) -> None:
    """Builtins that evaluate a name or run a callback given as an argument."""
    args = words[1:]
    if name in ("mapfile", "readarray") and any(w is WILD or w.startswith("-C") for w in args):
        raise _Refused(f"{name} -C runs text as commands")
    if name == "hash" and any(w is WILD or w.startswith("-p") for w in args):
        raise _Refused("hash -p gives a command another program")
    named = {"read": args, "printf": args[1:2] if args[:1] == ["-v"] else [], "test": _after(args, "-v")}
    named["["] = named["test"]
    if any(w is WILD or "[" in w for w in named.get(name, [])):
        raise _Refused(f"{name} evaluates a name the shell expands")


def _after(args: list[str | None], flag: str) -> list[str | None]:
    return [args[i + 1] for i, word in enumerate(args[:-1]) if word == flag]


def _arithmetic_parts(node: Node) -> list[Node]:
    """The parts of `node` the shell evaluates as arithmetic ([] when it is not arithmetic)."""
    kind, children = node.type, node.children
    if kind == "arithmetic_expansion":
        return children
    if kind == "c_style_for_statement":
        return [child for child in children if child.type != "do_group"]
    if kind == "compound_statement" and children and children[0].type == "((":
        return children
    if kind == "subscript":
        index = node.named_children[1:]
        return [] if len(index) == 1 and _text(index[0]) in ("@", "*") else index
    if kind == "test_command" and children and children[0].type == "[[":
        arithmetic = any(_text(op) in ARITHMETIC_OPERATORS for op in _descendants(node, "test_operator"))
        return children if arithmetic else []
    return []


def _names_a_variable(parts: list[Node]) -> bool:
    named = ("variable_name", "simple_expansion", "expansion", "word", "command_substitution", "string")
    nodes = [node for part in parts for node in (part, *_descendants(part))]
    return any(node.type in named and not re.fullmatch(r"[0-9]+", _text(node)) for node in nodes)


def _descendants(node: Node, kind: str | None = None):
    for child in node.children:
        if kind is None or child.type == kind:
            yield child
        yield from _descendants(child, kind)


# -- words ---------------------------------------------------------------------------------------------


def word_value(node: Node) -> str | None:
    """The word a node stands for once the shell removed its quotes, or WILD when the line does not
    say it: an expansion or substitution, or an unquoted glob or brace expansion."""
    chars = _chars(node)
    if chars is None:
        return WILD
    unquoted = "".join(c if not quoted else "\0" for c, quoted in chars)
    if re.search(r"[*?\[]", unquoted) or re.search(r"\{[^}]*(,|\.\.)[^}]*\}", unquoted):
        return WILD
    return "".join(c for c, _ in chars)


def _chars(node: Node) -> list[tuple[str, bool]] | None:
    """(character, quoted) pairs of a literal word; None for anything that expands."""
    kind, text = node.type, _text(node)
    if kind in ("word", "number"):
        return None if "$" in text or "`" in text else _unquoted(text)
    if kind == "raw_string":
        return [(c, True) for c in text[1:-1]]
    if kind == "ansi_c_string":
        decoded = _ansi_c(text[2:-1])
        return None if decoded is None else [(c, True) for c in decoded]
    if kind == "translated_string":
        return _chars(node.named_children[0]) if node.named_children else None
    if kind == "string":
        chars: list[tuple[str, bool]] = []
        for child in node.named_children:
            if child.type != "string_content":
                return None
            chars += [(c, True) for c in re.sub(r"\\([$`\"\\\n])", r"\1", _text(child))]
        return chars
    if kind == "concatenation":
        chars = []
        for child in node.named_children:
            part = _chars(child)
            if part is None:
                return None
            chars += part
        return chars
    return None


def _unquoted(text: str) -> list[tuple[str, bool]]:
    chars, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":
                chars.append((text[i + 1], True))
            i += 2
            continue
        chars.append((text[i], False))
        i += 1
    return chars


ANSI_C = re.compile(
    r"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x([0-9a-fA-F]{1,2})|u([0-9a-fA-F]{1,4})|U([0-9a-fA-F]{1,8}))"
)
ANSI_C_SIMPLE = dict(zip("abeEfnrtv\\'\"?", "\a\b\x1b\x1b\f\n\r\t\v\\'\"?", strict=True))


def _ansi_c(body: str) -> str | None:
    """`$'…'` decoded as bash does; None for an escape this does not know (`\\cX`)."""
    out, i = [], 0
    while i < len(body):
        if body[i] != "\\":
            out.append(body[i])
            i += 1
            continue
        match = ANSI_C.match(body, i)
        if match is None:
            return None
        simple, octal, *hexes = match.groups()
        if simple:
            out.append(ANSI_C_SIMPLE[simple])
        else:
            number = int(octal, 8) if octal else int(next(h for h in hexes if h), 16)
            if number > 0x10FFFF:
                return None
            out.append(chr(number))
        i = match.end()
    return "".join(out)


# -- wrappers: the options each takes, then the command it runs --------------------------------------


@dataclass(frozen=True)
class Options:
    """A program's options: short letters taking a value, short flags, long options taking a
    value (also `--name=value`), long flags. Anything else is an option this does not know."""

    short_values: str = ""
    short_flags: str = ""
    long_values: frozenset[str] = frozenset()
    long_flags: frozenset[str] = frozenset()
    numeric: bool = False  # `nice -5`

    def split(self, words: list[str | None], program: str) -> tuple[list[tuple[str, str | None]], list]:
        """(the options given, as (option, value) pairs; the words after them)."""
        given: list[tuple[str, str | None]] = []
        i = 0
        while i < len(words):
            word = words[i]
            if word is WILD:
                raise _Refused(f"an option of {program} the line does not spell out")
            if word == "--":
                return given, words[i + 1 :]
            if not word.startswith("-") or word == "-":
                return given, words[i:]
            i += 1
            if word.startswith("--"):
                name, eq, value = word.partition("=")
                if name in self.long_values and not eq:
                    if i >= len(words) or words[i] is WILD:
                        raise _Refused(f"{name} of {program} without a value")
                    value, i = words[i], i + 1
                elif name not in self.long_values and name not in self.long_flags:
                    raise _Refused(f"{program} has no option {name} known here")
                given.append((name, value if (eq or name in self.long_values) else None))
                continue
            if self.numeric and re.fullmatch(r"-[0-9]+", word):
                given.append(("-n", word[1:]))
                continue
            i = self._short(word, words, i, given, program)
        return given, []

    def _short(self, word: str, words: list, i: int, given: list, program: str) -> int:
        for at, letter in enumerate(word[1:], start=1):
            if letter in self.short_values:
                value = word[at + 1 :]
                if not value:
                    if i >= len(words) or words[i] is WILD:
                        raise _Refused(f"-{letter} of {program} without a value")
                    value, i = words[i], i + 1
                given.append(("-" + letter, value))
                return i
            if letter not in self.short_flags:
                raise _Refused(f"{program} has no option -{letter} known here")
            given.append(("-" + letter, None))
        return i


def _longs(*names: str) -> frozenset[str]:
    return frozenset("--" + name for name in names)


COMMON = _longs("help", "version")
ENV = Options(
    "uCS",
    "i0v",
    _longs("unset", "chdir", "split-string"),
    COMMON
    | _longs(
        "ignore-environment", "null", "debug", "block-signal", "default-signal", "ignore-signal", "list-signal-handling"
    ),
)
TIMEOUT = Options(
    "ks", "v", _longs("kill-after", "signal"), COMMON | _longs("preserve-status", "foreground", "verbose")
)
NICE = Options("n", "", _longs("adjustment"), COMMON, numeric=True)
PLAIN = Options("", "", frozenset(), COMMON)
COMMAND = Options("", "pvV")
EXEC = Options("a", "cl")
SUDO = Options(
    "CDghprRtTUu",
    "AbBEeHiKklnNPSsVv",
    _longs("close-from", "chdir", "group", "host", "prompt", "chroot", "role", "type", "command-timeout", "other-user")
    | _longs("user"),
    COMMON
    | _longs(
        "askpass", "background", "bell", "preserve-env", "edit", "set-home", "login", "remove-timestamp",
        "reset-timestamp", "list", "non-interactive", "no-update", "preserve-groups", "stdin", "shell", "validate",
    ),
)  # fmt: skip
DOAS = Options("uC", "Lns")
STDBUF = Options("ioe", "", _longs("input", "output", "error"), COMMON)
TIME = Options("fo", "pvaq", _longs("format", "output"), COMMON | _longs("append", "verbose", "portability", "quiet"))
IONICE = Options("cnpPu", "t", _longs("class", "classdata", "pid", "pgid", "uid"), COMMON | _longs("ignore"))
SETSID = Options("", "cfw", frozenset(), COMMON | _longs("ctty", "fork", "wait"))
XARGS = Options(
    "adEILnPs",
    "0oprtxeil",
    _longs("arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"),
    COMMON
    | _longs(
        "null", "open-tty", "interactive", "no-run-if-empty", "verbose", "exit", "show-limits", "eof", "replace",
        "max-lines",
    ),
)  # fmt: skip
WATCH = Options(
    "nq",
    "bcCdegprtwx",
    _longs("interval", "equexit"),
    COMMON
    | _longs(
        "beep", "color", "no-color", "differences", "errexit", "chgexit", "precise", "no-rerun", "no-title", "no-wrap",
        "exec",
    ),
)  # fmt: skip


def _simple(options: Options, program: str, *, positional: int = 0):
    """A wrapper that runs the rest of its words after its options and `positional` words."""

    def unwrap(words: list[str | None]) -> list[str | None]:
        _, rest = options.split(words, program)
        if any(word is WILD for word in rest[:positional]):
            raise _Refused(f"{program}'s arguments are expansions")
        return rest[positional:] if len(rest) > positional else []

    return unwrap


def _env(words: list[str | None]) -> list[str | None] | _Script:
    given, rest = ENV.split(words, "env")
    for option, value in given:
        if option in ("-u", "--unset"):
            _check_variable(value or "")
    while rest and rest[0] is not WILD and "=" in rest[0] and not rest[0].startswith("="):
        _check_variable(rest[0].partition("=")[0])
        rest = rest[1:]
    split = next((value for option, value in given if option in ("-S", "--split-string")), None)
    if split is not None:
        if any(word is WILD for word in rest):
            raise _Refused("env -S with arguments the line does not spell out")
        return _Script(" ".join([split, *(shlex.quote(word) for word in rest)]))
    return rest


def _sudo(words: list[str | None]) -> list[str | None] | _Script:
    given, rest = SUDO.split(words, "sudo")
    options = {option for option, _ in given}
    if options & {"-e", "--edit", "-l", "--list", "-v", "--validate", "-k", "-K", "-V", "--version"}:
        return []  # edits files or lists: runs no command
    while rest and rest[0] is not WILD and "=" in rest[0]:
        _check_variable(rest[0].partition("=")[0])
        rest = rest[1:]
    if options & {"-s", "--shell", "-i", "--login"}:
        return _through_shell(rest, "sudo")
    return rest


def _doas(words: list[str | None]) -> list[str | None] | _Script:
    given, rest = DOAS.split(words, "doas")
    if "-s" in {option for option, _ in given} and not rest:
        raise _Refused("doas -s runs a shell reading its input")
    return rest


def _xargs(words: list[str | None]) -> list[str | None]:
    """`xargs CMD ARGS`: CMD with ARGS and words read from its input — WILD, one or many."""
    given, rest = XARGS.split(words, "xargs")
    if not rest:
        return []
    replaces = {option for option, _ in given} & {"-I", "-i", "--replace"}
    return [rest[0], *([WILD] * len(rest[1:]) if replaces else rest[1:]), WILD]


def _ionice(words: list[str | None]) -> list[str | None]:
    given, rest = IONICE.split(words, "ionice")
    if {option for option, _ in given} & {"-p", "-P", "-u", "--pid", "--pgid", "--uid"}:
        return []  # changes running processes: runs no command
    return rest


def _watch(words: list[str | None]) -> list[str | None] | _Script:
    given, rest = WATCH.split(words, "watch")
    if {option for option, _ in given} & {"-x", "--exec"}:
        return rest
    return _through_shell(rest, "watch")


def _through_shell(words: list[str | None], program: str) -> _Script | list:
    if not words:
        raise _Refused(f"{program} runs a shell reading its input")
    if any(word is WILD for word in words):
        raise _Refused(f"{program} runs a shell on words the line does not spell out")
    return _Script(" ".join(words))


WRAPPERS = {
    "env": _env,
    "timeout": _simple(TIMEOUT, "timeout", positional=1),
    "nice": _simple(NICE, "nice"),
    "nohup": _simple(PLAIN, "nohup"),
    "command": _simple(COMMAND, "command"),
    "builtin": _simple(PLAIN, "builtin"),
    "exec": _simple(EXEC, "exec"),
    "coproc": _simple(PLAIN, "coproc"),
    "busybox": _simple(PLAIN, "busybox"),
    "sudo": _sudo,
    "doas": _doas,
    "stdbuf": _simple(STDBUF, "stdbuf"),
    "time": _simple(TIME, "time"),
    "ionice": _ionice,
    "setsid": _simple(SETSID, "setsid"),
    "xargs": _xargs,
    "watch": _watch,
}


def _shell_arguments(words: list[str | None]) -> tuple[bool | None, list[str | None], bool]:
    """A shell's arguments: (True if -c was given else None, the operands, whether it only
    prints something: --version, --help)."""
    script, informational, i = None, False, 0
    while i < len(words):
        word = words[i]
        if word is WILD:
            break  # an operand (or options nobody can see): shell() refuses either way
        i += 1
        if word in ("--", "-"):
            break
        if word.startswith("--"):
            informational |= word in ("--version", "--help")
            i += word in ("--rcfile", "--init-file")
            continue
        if not word.startswith(("-", "+")) or len(word) == 1:
            i -= 1
            break
        script = True if "c" in word[1:] and word[0] == "-" else script
        i += sum(letter in "oO" for letter in word[1:])  # -o pipefail, -O extglob: their values
    return script, words[i:], informational


# -- git ---------------------------------------------------------------------------------------------

GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix"})
GIT_VALUE_OPTIONS |= frozenset({"--config-env", "--attr-source", "--list-cmds"})
GIT_FLAGS = frozenset(
    {"-p", "--paginate", "-P", "--no-pager", "--no-replace-objects", "--no-lazy-fetch", "--no-optional-locks"}
    | {"--no-advice", "--bare", "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs"}
    | {"--icase-pathspecs", "--html-path", "--man-path", "--info-path", "--exec-path", "-h", "--help", "--version"}
)
# configuration keys git only reads as data (who commits, colours, hints); every other key may
# name a program git runs (an alias, a pager, an editor, a hook path, an include)
GIT_DATA_KEY = re.compile(
    r"((user|author|committer)\.(name|email)|color\..*|advice\..*|init\.defaultbranch|safe\.directory"
    r"|core\.(quotepath|autocrlf|safecrlf|filemode|ignorecase)|(commit|tag)\.gpgsign|pull\.(rebase|ff)"
    r"|column\..*|i18n\..*|log\.(date|decorate|abbrevcommit)|push\.default)\Z",
    re.IGNORECASE,
)


def git_words(words: list[str | None]) -> list[str | None]:
    """`git [global options] SUBCOMMAND …` as `git SUBCOMMAND …`; git told to run another program
    (an alias, a pager, a config include) is refused."""
    i = 1
    while i < len(words):
        word = words[i]
        if word is WILD:
            return ["git", WILD]  # it could be any option, or the subcommand itself
        name, eq, value = word.partition("=")
        if name in GIT_VALUE_OPTIONS or (name == "--exec-path" and eq):
            if not eq:
                if i + 1 >= len(words):
                    raise _Refused(f"git {name} without a value")
                value = words[i + 1]
                i += 1
            _check_git_option(name, value)
        elif word not in GIT_FLAGS:
            if word.startswith("-"):
                raise _Refused(f"git has no global option {word} known here")
            break
        i += 1
    subcommand = ["git", *words[i:]]
    _check_git_subcommand(subcommand)
    return subcommand


def _check_git_option(name: str, value: str | None) -> None:
    if name in ("-c", "--config-env"):
        key = None if value is WILD else value.partition("=")[0]
        if key is None or not GIT_DATA_KEY.match(key):
            raise _Refused(f"git {name} {value or '…'}: a setting that can make git run another program")
    if name == "--exec-path":
        raise _Refused("git --exec-path= runs git's commands from another folder")


def _check_git_subcommand(words: list[str | None]) -> None:
    sub = words[1] if len(words) > 1 else None
    rest = words[2:]
    if sub == "filter-branch":
        raise _Refused("git filter-branch runs the commands it is given")
    if (sub, rest[:1]) in (("bisect", ["run"]), ("submodule", ["foreach"])):
        raise _Refused(f"git {sub} {rest[0]} runs the commands it is given")
    if sub in ("rebase", "difftool", "mergetool") and any(
        w is WILD or w in ("-x", "--exec", "--extcmd", "-t", "--tool") or w.startswith(("--exec=", "--extcmd="))
        for w in rest
    ):
        raise _Refused(f"git {sub} told to run a command (or given words that could tell it so)")
    if sub == "config":
        keys = [w for w in rest if w is WILD or (not w.startswith("-") and "." in w.partition("=")[0])]
        if keys and (keys[0] is WILD or not GIT_DATA_KEY.match(keys[0])):
            raise _Refused("git config of a setting that can make git run another program")


# -- find -exec ----------------------------------------------------------------------------------------


def find_commands(words: list[str | None]) -> list[list[str | None]]:
    """The commands `find … -exec CMD ARGS ;` runs, `{}` standing for the file names."""
    commands, i = [], 1
    while i < len(words):
        if words[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = i + 1
            while end < len(words) and words[end] not in (";", "+"):
                end += 1
            command = [WILD if word is not WILD and "{}" in word else word for word in words[i + 1 : end]]
            if command:
                commands.append(command)
            i = end
        i += 1
    return commands
