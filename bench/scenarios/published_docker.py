# SPDX-License-Identifier: MIT
"""The published Docker experiments' own figures (bench/reference/docker-experiments.json) as Markdown tables,
printed beside bench/run.py's limits and matrix results as "published (other hardware)"."""
import json
import os

from measure import HERE, md_table

PATH = os.path.join(HERE, "reference", "docker-experiments.json")


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
    rows = []
    if scenario == "limits":
        rows.append(["image (MB)"] + [cell(ref["image_mb"], [s]) for s in services])
        for mem, row in ref["rows"].items():
            rows.append(["-m %s MiB, 1 CPU: requests/s" % mem] + [cell(row.get(s), ["rps", "result"]) for s in services])
            rows.append(["-m %s MiB, 1 CPU: docker stats (MiB)" % mem] + [cell(row.get(s), ["mem_mib", "result"])
                                                                          for s in services])
    else:
        for label, row in ref["rows"].items():
            for title, keys in (("boot (s)", ["boot_s", "note"]), ("idle CPU %", ["idle_cpu_pct"]), ("idle RAM (MB)", ["idle_mb"]),
                                ("RAM under load (MB)", ["load_mb"]), ("failed requests", ["failed"])):
                rows.append(["%s: %s" % (label, title)] + [cell(row.get(s), keys) for s in services])
        rows.append(["summary: RAM under load (MB)"] + [cell(ref["summary_load_mb"], [s]) for s in services])
    out = ["**Published (other hardware)**: %s; %s; `%s`." % (ref["source"], ref["hardware"], ref["command"]), "",
           md_table(["published"] + services, rows).rstrip("\n")]
    return "\n".join(out)
