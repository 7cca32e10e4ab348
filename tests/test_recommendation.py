"""What a design review reads beside the best designs: every number with its unit (a response's unit read
from its name, as ``time_ms``), the true-error CDF titled by the designs it covers (not by the 1,001
quantiles it is drawn through), and the recommendation's caveats, accuracy and interval calibration on the
Explore page and in the HTML report alike (gpudse_core.report.recommendation)."""

from __future__ import annotations

import numpy as np
import pytest

from gpudse_core import fmt
from gpudse_core.report import figures


@pytest.mark.parametrize("name, unit", [("cycles", "cycles"), ("gpu_sim_cycle", "cycles"), ("time_ms", "ms"),
                                        ("geomean_kernel_exec_s", "s"), ("latency_us", "µs"), ("power_w", "W"),
                                        ("wattage", "W"), ("runtime", None), ("ipc", None), ("s", None),
                                        ("dram_bandwidth_gbs", None), ("status", None)])
def test_a_responses_unit_is_read_from_its_name(name, unit):
    assert fmt.response_unit(name) == unit


def test_a_measured_tables_time_ms_is_labelled_in_milliseconds_with_its_squared_log_unit():
    unit = fmt.response_unit("time_ms")
    assert fmt.fmt_number(1.2683, unit) == "1.268 ms"
    assert fmt.squared_unit(unit, "log") == "(log ms)²"  # the ANOVA's sums of squares on the log scale


def test_the_true_error_cdf_is_titled_by_the_designs_its_quantiles_summarise():
    quantiles = np.linspace(0.0, 0.03, 1001)  # what a stored TrueError keeps of 933,120 errors
    fig = figures.space_error_cdf(quantiles, designs=933_120)
    assert "933,120 designs" in fig.layout.title.text and "1,001" not in fig.layout.title.text
    # errors of every design given as they are: titled by their own count
    assert "5,000 designs" in figures.space_error_cdf(np.full(5000, 0.01)).layout.title.text
