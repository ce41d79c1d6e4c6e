#!/usr/bin/env python3
"""Draws an Ember profiler trace (<logdir>/plugins/profile/<run>/<host>.trace.json.gz) as an SVG timeline.

One lane per thread: the step and data-pipeline spans on top, the ops below them (nested ops one row lower),
each op coloured by its name, with a legend of the ops that took the most time. Standard library only.

    scripts/trace_to_svg.py logs/train/plugins/profile/*/*.trace.json.gz -o trace.svg [--step N]
"""
import argparse
import colorsys
import gzip
import hashlib
import json
from collections import defaultdict
from xml.sax.saxutils import escape

WIDTH, LEFT, ROW, GAP = 1000, 110, 18, 10


def colour(name):
    h = int(hashlib.md5(name.encode()).hexdigest()[:6], 16) / 0xFFFFFF
    r, g, b = colorsys.hls_to_rgb(h, 0.62, 0.55)
    return "#%02x%02x%02x" % (int(r * 255), int(g * 255), int(b * 255))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--step", type=int, help="draw only the train step with this step_num")
    args = ap.parse_args()

    with gzip.open(args.trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
    spans = [e for e in events if e.get("ph") == "X"]
    if args.step is not None:
        step = [e for e in spans if e["name"] == "train" and e.get("args", {}).get("step_num") == args.step]
        if not step:
            raise SystemExit(f"no train step with step_num {args.step} in {args.trace}")
        lo, hi = step[0]["ts"], step[0]["ts"] + step[0]["dur"]
        spans = [e for e in spans if e["ts"] < hi and e["ts"] + e["dur"] > lo]
    else:
        lo = min(e["ts"] for e in spans)
        hi = max(e["ts"] + e["dur"] for e in spans)
    scale = (WIDTH - LEFT - 10) / max(hi - lo, 1e-9)

    # Rows per thread: row 0 the step/data spans, then ops by nesting depth (an op inside another's time).
    lanes = defaultdict(list)
    for e in sorted(spans, key=lambda e: (e["ts"], -e["dur"])):
        lanes[e["tid"]].append(e)
    rows = {}
    for tid, evs in lanes.items():
        open_ops = []
        for e in evs:
            if e.get("cat") != "op":
                rows[id(e)] = 0
                continue
            open_ops = [o for o in open_ops if o["ts"] + o["dur"] > e["ts"]]
            rows[id(e)] = 1 + len(open_ops)
            open_ops.append(e)

    totals = defaultdict(float)
    for e in spans:
        if e.get("cat") == "op" and rows[id(e)] == 1:
            totals[e["name"]] += e["dur"]
    legend = sorted(totals.items(), key=lambda kv: -kv[1])[:12]

    out, y = [], 30
    for tid in sorted(lanes):
        depth = 1 + max(rows[id(e)] for e in lanes[tid])
        out.append(f'<text x="4" y="{y + 13}" font-size="12">{escape(names.get(tid, f"thread {tid}"))}</text>')
        for e in lanes[tid]:
            x0 = LEFT + (max(e["ts"], lo) - lo) * scale
            w = max((min(e["ts"] + e["dur"], hi) - max(e["ts"], lo)) * scale, 0.5)
            yy = y + rows[id(e)] * ROW
            fill = "#d0d0d0" if e.get("cat") != "op" else colour(e["name"])
            label = e["name"] + (f' {e["args"]["step_num"]}' if "step_num" in e.get("args", {}) else "")
            tip = f'{label}: {e["dur"] / 1000:.3f} ms'
            if "inputs" in e.get("args", {}):
                tip += f' in {e["args"]["inputs"]} out {e["args"]["outputs"]} {e["args"]["dtype"]}'
            out.append(f'<rect x="{x0:.1f}" y="{yy}" width="{w:.1f}" height="{ROW - 2}" fill="{fill}" '
                       f'stroke="#555" stroke-width="0.3"><title>{escape(tip)}</title></rect>')
            if w > 7 * len(label):
                out.append(f'<text x="{x0 + 3:.1f}" y="{yy + 12}" font-size="10">{escape(label)}</text>')
        y += depth * ROW + GAP

    total_ms = (hi - lo) / 1000
    out.append(f'<text x="{LEFT}" y="18" font-size="12">{total_ms:.2f} ms</text>')
    y += 6
    for i, (name, dur) in enumerate(legend):
        x = LEFT + (i % 4) * 220
        yy = y + (i // 4) * ROW
        out.append(f'<rect x="{x}" y="{yy}" width="12" height="12" fill="{colour(name)}"/>')
        out.append(f'<text x="{x + 16}" y="{yy + 10}" font-size="11">{escape(name)} {dur / 1000:.2f} ms</text>')
    height = y + 3 * ROW + 6
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>' + "".join(out) + "</svg>\n")
    with open(args.output, "w") as f:
        f.write(svg)


if __name__ == "__main__":
    main()
