"""Plots shared by the reports (scripts/plot_sim.py, scripts/plot_bench.py), on matplotlib.

Every figure is written twice beside the report, as NAME.png and NAME.svg; the functions
return NAME.png for the report to link. Inputs are plain data (per-request records in
bench's JSONL shape: start_s, ttft_s, e2e_s, endpoint, error), so the simulator and the
real-time bench plot the same way. Times are the records' (model seconds).
"""
import os


def pyplot():
    """matplotlib.pyplot on the file-only Agg backend, or None when not importable."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


def save(plt, fig, out_dir, name):
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(out_dir, f"{name}.{ext}"), dpi=110, bbox_inches="tight")
    plt.close(fig)
    return f"{name}.png"


def read_jsonl(path):
    import json
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def ttft_values(records):
    return sorted(r["ttft_s"] for r in records if r.get("error") is None
                  and r.get("ttft_s") is not None)


def ttft_cdf(plt, out_dir, name, title, series):
    """series: [(label, sorted TTFTs)]; one step line per label, log-scaled x."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.set_prop_cycle(color=plt.cm.tab20.colors)
    plotted = False
    for label, values in series:
        if not values:
            continue
        n = len(values)
        ax.step(values, [(i + 1) / n for i in range(n)], where="post", label=label)
        plotted = True
    if plotted and all(v > 0 for _, values in series for v in values):
        ax.set_xscale("log")
    ax.set_xlabel("TTFT (s)")
    ax.set_ylabel("fraction of requests")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if plotted:
        ax.legend(fontsize=7)
    return save(plt, fig, out_dir, name)


def endpoint_load(records, bins=200):
    """In-flight requests per endpoint over time: (times, {endpoint: counts}), sampled at
    `bins` points across [first start, last finish]. A request is in flight on its
    endpoint from start_s to start_s + e2e_s; failed requests and ones without an
    endpoint are left out."""
    spans = {}
    for r in records:
        ep = r.get("endpoint")
        if not ep or r.get("error") is not None or r.get("e2e_s") is None:
            continue
        spans.setdefault(ep, []).append((r["start_s"], r["start_s"] + r["e2e_s"]))
    if not spans:
        return [], {}
    t0 = min(s for v in spans.values() for s, _ in v)
    t1 = max(e for v in spans.values() for _, e in v)
    step = (t1 - t0) / bins if t1 > t0 else 1.0
    times = [t0 + i * step for i in range(bins + 1)]
    load = {}
    for ep, v in sorted(spans.items()):
        counts = [0] * len(times)
        for s, e in v:
            first = max(0, int((s - t0) / step + 0.999999))
            last = min(len(times) - 1, int((e - t0) / step))
            for i in range(first, last + 1):
                counts[i] += 1
        load[ep] = counts
    return times, load


def endpoint_load_plot(plt, out_dir, name, title, panels):
    """panels: [(subtitle, records)]; one panel each, a line per endpoint."""
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 2.6 * len(panels) + 0.6),
                             sharex=True, squeeze=False)
    for ax, (subtitle, records) in zip(axes[:, 0], panels):
        times, load = endpoint_load(records)
        ax.set_prop_cycle(color=plt.cm.tab10.colors)
        for ep, counts in load.items():
            ax.plot([t - times[0] for t in times], counts, label=ep, linewidth=1)
        ax.set_title(subtitle, fontsize=9)
        ax.set_ylabel("in flight")
        ax.grid(alpha=0.3)
        if load and len(load) <= 16:
            ax.legend(fontsize=6, loc="upper right")
    axes[-1, 0].set_xlabel("time since first request (s)")
    fig.suptitle(title)
    return save(plt, fig, out_dir, name)


def goodput_plot(plt, out_dir, name, title, series, ylabel="goodput (req/min)"):
    """series: [(label, [(concurrency, goodput)])]; one marked line per label."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.set_prop_cycle(color=plt.cm.tab20.colors)
    for label, pts in series:
        pts = sorted(p for p in pts if p[1] is not None)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ax.set_xlabel("concurrency")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return save(plt, fig, out_dir, name)


def split_plot(plt, out_dir, name, title, bars):
    """bars: [(front, [requests served by replica 0, 1, ...])]; grouped bars, a group per
    front, one bar per replica, so an even split and a skewed one read at a glance."""
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(bars) + 2), 4.2))
    replicas = max((len(c) for _, c in bars), default=0)
    width = 0.8 / max(replicas, 1)
    for i in range(replicas):
        xs = [g + (i - (replicas - 1) / 2) * width for g in range(len(bars))]
        ys = [c[i] if i < len(c) else 0 for _, c in bars]
        ax.bar(xs, ys, width, label=f"replica {i}", color=plt.cm.tab10.colors[i % 10])
    ax.set_xticks(range(len(bars)))
    ax.set_xticklabels([f for f, _ in bars], rotation=15, fontsize=8)
    ax.set_ylabel("requests served")
    ax.set_title(title)
    ax.grid(alpha=0.3, axis="y")
    if replicas:
        ax.legend(fontsize=7)
    return save(plt, fig, out_dir, name)
