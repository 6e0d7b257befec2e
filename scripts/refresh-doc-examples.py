#!/usr/bin/env python3
"""Rewrites the examples the docs quote from the tool, after a model or fit change:

  README.md             the quick-start table (tagcsim run scenarios/quickstart.yaml)
  docs/output.md        the quickstart's header, and the --kernels excerpt's lines
  docs/tagc-paper.md    every table scripts/tagc-paper-tables.sh generates, matched by its heading row

tests/test_docs_numbers.cpp fails while any of them differs from the tool; this writes what it
checks. The prose around them still wants reading: a number it quotes may have moved too.
Usage: scripts/refresh-doc-examples.py [--tagcsim build/tagcsim]
"""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, env=None):
    return subprocess.run(args, cwd=ROOT, check=True, capture_output=True, text=True, env=env).stdout


def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def write(path, text):
    with open(os.path.join(ROOT, path), "w") as f:
        f.write(text)


def replace_block(doc, first_line_prefix, lines):
    """The code block whose first line starts with first_line_prefix, its lines replaced."""
    start = doc.index("```\n" + first_line_prefix) + 4
    end = doc.index("```", start)
    return doc[:start] + "\n".join(lines) + "\n" + doc[end:]


def line_starting(text, prefix, contains=""):
    for line in text.split("\n"):
        if line.startswith(prefix) and contains in line:
            return line
    sys.exit(f"refresh-doc-examples: no line starting with {prefix!r} in the output")


def tables(lines):
    """(start, end) of each markdown table: a heading row followed by a |--- row."""
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            out.append((i, j))
            i = j
        else:
            i += 1
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tagcsim", default=os.path.join(ROOT, "build", "tagcsim"))
    a = ap.parse_args()
    quickstart = run(a.tagcsim, "run", "scenarios/quickstart.yaml")
    kernels = run(a.tagcsim, "run", "scenarios/quickstart.yaml", "--kernels")

    heading = quickstart.split("\n")
    i = next(k for k, l in enumerate(heading) if l.startswith("policy "))
    write("README.md", replace_block(read("README.md"), "policy ", heading[i:i + 4]))

    out = read("docs/output.md")
    first = next(k for k, l in enumerate(heading) if l.startswith("quickstart: "))
    header = heading[first:heading.index("", first)]
    out = replace_block(out, "quickstart: ", header)
    block_start = out.index("```\nblock.0 (") + 4
    block = out[block_start:out.index("```", block_start)].split("\n")
    for k, line in enumerate(block):
        if "ln_1 to fp32" in line:
            block[k] = line_starting(kernels, line[:22], "ln_1 to fp32")
        elif line.startswith("per step ("):
            whole = line_starting(kernels, "per step (")
            block[k] = whole[:whole.index(";") + 1] + " ..."
    out = out[:block_start] + "\n".join(block) + out[out.index("```", block_start):]
    write("docs/output.md", out)

    generated = run("bash", "scripts/tagc-paper-tables.sh", env=dict(os.environ, TAGCSIM=a.tagcsim)).split("\n")
    by_heading = {generated[s]: generated[s:e] for s, e in tables(generated)}
    doc = read("docs/tagc-paper.md").split("\n")
    new, shift, replaced = list(doc), 0, 0
    for s, e in tables(doc):
        if doc[s] in by_heading:
            rows = by_heading[doc[s]]
            new[s + shift:e + shift] = rows
            shift += len(rows) - (e - s)
            replaced += 1
    write("docs/tagc-paper.md", "\n".join(new))
    print(f"refresh-doc-examples: README.md, docs/output.md, {replaced} tables of docs/tagc-paper.md; "
          "reread the prose that quotes them (git diff)")


if __name__ == "__main__":
    main()
