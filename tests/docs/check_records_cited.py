# SPDX-License-Identifier: MIT
"""bench/published/ keeps only the recorded runs the docs cite, and every citation points at something.

A recorded run is a folder bench/published/DATE/NAME (or DATE itself, where its files lie directly in it); its
subfolders belong to it (a cost-per-request record keeps its throughput run inside). The docs are every Markdown file
of the tree (git's, else every *.md found) but the records' own reports under bench/published/: README.md,
CHANGELOG.md, docs/, bench/ and its READMEs (bench/peers/README.md among them), and any other. A citation is a path
to a DATE folder of bench/published/ in them: written from the top of the tree (bench/published/…, in backticks,
text or a headline block) or relative to the doc (a link such as ../published/… in bench/peers/README.md). It fails
when:
  - a recorded run is cited by no doc (it is a dataset, not a record of anything said: `git rm -r` it; git keeps it),
  - a citation names a folder or file that does not exist,
  - there are more than MAX_RUNS recorded runs (the current answers need no more; superseded runs leave the tree).
--self-test runs both verdicts on a made-up tree. Exit 0, or one line per problem and exit 1."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CITATION = re.compile(r"[A-Za-z0-9._/-]*published/[0-9]{4}-[0-9]{2}-[0-9]{2}[A-Za-z0-9._/-]*")
RECORDS = "bench/published/"
MAX_RUNS = 25


def recorded_runs(root):
    """The recorded runs under ROOT/bench/published, as paths relative to ROOT."""
    base = os.path.join(root, "bench", "published")
    runs = set()
    for date in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        d = os.path.join(base, date)
        if not os.path.isdir(d):
            continue
        if any(os.path.isfile(os.path.join(d, f)) for f in os.listdir(d)):
            runs.add(os.path.relpath(d, root))
        for name in os.listdir(d):
            if os.path.isdir(os.path.join(d, name)):
                runs.add(os.path.relpath(os.path.join(d, name), root))
    return runs


def documents(root):
    """Every Markdown file of the tree (git's list where ROOT is a checkout, else a walk), relative to ROOT, but the
    records' own reports."""
    try:
        listed = subprocess.run(["git", "-C", root, "ls-files", "-z", "--", "*.md"], capture_output=True, text=True,
                                check=True).stdout.split("\0")
    except (OSError, subprocess.CalledProcessError):
        listed = []
    if not any(listed):
        listed = [os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "**", "*.md"), recursive=True)]
    return sorted(d for d in listed if d and not d.startswith(RECORDS) and os.path.isfile(os.path.join(root, d)))


def resolve(doc, text):
    """The path a citation in `doc` names, relative to the top of the tree: as written when it starts with
    bench/published/, else relative to the doc's folder; None when that is not under bench/published/."""
    path = text.rstrip("/.").rstrip("/")
    if not path.startswith(RECORDS):
        path = os.path.normpath(os.path.join(os.path.dirname(doc), path))
    return path if path.startswith(RECORDS) else None


def citations(root):
    """{cited path: [doc, ...]} over the docs."""
    cited = {}
    for doc in documents(root):
        with open(os.path.join(root, doc), errors="replace") as f:
            for m in CITATION.finditer(f.read()):
                path = resolve(doc, m.group(0))
                if path is not None:
                    cited.setdefault(path, []).append(doc)
    return cited


def problems(root, max_runs=MAX_RUNS):
    runs, cited, out = recorded_runs(root), citations(root), []
    if len(runs) > max_runs:
        out.append("bench/published/: %d recorded runs, more than %d (remove the superseded ones; git keeps them)" % (
            len(runs), max_runs))
    covered = set()
    for path, docs in sorted(cited.items()):
        if not os.path.exists(os.path.join(root, path)):
            out.append("%s: cites %s, which does not exist" % (docs[0], path))
            continue
        folder = path if os.path.isdir(os.path.join(root, path)) else os.path.dirname(path)
        while folder and folder not in runs and folder.count("/") > 2:
            folder = os.path.dirname(folder)  # a file or subfolder of a run cites the run
        if folder in runs:
            covered.add(folder)
    for run in sorted(runs - covered):
        out.append("%s: a recorded run no doc cites (cite it, or git rm -r it)" % run)
    return out


def self_test():
    root = tempfile.mkdtemp()
    try:
        for d in ("bench/published/2026-01-01/kept/throughput", "bench/published/2026-01-01/orphan",
                  "bench/published/2026-01-01/by-a-peer", "bench/published/2026-01-02", "docs", "bench/peers"):
            os.makedirs(os.path.join(root, d))
        for f in ("bench/published/2026-01-01/kept/throughput/results.json", "bench/published/2026-01-01/orphan/r.md",
                  "bench/published/2026-01-01/by-a-peer/report.md", "bench/published/2026-01-02/report.md"):
            open(os.path.join(root, f), "w").close()
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("[r](bench/published/2026-01-01/kept/throughput/results.json) `bench/published/2026-01-02`.\n")
        with open(os.path.join(root, "docs", "x.md"), "w") as f:
            f.write("(../bench/published/2026-01-01/gone/report.md)\n")
        with open(os.path.join(root, "bench", "peers", "README.md"), "w") as f:  # relative to its own folder
            f.write("[a](../published/2026-01-01/by-a-peer/report.md) [b](../published/2026-01-01/deleted/report.md)\n")
        with open(os.path.join(root, "CHANGELOG.md"), "w") as f:
            f.write("see bench/published/2026-01-01/removed-since\n")
        got = problems(root, max_runs=3)
        want = ["bench/published/: 4 recorded runs, more than 3 (remove the superseded ones; git keeps them)",
                "bench/peers/README.md: cites bench/published/2026-01-01/deleted/report.md, which does not exist",
                "docs/x.md: cites bench/published/2026-01-01/gone/report.md, which does not exist",
                "CHANGELOG.md: cites bench/published/2026-01-01/removed-since, which does not exist",
                "bench/published/2026-01-01/orphan: a recorded run no doc cites (cite it, or git rm -r it)"]
        if got != want:
            print("self-test: expected %r, got %r" % (want, got))
            return 1
        return 0
    finally:
        shutil.rmtree(root)


def main():
    if self_test():
        return 1
    found = problems(REPO)
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
