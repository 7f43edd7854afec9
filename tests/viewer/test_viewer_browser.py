#!/usr/bin/env python3
"""Opens the viewer page (addsim simulate … → index.html) in headless chromium and checks that
it draws: at the first and the last frame, pixels of each body's colour are where the page says
the body is, the falling bodies moved, and the page logged no JavaScript error. Also checks that
a page written without three.js shows the install notice instead of breaking.

Usage: test_viewer_browser.py ADDSIM_BINARY. Exit 77 (CTest: skipped) when chromium is absent.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import matplotlib.image

SKIP = 77
WIDTH, HEIGHT = 1100, 700

# One body of every kind over a floor: a falling rigid box, a soft (FEM) box, a sheet, two
# particles on a spring hanging from a moving handle, and a capsule on a ball joint to the world.
SCENE = {
    "name": "viewer_test",
    "dt": 0.01,
    "steps": 30,
    "contact": {"kn": 5000, "kd": 10},
    "obstacles": [{"type": "plane", "name": "floor"}],
    "bodies": [
        {"type": "rigid", "name": "box", "shape": {"type": "box", "size": [0.2, 0.2, 0.2]}, "mass": 1,
         "position": [-0.5, 0, 0.6], "orientation": [0.3, 0.2, 0]},
        {"type": "fem", "name": "soft", "mesh": {"generator": "box", "size": [0.2, 0.2, 0.2], "target_tets": 48},
         "position": [0.5, 0, 0.3], "material": {"youngs_modulus": 2e4, "density": 200}},
        {"type": "sheet", "name": "sheet", "origin": [-0.2, -0.7, 0.5], "size": [0.4, 0.3], "resolution": [5, 4],
         "mass": 0.1, "stiffness": 100},
        {"type": "particles", "name": "dots", "positions": [[0, 0.6, 0.8], [0.1, 0.6, 0.6]], "mass": 0.1},
        {"type": "rigid", "name": "arm", "shape": {"type": "capsule", "radius": 0.04, "length": 0.3}, "mass": 0.5,
         "position": [0, 0, 0.45], "orientation": [0, 1.5708, 0]},
    ],
    "handles": [{"name": "hook", "position": [0, 0.6, 0.9], "velocity": [0.5, 0, 0]}],
    "springs": [
        {"type": "distance", "anchors": [{"handle": "hook"}, {"body": "dots", "point": 0}], "stiffness": 100},
        {"type": "distance", "anchors": [{"body": "dots", "point": 0}, {"body": "dots", "point": 1}], "stiffness": 100},
    ],
    "joints": [{"type": "ball", "anchors": [{"body": "arm", "point": [0, 0, 0.15]}, {"world": [0.15, 0, 0.45]}],
                "stiffness": 1e4}],
}


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def screenshot(browser, page, query, png, profile):
    """Loads page?query, saves png; returns (ready report, console log lines)."""
    args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--enable-unsafe-swiftshader",
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
            "--hide-scrollbars", "--force-device-scale-factor=1", "--user-data-dir=" + profile,
            "--enable-logging=stderr", "--v=0", "--screenshot=" + png, f"--window-size={WIDTH},{HEIGHT}",
            "file://" + os.path.abspath(page) + "?" + query]
    run = subprocess.run(args, capture_output=True, text=True, timeout=120)
    console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line]
    ready = None
    for line in console:
        m = re.search(r'"addsim-viewer: ready (\{.*\})", source', line)
        if m:
            ready = json.loads(m.group(1))
    return ready, console


def chromaticity(rgb):
    s = sum(rgb) + 1e-9
    return [c / s for c in rgb]


def body_pixels_found(png, marker, radius=6):
    """True if a pixel near the marker has the body's hue (shading scales brightness only)."""
    image = matplotlib.image.imread(png)
    want = chromaticity([int(marker["color"][i:i + 2], 16) / 255 for i in (1, 3, 5)])
    x, y = int(round(marker["x"])), int(round(marker["y"]))
    for yy in range(max(0, y - radius), min(image.shape[0], y + radius + 1)):
        for xx in range(max(0, x - radius), min(image.shape[1], x + radius + 1)):
            rgb = [float(c) for c in image[yy, xx, :3]]
            if sum(rgb) > 0.05 and max(abs(a - b) for a, b in zip(chromaticity(rgb), want)) < 0.05:
                return True
    return False


def optimize_and_gradient_pages(addsim, browser, scene, tmp):
    """`optimize` and `gradient --view` write pages with the rollout and their plots: they load
    without JavaScript errors, draw every body and show the convergence plots / gradient table."""
    failures = []
    task = os.path.join(tmp, "task.json")
    with open(task, "w") as f:
        json.dump({"scene": scene, "parameters": ["bodies.box.velocity"],
                   "objective": [{"type": "com_target", "body": "box", "target": [-0.9, 0.0, 0.1]}]}, f)
    runs = {
        "optimize": [addsim, "optimize", task, "--out", os.path.join(tmp, "opt"), "--max-sims", "3", "--quiet"],
        "gradient": [addsim, "gradient", task, "--view", os.path.join(tmp, "grad"), "--quiet"],
    }
    for name, args in runs.items():
        run = subprocess.run(args, capture_output=True, text=True)
        if run.returncode != 0:
            failures.append(f"{name} failed: {run.stderr}")
            continue
        page = os.path.join(args[args.index("--out" if name == "optimize" else "--view") + 1], "index.html")
        png = os.path.join(tmp, name + ".png")
        ready, console = screenshot(browser, page, "frame=-1", png, os.path.join(tmp, "profile-" + name))
        if ready is None:
            failures.append(f"{name}: the page never reported ready; console: {console}")
            continue
        errors = [line for line in console if "Uncaught" in line or "Error" in line.split('", source')[0]]
        if ready["errors"] or errors or not ready["webgl"]:
            failures.append(f"{name}: JavaScript errors {errors} or no WebGL ({ready})")
        for marker in ready["bodies"]:
            if not body_pixels_found(png, marker):
                failures.append(f"{name}: no pixels of {marker['name']} near ({marker['x']:.0f}, {marker['y']:.0f})")
        if len(ready["bodies"]) != len(SCENE["bodies"]):
            failures.append(f"{name}: bodies drawn {[b['name'] for b in ready['bodies']]}")
        if name == "optimize":
            wanted = ["\u03a6/\u03a6\u2080 per simulation", "\u2016\u2207\u03a6\u2016 per simulation"]
            if not all(any(p.startswith(w) for p in ready["plots"]) for w in wanted):
                failures.append(f"optimize: plots {ready['plots']}")
        elif ready["tables"] != 3 or not any(p.startswith("d\u03a6/dp per parameter") for p in ready["plots"]):
            failures.append(f"gradient: plots {ready['plots']}, {ready['tables']} table rows (want 3)")
    return failures


def long_run_page(addsim, browser, tmp):
    """A long cheap run (100,000 steps of one particle on a spring): its plot series are
    decimated (min/max per bucket), so the page stays small, and it still draws its plots
    without JavaScript errors. Before the cap, 200,000 steps of a 3-DOF scene made 63 MB."""
    scene = os.path.join(tmp, "long.json")
    with open(scene, "w") as f:
        json.dump({"name": "long", "dt": 1e-3, "steps": 100000,
                   "bodies": [{"type": "particles", "name": "bob", "positions": [[0, 0, 0.5]], "mass": 1}],
                   "springs": [{"type": "zero_length", "anchors": [{"world": [0, 0, 1]}, {"body": "bob", "point": 0}],
                                "stiffness": 100}]}, f)
    out = os.path.join(tmp, "long")
    run = subprocess.run([addsim, "simulate", scene, "--out", out, "--quiet"], capture_output=True, text=True)
    if run.returncode != 0:
        return [f"long run failed: {run.stderr}"]
    page = os.path.join(out, "index.html")
    size = os.path.getsize(page)
    failures = []
    # Trajectory ≤ 3 MiB of Float32 (4 MiB in base64) + its state indices + 2 × 1 MiB of series + three.js.
    if size > 9e6:
        failures.append(f"long run: index.html is {size} bytes")
    ready, console = screenshot(browser, page, "frame=-1", os.path.join(tmp, "long.png"), os.path.join(tmp, "profile-long"))
    if ready is None:
        return failures + [f"long run: the page never reported ready; console: {console}"]
    errors = [line for line in console if "Uncaught" in line or "Error" in line.split('", source')[0]]
    if ready["errors"] or errors:
        failures.append(f"long run: JavaScript errors {errors}")
    if not any(p.startswith("energy") for p in ready["plots"]):
        failures.append(f"long run: plots {ready['plots']}")
    return failures


def main():
    addsim = sys.argv[1]
    browser = chromium()
    if browser is None:
        print("SKIPPED: chromium not found (install it with `bash scripts/install-deps.sh`)")
        return SKIP
    failures = []
    # Removed when every check passed; kept, and named, for a look at the pages and stills when
    # one failed.
    tmp = tempfile.mkdtemp(prefix="addsim_viewer_test_")
    passed = False
    try:
        scene = os.path.join(tmp, "scene.json")
        with open(scene, "w") as f:
            json.dump(SCENE, f)
        out = os.path.join(tmp, "out")
        run = subprocess.run([addsim, "simulate", scene, "--out", out], capture_output=True, text=True)
        if run.returncode != 0:
            print("addsim simulate failed:", run.stderr)
            return 1
        page = os.path.join(out, "index.html")
        if "open " + page not in run.stdout:
            failures.append("simulate does not print the page path: " + run.stdout)
        reports = {}
        for label, query in (("first", "frame=0"), ("last", "frame=-1")):
            png = os.path.join(tmp, label + ".png")
            ready, console = screenshot(browser, page, query, png, os.path.join(tmp, "profile-" + label))
            if ready is None:
                failures.append(f"{label}: the page never reported ready; console: {console}")
                continue
            reports[label] = ready
            errors = [line for line in console if "Uncaught" in line or "Error" in line.split('", source')[0]]
            if ready["errors"] or errors:
                failures.append(f"{label}: JavaScript errors: {errors}")
            if not ready["webgl"]:
                failures.append(f"{label}: no WebGL")
            names = sorted(b["name"] for b in ready["bodies"])
            if names != sorted(b["name"] for b in SCENE["bodies"]):
                failures.append(f"{label}: bodies drawn {names}")
            for marker in ready["bodies"]:
                if not body_pixels_found(png, marker):
                    failures.append(f"{label}: no pixels of {marker['name']} ({marker['color']}) near "
                                    f"({marker['x']:.0f}, {marker['y']:.0f}) in {png}")
            if failures and os.environ.get("ADDSIM_KEEP_SCREENSHOTS"):
                shutil.copy(png, os.environ["ADDSIM_KEEP_SCREENSHOTS"] + "/" + label + ".png")
        if len(reports) == 2:
            first = {b["name"]: b for b in reports["first"]["bodies"]}
            last = {b["name"]: b for b in reports["last"]["bodies"]}
            for name in ("box", "dots"):
                moved = abs(first[name]["y"] - last[name]["y"]) + abs(first[name]["x"] - last[name]["x"])
                if moved < 5:
                    failures.append(f"{name} did not move on screen between the first and last frame ({moved:.1f} px)")
            if reports["last"]["frame"] != reports["last"]["frames"] - 1 or reports["first"]["frame"] != 0:
                failures.append(f"frame= not honoured: {reports}")

        failures += optimize_and_gradient_pages(addsim, browser, scene, tmp)
        failures += long_run_page(addsim, browser, tmp)

        # Without three.js: a warning naming the install command and a page with a notice.
        env = dict(os.environ, ADDSIM_THREE_JS=os.path.join(tmp, "missing", "three.cjs"))
        view = subprocess.run([addsim, "view", out], capture_output=True, text=True, env=env)
        if view.returncode != 0 or view.stdout.strip() != page:
            failures.append(f"addsim view: exit {view.returncode}, stdout {view.stdout!r}, stderr {view.stderr!r}")
        if "scripts/install-deps.sh" not in view.stderr:
            failures.append("addsim view without three.js does not say how to install it: " + view.stderr)
        ready, console = screenshot(browser, page, "frame=0", os.path.join(tmp, "nothree.png"),
                                    os.path.join(tmp, "profile-nothree"))
        if ready is None or ready["webgl"] or ready["errors"] or any("Uncaught" in line for line in console):
            failures.append(f"page without three.js: {ready}, console {console}")
        with open(page) as f:
            if "install-deps.sh" not in f.read():
                failures.append("page without three.js lacks the install command")
        passed = not failures
    finally:
        if passed:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("kept the temporary directory", tmp, file=sys.stderr)
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print("viewer draws every body at the first and last frame; no JavaScript errors; notice without three.js")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
