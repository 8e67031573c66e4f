#!/usr/bin/env python3
"""Checks that the documentation still matches the repository.

  1. section references: a document name followed by a quoted section title, as comments
     write them (the name, a comma, the title in double quotes; or the title in parentheses,
     or after a section sign), in sources, scripts and Markdown, name a heading of that document;
  2. Markdown links (top-level *.md, docs/*.md, the DocC catalog) to relative files exist,
     and their #anchors name a heading (GitHub's anchor rule; not checked in the DocC catalog);
  3. commands in the shell code blocks of top-level *.md and docs/*.md: a repository script
     exists, `blobcache SUB ...` names a real subcommand (read from Tools/blobcache/*.swift);
  4. `python3 Benchmarks/performance.py --check` passes (docs/PERFORMANCE.md matches its JSON).

Section titles match headings ignoring case, backticks, repeated spaces and trailing
punctuation; a title may also leave out a heading's subtitle, the part from its first ": ",
" (" or a spaced dash on ("Journal" names "Journal (`journal`)"). A name without .md (README)
counts only when that document exists. Code blocks checked: sh, bash, shell, console, zsh and
unlabelled ones; in a block with `$ ` prompts only the prompt lines are commands. Other programs
(git, swift, apt-get, curl...) are not checked. The subcommands come from the sources, so no
build is needed and a stale binary cannot mislead; --blobcache reads a built one instead.

Prints one `FILE:LINE: message` per problem and exits 1; exits 0 with a summary when clean.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys

SOURCE_SUFFIXES = (".swift", ".sh", ".py", ".c", ".h", ".md")
SHELL_FENCES = {"", "sh", "bash", "shell", "console", "zsh", "shell-session"}
PLAIN_COMMANDS = {"sudo", "env", "time", "exec", "command", "nohup"}


# Reading files

def repo_files(root):
    """Every source, script and Markdown file (relative paths), skipping build output."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d == ".ci" or not (d.startswith(".") or d == "__pycache__"))
        for name in sorted(files):
            path = os.path.relpath(os.path.join(folder, name), root)
            if name.endswith(SOURCE_SUFFIXES) or path == os.path.join(".ci", "run"):
                found.append(path)
    return found


def read_lines(root, path):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        return f.read().splitlines()


def fenced_blocks(lines):
    """(language, [(line number, text)]) of each ``` block, and the set of line numbers in them."""
    blocks, inside, fence = [], set(), None
    for number, line in enumerate(lines, 1):
        match = re.match(r"\s*(`{3,}|~{3,})\s*([\w+-]*)", line)
        if fence is None and match:
            fence, language, body = match.group(1), match.group(2).lower(), []
            inside.add(number)
        elif fence is not None:
            inside.add(number)
            if line.strip().startswith(fence):
                blocks.append((language, body))
                fence = None
            else:
                body.append((number, line))
    return blocks, inside


def headings(lines):
    """The ATX headings outside code blocks: (line number, level, text)."""
    _, code = fenced_blocks(lines)
    return [(n, len(m.group(1)), m.group(2).strip().rstrip("#").strip())
            for n, line in enumerate(lines, 1) if n not in code
            for m in [re.match(r"(#{1,6})\s+(.*)", line)] if m]


# Check 1: section references

def normalise_title(text):
    """Lowercase, no backticks, single spaces, no trailing punctuation."""
    text = " ".join(text.replace("`", "").split()).lower()
    return text.rstrip(" .,;:!?")


def title_forms(heading):
    """A heading's normalised title, and the same without a subtitle."""
    full = normalise_title(heading)
    short = re.split(r": | \(| — | – | - ", full, maxsplit=1)[0]
    return {full, short.rstrip(" .,;:!?")}


DOCUMENT = r"((?:[\w.-]+/)*[A-Za-z][\w-]*\.md)"  # FORMAT.md, docs/FORMAT.md
QUOTED = re.compile(r"(" + DOCUMENT[1:-1] + r"|\b[A-Z]{2,}\b)"  # or README, if README.md exists
                    r"(?:'s)?(?:\s*,\s*|\s+)\(?\"([^\"]*)\"")  # then the title in quotes
BARE = re.compile(r"\(" + DOCUMENT + r",\s*([^()\[\]\"\n]+)\)|"  # (FORMAT.md, Title)
                  + DOCUMENT + r",?\s*§\s*([^),;\n]+)")  # FORMAT.md § Title
COMMENT_LEADER = re.compile(r"^\s*(///?|#|\*|--)?\s?")


def resolve_document(root, referrer, name):
    """The repository path a reference's document name means, or None."""
    for candidate in (name, os.path.join(os.path.dirname(referrer), name),
                      os.path.join("docs", os.path.basename(name))):
        candidate = os.path.normpath(candidate)
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def section_references(root, path, lines):
    """(line, document name, title) of each reference; a title may go on to the next line."""
    found = []
    for number, line in enumerate(lines, 1):
        joined = line + "\n" + (COMMENT_LEADER.sub("", lines[number], count=1) if number < len(lines) else "")
        for m in [*QUOTED.finditer(joined), *BARE.finditer(joined)]:
            if m.start() < len(line):
                name, title = [g for g in m.groups() if g is not None]
                found.append((number, name, " ".join(title.split())))
    return found


def check_section_references(root, files, skip):
    problems, cache, count = [], {}, 0
    for path in files:
        if path == skip:
            continue
        for number, name, title in section_references(root, path, read_lines(root, path)):
            document = resolve_document(root, path, name if name.endswith(".md") else name + ".md")
            if document is None and not name.endswith(".md"):
                continue  # a word in capitals that names no document
            count += 1
            if document is None:
                problems.append(f"{path}:{number}: {name} (for \"{title}\") does not exist")
                continue
            if document not in cache:
                cache[document] = set().union(*[title_forms(h) for _, _, h in
                                                headings(read_lines(root, document))] or [set()])
            if normalise_title(title) not in cache[document]:
                problems.append(f"{path}:{number}: {document} has no heading \"{title}\"")
    return problems, count


# Check 2: Markdown links

def github_anchors(lines):
    """The anchors GitHub gives a document's headings (duplicates get -1, -2, ...)."""
    anchors, seen = set(), {}
    for _, _, text in headings(lines):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text only
        slug = re.sub(r"[^\w\- ]", "", text.replace("`", "").replace("*", "").lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|^\s*\[[^\]]+\]:\s*(\S+)")


def markdown_files(files):
    return [p for p in files if p.endswith(".md") and
            (os.path.dirname(p) in ("", "docs") or p.startswith(os.path.join("Sources", "BlobCache", "BlobCache.docc")))]


def check_links(root, files):
    problems, count = [], 0
    for path in markdown_files(files):
        lines = read_lines(root, path)
        _, code = fenced_blocks(lines)
        docc = ".docc" in path
        for number, line in enumerate(lines, 1):
            if number in code:
                continue
            for m in LINK.finditer(re.sub(r"`[^`]*`", "", line)):
                target = m.group(1) or m.group(2)
                if re.match(r"[a-z][a-z+.-]*:", target, re.I):  # http:, https:, mailto:, doc:
                    continue
                count += 1
                file_part, _, anchor = target.partition("#")
                linked = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                if not os.path.exists(os.path.join(root, linked)):
                    problems.append(f"{path}:{number}: link to {target}: {linked} does not exist")
                elif anchor and not docc and linked.endswith(".md") and \
                        anchor not in github_anchors(read_lines(root, linked)):
                    problems.append(f"{path}:{number}: link to {target}: {linked} has no heading with anchor #{anchor}")
    return problems, count


# Check 3: commands in code blocks

def kebab(name):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", name).lower()


def commands_from_sources(root):
    """The command tree and the global options that take a value, from Tools/blobcache/*.swift."""
    folder = os.path.join(root, "Tools", "blobcache")
    text = "\n".join(open(os.path.join(folder, f), encoding="utf-8").read()
                     for f in sorted(os.listdir(folder)) if f.endswith(".swift"))
    lists = {}  # static lists of commands, such as networkCommands (one per build configuration)
    for name, items in re.findall(r"static let (\w+)\s*:\s*\[any ParsableCommand\.Type\]\s*=\s*\[([^\]]*)\]", text):
        lists.setdefault(name, set()).update(re.findall(r"(\w+)\.self", items))
    types = {}
    starts = list(re.finditer(r"struct (\w+)\s*:[^{]*\bParsableCommand\b[^{]*\{", text))
    for i, m in enumerate(starts):  # a body ends at the next command or at a top-level }
        body = text[m.end():starts[i + 1].start() if i + 1 < len(starts) else len(text)].split("\n}", 1)[0]
        name = re.search(r'commandName:\s*"([^"]+)"', body)
        subs = re.search(r"subcommands:\s*\[([^\]]*)\]((?:\s*\+\s*\w+)*)", body)
        children = set(re.findall(r"(\w+)\.self", subs.group(1))) if subs else set()
        for added in re.findall(r"\w+", subs.group(2)) if subs else []:
            children |= lists.get(added, set())
        argument = re.search(r"@Argument\([^@]*?valueName:\s*\"([a-z-]+(?:\|[a-z-]+)+)\"", body)
        types[m.group(1)] = (name.group(1) if name else kebab(m.group(1)), children,
                             set(argument.group(1).split("|")) if argument else None)

    def tree(type_name):
        name, children, choices = types[type_name]
        return {"subs": {types[c][0]: tree(c) for c in children if c in types}, "choices": choices}

    root_type = next(t for t, (name, _, _) in types.items() if name == "blobcache")
    options = open(os.path.join(folder, "GlobalOptions.swift"), encoding="utf-8").read()
    valued = set()
    for m in re.finditer(r"@Option\((.*?)\)\s*\n\s*var (\w+)", options, re.S):
        custom = re.search(r'customLong\("([^"]+)"\)', m.group(1))
        valued.add("--" + (custom.group(1) if custom else kebab(m.group(2))))
    return tree(root_type), valued


def commands_from_binary(binary):
    """The same, from a built binary's --help output."""
    def help_of(words):
        return subprocess.run([binary, *words, "--help"], capture_output=True, text=True, timeout=10).stdout

    def tree(words):
        text = help_of(words)
        section = text.split("SUBCOMMANDS:", 1)[1] if "SUBCOMMANDS:" in text else ""
        names = re.findall(r"^  ([a-z][\w-]*)(?:\s|$)", section, re.M)
        usage = re.search(r"USAGE: \S+(?: [a-z][\w-]*)* <([a-z-]+(?:\|[a-z-]+)+)>", text)  # a first argument
        return {"subs": {n: tree(words + [n]) for n in names if n != "help"},
                "choices": set(usage.group(1).split("|")) if usage else None}

    valued = set(re.findall(r"^\s+(?:-\w, )?(--[\w-]+) <", help_of(["expire"]), re.M))  # no options of its own
    return tree([]), valued


def shell_words(command):
    command = re.sub(r"(^|\s)\d*>&\d+", " ", command)  # 2>&1
    command = re.sub(r"(^|\s)\d+(?=[<>])", " ", command)  # 2> file: the descriptor
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split, lexer.commenters = True, "#"
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote: good enough for naming the command
        return command.split("#", 1)[0].split()


def simple_commands(words):
    """Splits a line's words at |, &&, ||, ; and &, dropping redirections and their targets."""
    command, skip = [], False
    for word in words:
        if word in ("|", "||", "&&", ";", "&") or re.fullmatch(r"[<>$]?[()]+", word):
            if command:
                yield command
            command = []
        elif re.fullmatch(r"[<>]+&?", word):
            skip = True
        elif skip:
            skip = False
        else:
            command.append(word)
    if command:
        yield command


def block_commands(body):
    """(line number, text) of each command in a code block: prompt lines only when it has any."""
    prompted = any(re.match(r"\s*\$ ", text) for _, text in body)
    commands, pending = [], None
    for number, text in body:
        if pending:
            pending = (pending[0], pending[1][:-1] + " " + text.strip())
        elif prompted and not re.match(r"\s*\$ ", text):
            continue
        else:
            pending = (number, re.sub(r"^\s*\$ ", "", text))
        if not pending[1].rstrip().endswith("\\"):
            commands.append(pending)
            pending = None
    return commands + ([pending] if pending else [])


def check_blobcache(words, tree, valued):
    """None when `blobcache words...` names real (sub)commands, else what is wrong."""
    node, said, i = tree, ["blobcache"], 0
    while i < len(words):
        word = words[i]
        if word in ("--help", "-h", "--version", "help"):
            return None
        if word.startswith("-"):
            i += 2 if word in valued and "=" not in word else 1
            continue
        if word[:1] in "[<{$":  # a placeholder such as <command>
            return None
        if node["subs"]:
            if word not in node["subs"]:
                return f"'{' '.join(said)} {word}': no such command (known: {', '.join(sorted(node['subs']))})"
            node = node["subs"][word]
        elif node["choices"] and word not in node["choices"]:
            return f"'{' '.join(said)} {word}': expected one of {', '.join(sorted(node['choices']))}"
        else:
            return None
        said.append(word)
        i += 1
    return None if not node["subs"] else f"'{' '.join(said)}' needs a subcommand"


def check_commands(root, files, tree, valued):
    problems, count = [], 0
    for path in [p for p in markdown_files(files) if ".docc" not in p]:
        blocks, _ = fenced_blocks(read_lines(root, path))
        for language, body in blocks:
            if language not in SHELL_FENCES:
                continue
            for number, text in block_commands(body):
                for words in simple_commands(shell_words(text)):
                    while words and (words[0] in PLAIN_COMMANDS or re.match(r"\w+=", words[0])):
                        words = words[1:]
                    if not words:
                        continue
                    count += 1
                    program, rest = words[0], words[1:]
                    if program in ("python3", "python", "bash", "sh") and rest and not rest[0].startswith("-"):
                        program, rest = rest[0], rest[1:]
                    if os.path.basename(program) == "blobcache":
                        problem = check_blobcache(rest, tree, valued)
                    elif "/" in program and not program.startswith(("/", "~", "$", ".build")):
                        exists = os.path.exists(os.path.join(root, program))
                        problem = None if exists else f"'{program}' does not exist in the repository"
                    else:
                        continue  # a shell builtin or another tool
                    if problem:
                        problems.append(f"{path}:{number}: {problem}")
    return problems, count


# Check 4: docs/PERFORMANCE.md against its JSON

def check_performance(root):
    script = os.path.join("Benchmarks", "performance.py")
    if not os.path.isfile(os.path.join(root, script)):
        return [], f"{script} not there yet: PERFORMANCE.md figures not checked"
    try:
        run = subprocess.run([sys.executable, script, "--check"], cwd=root,
                             capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return [f"{script}:1: --check took over 60 s"], None
    if run.returncode != 0:
        said = (run.stdout + run.stderr).strip().splitlines()
        return [f"docs/PERFORMANCE.md:1: differs from docs/performance.json "
                f"({script} --check exited {run.returncode}{': ' + said[-1] if said else ''})"], None
    return [], None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        help="the repository to check (default: the one holding this script)")
    parser.add_argument("--blobcache", metavar="PATH",
                        help="read the subcommands from this binary's --help instead of Tools/blobcache/*.swift")
    arguments = parser.parse_args()
    root = os.path.abspath(arguments.root)
    files = repo_files(root)
    tree, valued = (commands_from_binary(arguments.blobcache) if arguments.blobcache
                    else commands_from_sources(root))

    references, reference_count = check_section_references(root, files, skip=os.path.join("Tools", "check-docs.py"))
    links, link_count = check_links(root, files)
    commands, command_count = check_commands(root, files, tree, valued)
    performance, note = check_performance(root)
    problems = references + links + commands + performance
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"check-docs: {reference_count} section references, {link_count} links, {command_count} commands "
          f"checked, all good" + (f"; {note}" if note else "; PERFORMANCE.md matches its JSON"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
