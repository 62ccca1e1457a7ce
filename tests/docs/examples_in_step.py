#!/usr/bin/env python3
"""Every C++ example in the documentation is code that is compiled, and run where it runs.

The ```cpp blocks of README.md and docs/*.md are copies of code in the compiled sources of
tests/docs/, tests/distributed/ and examples/. This check keeps the copies honest: each block is cut into
paragraphs at blank lines and at `// ...` lines (which stand for code the page leaves out), and
every paragraph must appear verbatim, line for line, in one compiled source file, in the block's
order. Only indentation may differ, by the same amount across a paragraph.

usage: examples_in_step.py <repository root>
"""
import pathlib
import re
import sys

FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
ELISION = re.compile(r"^\s*//\s*\.\.\.\s*$")


def cpp_blocks(page):
    """(first line number, lines) of each ```cpp block of a Markdown page."""
    blocks, current, start = [], None, 0
    for number, line in enumerate(page.read_text().splitlines(), 1):
        fence = FENCE.match(line)
        if current is None and fence and fence.group(2) in ("cpp", "c++"):
            current, start = [], number + 1
        elif current is not None and fence and not fence.group(2):
            blocks.append((start, current))
            current = None
        elif current is not None:
            current.append(line.rstrip())
    if current is not None:
        sys.exit(f"{page}: unterminated ```cpp block from line {start}")
    return blocks


def paragraphs(lines):
    """Runs of lines between blank lines and `// ...` lines."""
    runs, run = [], []
    for line in lines + [""]:
        if not line.strip() or ELISION.match(line):
            if run:
                runs.append(run)
            run = []
        else:
            run.append(line)
    return runs


def indent(line):
    return len(line) - len(line.lstrip(" "))


def find(paragraph, source, start):
    """First index >= start where `paragraph` occurs in `source` up to one indentation shift."""
    for i in range(start, len(source) - len(paragraph) + 1):
        shift = indent(source[i]) - indent(paragraph[0])
        if all(src == " " * shift + line if shift >= 0 else src == line[-shift:]
               for src, line in zip(source[i:i + len(paragraph)], paragraph)):
            return i + len(paragraph)
    return None


def home(paragraphs_, sources):
    """The compiled source that holds every paragraph, in order, or None."""
    for path, source in sources.items():
        at = 0
        for paragraph in paragraphs_:
            at = find(paragraph, source, at)
            if at is None:
                break
        else:
            return path
    return None


def main(root):
    compiled = sorted([*root.glob("tests/docs/*.cpp"), *root.glob("tests/distributed/*.cpp"), *root.glob("examples/*.cpp")])
    sources = {p: [line.rstrip() for line in p.read_text().splitlines()] for p in compiled}
    pages = [root / "README.md", *sorted(root.glob("docs/*.md"))]
    checked, stray = 0, []
    for page in pages:
        for line_number, block in cpp_blocks(page):
            checked += 1
            runs = paragraphs(block)
            if not runs:
                stray.append(f"{page.relative_to(root)}:{line_number}: empty ```cpp block")
                continue
            where = home(runs, sources)
            if where is None:
                lost = [r for r in runs if all(find(r, s, 0) is None for s in sources.values())]
                detail = ("first paragraph found nowhere:\n    " + "\n    ".join(lost[0]) if lost
                          else "its paragraphs are not in one file, in order")
                stray.append(f"{page.relative_to(root)}:{line_number}: not in any compiled source "
                             f"(tests/docs/*.cpp, tests/distributed/*.cpp, examples/*.cpp); {detail}")
            else:
                print(f"{page.relative_to(root)}:{line_number}: in {where.relative_to(root)}")
    for message in stray:
        print(message)
    print(f"{checked} C++ examples in {len(pages)} pages, {checked - len(stray)} compiled, "
          f"{len(stray)} not")
    return 1 if stray or not checked else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(pathlib.Path(sys.argv[1]).resolve()))
