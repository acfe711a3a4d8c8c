# SPDX-License-Identifier: MIT
"""The published Docker experiments' own figures (bench/reference/docker-experiments.json) as Markdown tables,
printed beside bench/run.py's limits and matrix results as "published (other hardware)"."""
import json
import os

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference", "docker-experiments.json")


def load():
    with open(PATH) as f:
        return json.load(f)


def cell(v, keys):
    """The first of `keys` that v (a dict of figures, or None) holds, formatted; '-' if none."""
    if not isinstance(v, dict):
        return "-"
    for k in keys:
        if k in v:
            x = v[k]
            return ("%g" % x) if isinstance(x, (int, float)) else str(x)
    return "-"


def render(scenario):
    ref = load()[scenario]
    services = []
    for row in ref["rows"].values():
        for name in row:
            if name not in services:
                services.append(name)
    out = ["**Published (other hardware)**: %s; %s; `%s`." % (ref["source"], ref["hardware"], ref["command"]), "",
           "| published | " + " | ".join(services) + " |", "|---|" + "---|" * len(services)]
    if scenario == "limits":
        out.append("| image (MB) | " + " | ".join(cell(ref["image_mb"], [s]) for s in services) + " |")
        for mem, row in ref["rows"].items():
            out.append("| -m %s MiB, 1 CPU: requests/s | %s |" % (mem, " | ".join(cell(row.get(s), ["rps", "result"]) for s in services)))
            out.append("| -m %s MiB, 1 CPU: docker stats (MiB) | %s |" % (mem, " | ".join(cell(row.get(s), ["mem_mib", "result"]) for s in services)))
    else:
        for label, row in ref["rows"].items():
            for title, keys in (("boot (s)", ["boot_s", "note"]), ("idle CPU %", ["idle_cpu_pct"]), ("idle RAM (MB)", ["idle_mb"]),
                                ("RAM under load (MB)", ["load_mb"]), ("failed requests", ["failed"])):
                out.append("| %s: %s | %s |" % (label, title, " | ".join(cell(row.get(s), keys) for s in services)))
        out.append("| summary: RAM under load (MB) | %s |" % " | ".join(cell(ref["summary_load_mb"], [s]) for s in services))
    return "\n".join(out)


if __name__ == "__main__":
    print(render("limits") + "\n\n" + render("matrix"))
