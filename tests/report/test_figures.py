"""Issue 17, defect 8: the timeline marks where Pi compacted and its legend covers no data; the decay
plot has whole-number ticks."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from sessiontools.read import load_session  # noqa: E402
from sessiontools.read.sources import load_source  # noqa: E402
from sessiontools.replay import replay_source  # noqa: E402
from sessiontools.replay.run_document import record_of  # noqa: E402
from sessiontools.report.replay_figures import timeline_figure  # noqa: E402
from tests.conftest import SAMPLES  # noqa: E402


def test_timeline_marks_recorded_compactions_and_keeps_the_legend_off_the_data() -> None:
    (pr,) = replay_source(load_source(SAMPLES / "pi0-overflow.jsonl"), windows=[16000], reserves=[3000],
                           keeps=[4000], policy=None, leaf=None, all_leaves=False, summary_tokens=None)
    fig = timeline_figure(record_of(pr, pr.runs[0], timeline=True))
    ax = fig.axes[0]
    marks = [c for c in ax.collections if c.get_label() == "the agent compacted here (recorded)"]
    assert len(marks) == 1 and len(marks[0].get_offsets()) == len(pr.path.compactions) == 7
    assert ax.get_legend() is None and len(fig.legends) == 1  # a figure legend beside the axes
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    legend_box = fig.legends[0].get_window_extent(renderer)
    axes_box = ax.get_window_extent(renderer)
    assert legend_box.x0 >= axes_box.x1 - 1, "the legend overlaps the plotting area"


def test_decay_plot_has_integer_ticks() -> None:
    from sessiontools.analysis.drift import FUZZY_THRESHOLD, DriftReport, DriftWorker
    from sessiontools.report.drift import decay_figure

    chains = DriftWorker(leaf=None, all_leaves=False, tokenizer="chars4")(load_session(SAMPLES / "pi0-threshold-5x.jsonl"))
    fig = decay_figure(DriftReport(tuple(chains), "chars4", FUZZY_THRESHOLD))
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    for ax in fig.axes:
        lo, hi = ax.get_xlim()
        ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
