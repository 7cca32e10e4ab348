"""How a parallel run splits the suite (tests/parallel_plan.py) and the suite benchmark's packing."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from conftest import ROOT
from parallel_plan import BROWSER_UNIT, plan_order, unit_of
from test_packaging import readme_commands

sys.path.insert(0, str(ROOT / "benchmarks"))


def _item(nodeid: str, slow: bool = False):
    return SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda name: object() if slow and name == "slow" else None)


def test_the_browser_files_are_one_unit_and_every_other_file_its_own():
    assert unit_of("tests/test_browser.py::test_a") == unit_of("tests/test_lecture_browser.py::test_b") == BROWSER_UNIT
    assert unit_of("tests/test_space.py::test_a[x::y]") == "tests/test_space.py"
    assert unit_of("tests/test_space.py::TestC::test_d") == unit_of("tests/test_space.py::test_e")
    assert unit_of("tests/test_new_browser_page.py::t") == BROWSER_UNIT  # the rule: "browser" in the name
    assert unit_of("tests/test_app.py::test_browser_like_name") == "tests/test_app.py"


def test_plan_order_sends_the_browser_unit_then_the_slowest_files_first_keeping_each_file_in_order():
    items = [_item("tests/test_a.py::one"), _item("tests/test_a.py::two", slow=True),
             _item("tests/test_browser.py::walk", slow=True), _item("tests/test_b.py::one", slow=True),
             _item("tests/test_b.py::two", slow=True), _item("tests/test_c.py::one"),
             _item("tests/test_lecture_browser.py::lecture", slow=True), _item("tests/test_a.py::three")]
    order = [i.nodeid for i in plan_order(items)]
    assert order == ["tests/test_browser.py::walk", "tests/test_lecture_browser.py::lecture",  # one unit, first
                     "tests/test_b.py::one", "tests/test_b.py::two",  # two slow tests
                     "tests/test_a.py::one", "tests/test_a.py::two", "tests/test_a.py::three",  # one, in order
                     "tests/test_c.py::one"]
    assert plan_order(list(reversed(items)))[0].nodeid == "tests/test_lecture_browser.py::lecture"


def test_readme_command_asks_for_the_distribution_the_plan_refines():
    """The plan's scheduler answers ``--dist loadfile`` only: README's command (which CI runs) must ask
    for it, with two workers (CI's two cores)."""
    cmd = readme_commands()["tests"].split()
    assert cmd[cmd.index("-n") + 1] == "2" and cmd[cmd.index("--dist") + 1] == "loadfile"


class _Node:
    def __init__(self, name: str):
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices):
        self.sent += indices

    def shutdown(self):
        pass


def test_the_scheduler_hands_out_whole_units_in_the_workers_order():
    """pytest-xdist's controller with the plan's scheduler and two workers: the browser unit (fewer tests
    than any other file) goes out first and whole, no file is split, and the tests go in their order."""
    pytest.importorskip("xdist", reason="pytest-xdist (requirements.txt) is not installed")
    from conftest import pytest_xdist_make_scheduler

    options = SimpleNamespace(loadscopereorder=True)

    def config(dist):
        values = {"tx": ["2*popen"], "dist": dist}
        return SimpleNamespace(getvalue=values.get, option=options, hook=None)

    assert pytest_xdist_make_scheduler(config("load"), None) is None  # xdist's own, as asked
    sched = pytest_xdist_make_scheduler(config("loadfile"), None)
    collection = (["tests/test_browser.py::walk", "tests/test_lecture_browser.py::lecture"]
                  + [f"tests/test_b.py::t{i}" for i in range(5)] + [f"tests/test_a.py::t{i}" for i in range(9)]
                  + [f"tests/test_c.py::t{i}" for i in range(3)])
    nodes = [_Node("gw0"), _Node("gw1")]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, collection)
    sched.schedule()
    got = [[collection[i] for i in node.sent] for node in nodes]
    assert got[0][:2] == collection[:2]  # the browser unit first, whole, though test_a has the most tests
    assert got[1] == collection[2:7]  # then test_b, as the workers listed it
    assert list(sched.workqueue) == ["tests/test_c.py"]  # for the worker that frees up first
    assert sorted(got[0] + got[1]) == sorted(collection[:-3])
    for f in ("test_a", "test_b"):
        on = [k for k, tests in enumerate(got) if any(f"/{f}.py" in t for t in tests)]
        assert len(on) == 1, f  # a file's tests go to one worker, in their order
        assert [t for t in got[on[0]] if f"/{f}.py" in t] == [t for t in collection if f"/{f}.py" in t]


def test_packing_gives_each_unit_to_the_worker_that_frees_up_first():
    from bench_suite import pack

    assert pack([("a", 5.0), ("b", 3.0), ("c", 3.0)], 2) == 6.0  # a | b, c
    assert pack([("b", 3.0), ("c", 3.0), ("a", 5.0)], 2) == 8.0  # b, a | c: the long unit last costs 2 s
    assert pack([("a", 5.0)], 2) == 5.0 and pack([("a", 1.0), ("b", 1.0)], 1) == 2.0
