# SPDX-License-Identifier: MIT
"""bench/published/ keeps only the recorded runs the docs cite, and every citation points at something.

A recorded run is a folder bench/published/DATE/NAME (or DATE itself, where its files lie directly in it); its
subfolders belong to it (a cost-per-request record keeps its throughput run inside). The docs are README.md,
CHANGELOG.md, docs/*.md and bench/*.md; a citation is any path in them that starts with bench/published/ (as a
link, in backticks, or in a headline block). It fails when:
  - a recorded run is cited by no doc (it is a dataset, not a record of anything said: `git rm -r` it; git keeps it),
  - a citation names a folder or file that does not exist.
--self-test runs both verdicts on a made-up tree. Exit 0, or one line per problem and exit 1."""
import glob
import os
import re
import shutil
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CITATION = re.compile(r"bench/published/[0-9]{4}-[0-9]{2}-[0-9]{2}[A-Za-z0-9._/-]*")


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


def citations(root):
    """{cited path: [doc, ...]} over the docs."""
    docs = ["README.md", "CHANGELOG.md"] + [os.path.relpath(p, root) for p in
                                            sorted(glob.glob(os.path.join(root, "docs", "*.md")))
                                            + sorted(glob.glob(os.path.join(root, "bench", "*.md")))]
    cited = {}
    for doc in docs:
        path = os.path.join(root, doc)
        if not os.path.isfile(path):
            continue
        with open(path, errors="replace") as f:
            for m in CITATION.finditer(f.read()):
                cited.setdefault(m.group(0).rstrip("/.").rstrip("/"), []).append(doc)
    return cited


def problems(root):
    runs, cited, out = recorded_runs(root), citations(root), []
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
                  "bench/published/2026-01-02", "docs"):
            os.makedirs(os.path.join(root, d))
        for f in ("bench/published/2026-01-01/kept/throughput/results.json", "bench/published/2026-01-01/orphan/r.md",
                  "bench/published/2026-01-02/report.md"):
            open(os.path.join(root, f), "w").close()
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("[r](bench/published/2026-01-01/kept/throughput/results.json) `bench/published/2026-01-02`.\n")
        with open(os.path.join(root, "docs", "x.md"), "w") as f:
            f.write("(../bench/published/2026-01-01/gone/report.md)\n")
        got = problems(root)
        want = ["docs/x.md: cites bench/published/2026-01-01/gone/report.md, which does not exist",
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
