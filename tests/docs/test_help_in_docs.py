#!/usr/bin/env python3
"""The documentation keeps up with the tool.

  test_help_in_docs.py options TOOL USAGE_MD
      Every long option that `TOOL --help`, each command's `--help` and each sub-command's
      `--help` names must appear in USAGE_MD (docs/usage.md, the command reference). The commands
      are read from the "commands:" list of `TOOL --help`, the sub-commands from the
      `canary-gate CMD SUB --help` forms a command's help names; an option is every `--word` in a
      help's text.
  test_help_in_docs.py read-on README DOCS_DIR
      Every DOCS_DIR/*.md must be linked from the README's "Where to read on" table, and every
      document that table links must exist.

Exits 0 when all is found, 1 naming each thing missing, 2 when the help or the README cannot be
read as expected (so a changed format fails rather than passing on nothing).
"""
import os
import re
import subprocess
import sys


def die(message):
    print(f"test_help_in_docs: {message}", file=sys.stderr)
    sys.exit(2)

OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def help_text(tool, args):
    done = subprocess.run([tool] + args + ["--help"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        die(f"'{' '.join(['canary-gate'] + args)} --help' exited {done.returncode}: "
                 f"{done.stderr.strip()}")
    return done.stdout


def options_in(text):
    """Every long option a help names: in its usage lines, its option lines and its prose (an
    option the prose names is one a reader meets, a foreign one such as torchrun's included)."""
    return set(OPTION.findall(text))


def commands_in(top):
    m = re.search(r"^commands:\n((?:  \S.*\n)+)", top, re.M)
    if not m:
        die("'canary-gate --help' has no \"commands:\" list")
    return [line.split()[0] for line in m.group(1).splitlines()]


def check_options(tool, usage_md):
    doc = open(usage_md, encoding="utf-8").read()
    top = help_text(tool, [])
    helps = {"canary-gate": top}
    for cmd in commands_in(top):
        text = help_text(tool, [cmd])
        helps[f"canary-gate {cmd}"] = text
        for sub in sorted(set(re.findall(rf"canary-gate {cmd} (\w+)\s+--help", text))):
            helps[f"canary-gate {cmd} {sub}"] = help_text(tool, [cmd, sub])
    missing = []
    total = 0
    for name, text in helps.items():
        opts = options_in(text)
        if not opts:
            die(f"'{name} --help' names no option: its format changed")
        total += len(opts)
        for opt in sorted(opts):
            if not re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", doc):
                missing.append(f"{opt} ('{name} --help')")
    for item in missing:
        print(f"not in {usage_md}: {item}")
    print(f"{len(helps)} helps, {total} options, {len(missing)} missing from {usage_md}")
    return 1 if missing else 0


def check_read_on(readme, docs_dir):
    text = open(readme, encoding="utf-8").read()
    m = re.search(r"^## Where to read on\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not m:
        die(f"{readme} has no \"## Where to read on\" section")
    rows = [line for line in m.group(1).splitlines() if line.startswith("|")]
    linked = set()
    for row in rows:
        linked.update(re.findall(r"\]\((docs/[^)#]+\.md)(?:#[^)]*)?\)", row))
    if not linked:
        die(f"the read-on table of {readme} links no document")
    docs = {"docs/" + f for f in os.listdir(docs_dir) if f.endswith(".md")}
    failed = 0
    for doc in sorted(docs - linked):
        print(f"not in the README's read-on table: {doc}")
        failed += 1
    for doc in sorted(linked - docs):
        print(f"the README's read-on table links {doc}, which does not exist")
        failed += 1
    print(f"{len(docs)} documents, {len(linked)} linked from the read-on table, {failed} problems")
    return 1 if failed else 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "options":
        return check_options(sys.argv[2], sys.argv[3])
    if len(sys.argv) == 4 and sys.argv[1] == "read-on":
        return check_read_on(sys.argv[2], sys.argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
