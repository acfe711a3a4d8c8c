# SPDX-License-Identifier: MIT
"""Each target's container image, for the Docker experiments (post 001's Docker table, post 002's matrix): preon's
is `docker build .` of this checkout (preon:latest), a peer's is bench/peers/images.sh NAME (preon-peer-NAME), an
image= target is its own image. A missing image is built when asked to (untimed); otherwise the reason says which
command builds it."""
import os
import subprocess

from .container import docker_ready
from .report import log
from .services import REPO


def image_for(spec):
    """(image, the command that builds it) for a target spec, or (None, why it has none)."""
    if spec.get("image"):
        return spec["image"], None
    if spec.get("preon"):
        return "preon:latest", ["docker", "build", "--network", "host", "-t", "preon:latest", REPO]
    if spec.get("peer"):  # quarkus-native's: images.sh runs its build.sh on the host first
        return "preon-peer-" + spec["peer"], ["bash", os.path.join(REPO, "bench", "peers", "images.sh"), spec["peer"]]
    return None, "%s has no container image here (give it as name=…,image=…)" % spec.get("name")


def exists(image):
    return subprocess.run(["docker", "image", "inspect", image], capture_output=True).returncode == 0


def ensure(spec, build):
    """The image of target spec `spec`, built first when missing and `build` is true; RuntimeError says why not."""
    why = docker_ready()
    if why:
        raise RuntimeError(why)
    image, cmd = image_for(spec)
    if image is None:
        raise RuntimeError(cmd)
    if exists(image):
        return image
    if cmd is None or not build:
        raise RuntimeError("no image %s here%s" % (image, " (%s builds it; --quick does not)" % " ".join(
            os.path.relpath(c, REPO) if c.startswith(REPO) else c for c in cmd) if cmd else ""))
    log("building the image %s (untimed): %s" % (image, " ".join(cmd)))
    r = subprocess.run(["nice", "-n", "10"] + cmd, capture_output=True, text=True, timeout=3600)
    if r.returncode != 0 or not exists(image):
        raise RuntimeError("building %s failed (%d): %s" % (image, r.returncode, (r.stdout + r.stderr).strip()[-400:]))
    return image
