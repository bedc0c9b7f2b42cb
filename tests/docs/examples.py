"""The examples of the README and docs/*.md, read out of their ```bash and ```python blocks as a reader
copies them: a bash command is a line and its continuation lines (a trailing backslash; a `for … done` loop
whole), without its trailing comment; a comment line right after a command, a JSON value, is what the README
shows it print; a python block is one example."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

FENCE = re.compile(r"^```(\w*)\s*$")
ASSIGNMENT = re.compile(r"^([A-Za-z_]\w*)=")


@dataclass(frozen=True)
class Example:
    doc: str  # README.md, docs/results.md, …
    line: int  # where it starts, 1-based
    kind: str  # "bash" or "python"
    text: str  # as written: continuation lines and comments kept
    shows: str = ""  # a bash command's output as the doc shows it (the comment line after it), if any

    @property
    def key(self) -> str:
        """What the tables of the test name it by: a bash command without its comment, on one line; a
        python block by its doc and first line of code past the imports."""
        if self.kind == "python":  # its first line of code past the imports
            code = (line.strip() for line in self.text.splitlines())
            first = next(line for line in code if line and not line.startswith(("import ", "from ", "#")))
            return f"{self.doc}: {without_comment(first)}"
        return " ".join(without_comment(self.text).replace("\\\n", " ").split())

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def without_comment(command: str) -> str:
    """``command`` up to its first ``#`` that starts a shell comment (after blank space, outside quotes)."""
    quote = None
    for i, c in enumerate(command):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or command[i - 1].isspace()):
            return command[:i].rstrip()
    return command.rstrip()


def assigned(command: str) -> str | None:
    """The variable a line only assigns (``G=…``, ``MINILM=$(python -c "…")``), or None for a command
    (``OMP_NUM_THREADS=1 seq2bert …`` runs one)."""
    match = ASSIGNMENT.match(command)
    if not match:
        return None
    quote, depth, i = None, 0, match.end()
    while i < len(command):
        c = command[i]
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif command.startswith("$(", i):
            depth, i = depth + 1, i + 1
        elif c == ")" and depth:
            depth -= 1
        elif c.isspace() and not depth:
            return match.group(1) if not command[i:].strip() else None
        i += 1
    return match.group(1)


def read_examples(path: Path, doc: str) -> list[Example]:
    """Every bash command and python block of the markdown file ``path``, in order."""
    out: list[Example] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i].strip())
        if not fence or not fence.group(1):
            i += 1
            continue
        kind, start = fence.group(1), i + 1
        end = next(j for j in range(start, len(lines)) if lines[j].strip() == "```")
        body = [
            line[len(lines[i]) - len(lines[i].lstrip()) :] for line in lines[start:end]
        ]  # an indented fence
        if kind == "python":
            out.append(Example(doc, start + 1, "python", "\n".join(body) + "\n"))
        elif kind == "bash":
            out += bash_commands(body, doc, start + 1)
        i = end + 1
    return out


def bash_commands(body: list[str], doc: str, first_line: int) -> list[Example]:
    out: list[Example] = []
    j = 0
    while j < len(body):
        line = body[j]
        if not line.strip() or line.lstrip().startswith("#"):
            shown = line.lstrip()[1:].strip()
            after = out and out[-1].line + out[-1].text.count("\n") + 1 == first_line + j
            if after and shown[:1] in ("{", "["):  # the output the command prints
                out[-1] = Example(out[-1].doc, out[-1].line, "bash", out[-1].text, shown)
            j += 1
            continue
        text, start = line, j
        while (
            without_comment(text).endswith("\\")
            or (text.lstrip().startswith("for ") and not re.search(r"\bdone\b", text))
        ) and j + 1 < len(body):
            j += 1
            text += "\n" + body[j]
        out.append(Example(doc, first_line + start, "bash", text))
        j += 1
    return out
