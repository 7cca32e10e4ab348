"""Every size, depth, count and time an input can drive, in one place.

Each limit is checked *before* the work it bounds starts (a file's size before it is read, an
archive entry's size while it is streamed, an image's pixel count before it is decoded, a range's
value count before it is expanded), and a violation raises :class:`LimitError`, a
:class:`~gpudse_core.errors.GpudseError` whose message names the input, the limit and how to raise
it.

The defaults below suit a shared dashboard on a 2-core, 24 GB machine and a CLI on a cluster node.
A server (or a user of the CLI) overrides them in a TOML file named by the environment variable
``GPUDSE_CONFIG``, in its ``[limits]`` table::

    [limits]
    upload_bytes = 104857600        # 100 MiB
    image_pixels = 80000000

An upload, a project zip or a space file can never change a limit: they are read from the server's
environment only. Tests use :func:`override`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
from dataclasses import dataclass, fields
from typing import Any, Iterator

from .errors import GpudseError

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
CONFIG_ENV = "GPUDSE_CONFIG"
# what one process a campaign starts on this machine costs (measured; docs/limits.md): a pool worker with
# gpudse imported, before it simulates anything, and an MGPUSim run of the largest legal point on top of it
WORKER_BYTES = 75 * MiB
MGPUSIM_RUN_BYTES = 1 * GiB


class LimitError(GpudseError):
    """An input would exceed one of the configured limits."""


@dataclass(frozen=True)
class Limits:
    # ---- bytes read ------------------------------------------------------------------------
    upload_bytes: int = 50 * MiB  # one file uploaded to the dashboard
    table_bytes: int = 512 * MiB  # one results/points table read by the CLI
    json_table_bytes: int = 32 * MiB  # a table given as JSON (Python objects, ~10x its size; use CSV/Parquet beyond)
    document_bytes: int = 8 * MiB  # one YAML/JSON/TOML document: space, model, backend, graph, project entry
    # ---- structure of documents ---------------------------------------------------------------
    document_nodes: int = 1_000_000  # scalars + collections in a YAML/JSON document, YAML aliases counted as expanded
    document_depth: int = 64  # nesting of lists/mappings
    number_digits: int = 400  # digits in one number literal (constraint, value list, PPM header, JSON)
    # ---- archives (project zips) ------------------------------------------------------------------
    archive_entries: int = 64
    archive_entry_bytes: int = 256 * MiB  # decompressed, measured while streaming (headers are not trusted)
    archive_total_bytes: int = 512 * MiB
    # ---- images (Zatel heatmaps) ---------------------------------------------------------------------
    image_pixels: int = 40_000_000  # width × height, checked from the header before decoding (8K UHD is 33 M)
    image_bytes: int = 512 * MiB  # one heatmap file (a P3 text of 40 M pixels is about 480 MB)
    colour_clusters: int = 64  # K-means colour clusters of a heatmap (Zatel uses a handful)
    quantize_colours: int = 32_768  # distinct colours clustered exactly; more are merged on a 32-level grid first
    gpu_components: int = 10_000  # SMs or memory partitions of a GPU to downscale (--sms, --mem, a config)
    # ---- design spaces ------------------------------------------------------------------------------
    values_per_parameter: int = 100_000  # values one parameter may take (a range or pow2 expanded)
    space_values: int = 1_000_000  # values of all parameters of one space together
    parameters: int = 1_000  # parameters in one space (explored, group members and fixed)
    constraints: int = 1_000  # constraints in one space
    derived: int = 100  # derived quantities in one space (named expressions over its parameters)
    enumeration_points: int = 50_000_000  # points enumerated at once (an exact scan of a space)
    feasibility_points: int = 1 << 22  # combinations of one constrained component enumerated exactly at load
    feasibility_probes: int = 1 << 16  # random probes (and search steps) for a component too large to enumerate
    expression_chars: int = 2_000  # characters in one constraint expression
    expression_nodes: int = 400  # syntax-tree nodes in one constraint expression
    constraint_work: int = 1 << 30  # points × syntax nodes the feasibility analysis of one space evaluates
    sample_points: int = 10_000_000  # design points drawn by one sampling request
    sampling_work: int = 1 << 28  # draws × syntax nodes one sampling request is expected to evaluate when its
    #                               constraints are checked by rejection (points wanted / feasible share × nodes)
    # ---- tables -------------------------------------------------------------------------------------
    table_rows: int = 10_000_000
    table_columns: int = 10_000
    table_cells: int = 50_000_000  # rows × columns, checked from a CSV header / Parquet footer before reading
    json_table_nodes: int = 5_000_000  # values in a JSON table (with json_table_bytes)
    # ---- simulators and their output ------------------------------------------------------------------
    log_bytes: int = 4 * GiB  # decompressed simulator log, parsed as a stream
    log_statistics: int = 5_000_000  # statistic lines parsed from one log (~80 a kernel: 60,000 kernels; ~15 s)
    log_gzip_ratio: int = 100  # decompressed / compressed bytes of a .gz log (real logs: ~10x; bombs: 1000x)
    sim_output_bytes: int = 64 * MiB  # a run's stdout+stderr kept on disk: its head and tail (the middle dropped)
    local_workers: int = 256  # processes a campaign or a scan starts on this machine (--workers)
    local_worker_bytes: int = 16 * GiB  # their memory together (WORKER_BYTES each, plus MGPUSIM_RUN_BYTES for
    #                                      MGPUSim): a pool is started with fewer processes beyond it, never more
    campaign_lease_s: float = 120.0  # a campaign lease whose holder (on another host) has not renewed it for
    #                                  this long is stale: another process may take the campaign over
    regex_length: int = 1_000  # a user regular expression (compiled with RE2: linear time)
    timeout_max_s: float = 30 * 86400.0  # the longest timeout a simulator description may ask for
    # ---- analytical models -----------------------------------------------------------------------------
    wfg_elements: int = 400  # nodes + arcs + dependences of one work flow graph (its reduction is cubic)
    # ---- models --------------------------------------------------------------------------------------
    model_columns: int = 100_000  # columns (coefficients) of a model file
    cell_bytes: int = 64 * MiB  # level cells' candidate columns (rows × candidates × 8 bytes); fewer are formed
    cell_work: int = 1 << 31  # rows × level combinations the level cells' candidate search tries; it stops there
    validation_fits: int = 10_000  # model fits one validation request runs (sizes × repeats × models)
    refit_rows: int = 200_000  # training rows of a forest/boosting/hybrid/EBM model (and of its file)
    model_bytes: int = 64 * MiB  # one model file (a 200-tree forest of 300 rows is ~3 MB; of 2,000 rows ~20 MB)
    refit_work: int = 20_000_000  # trees × training rows an older-format learner file makes a refit grow, before it
    #                               starts (forest: n_estimators; boosting, hybrid: max_iter; EBM: outer_bags ×
    #                               max_rounds); a forest of 2,000 trees on 10,000 rows is 20 M (about 45 s)
    model_nodes: int = 4_000_000  # tree nodes, or EBM table cells, of one stored learner (checked before decoding)
    # ---- workspaces -------------------------------------------------------------------------
    workspaces: int = 10_000  # workspace files under $GPUDSE_HOME (creating or forking one more is refused)
    workspace_bytes: int = 4 * GiB  # one workspace's SQLite file, checked before each write
    workspace_stage_bytes: int = 1 * GiB  # one stored stage value (results as Parquet, arrays as .npy), encoded
    workspace_history: int = 20  # versions kept per stage; older ones not needed by a current stage are pruned
    workspace_analyses: int = 64  # named analyses in one workspace
    workspace_jobs: int = 4  # jobs running at once in one workspace (validation, scans, campaigns, ray casting)
    workspace_name_chars: int = 200  # a workspace's name
    # workspaces first visits from one client (address, /64, user) make in an hour
    visitor_workspaces_per_hour: int = 20
    visitor_idle_hours: float = 72.0  # a first visit's workspace, never changed, not opened for this long, is deleted
    # ---- exploration (gpudse explore, the Explore page) ------------------------------------------------
    explore_top: int = 10_000  # best designs one request may ask for (--top)
    scan_points: int = 20_000_000_000  # points a scan may visit one by one (about 20 min at 15 M/s)
    scan_work: int = 1 << 35  # points × syntax nodes of the constraints, --where and cost a scan of every point
    #                           evaluates (the unit of constraint_work; about 2.5 G a second on one core)
    explore_candidates: int = 5_000_000  # designs kept as possible members of a top-k or a Pareto front
    simulate_chosen: int = 200  # designs one "Simulate these" (best designs checked by simulation) may run
    # ---- sequential search (gpudse search) ------------------------------------------------------------
    search_budget: int = 100_000  # simulations one search may spend (each round refits on all of them)
    search_batch: int = 1_024  # proposals simulated together in one round
    lookup_rows: int = 5_000_000  # rows of a measured table used as a lookup simulator

    def check(self, name: str, value: float, what: str, hint: str = "") -> None:
        """Raise :class:`LimitError` when *value* exceeds the limit *name*."""
        lim = getattr(self, name)
        if value > lim:
            raise LimitError(f"{what}: {fmt_amount(value)} is more than the limit of {fmt_amount(lim)} ({name}); "
                             + (hint + "; " if hint else "")
                             + f"a server can raise it in the [limits] table of the file named by ${CONFIG_ENV}")


def fmt_amount(v: float) -> str:
    """A count or size in a limit message: thousands separators, or 3 digits and an exponent when
    absurd (a range of 1e300 values; an integer beyond float range is shown by its digit count)."""
    if isinstance(v, int) and abs(v) >= 10**308:
        return f"about 10^{len(str(abs(v))) - 1}"
    if abs(v) >= 1e15:
        return f"{float(v):.3g}"
    if isinstance(v, float) and not v.is_integer():
        return f"{v:,.3g}"
    return f"{int(v):,}"


_override: Limits | None = None
_cache: tuple[str | None, float, Limits] | None = None


def _from_file(path: str) -> Limits:
    import tomllib

    try:
        with open(path, "rb") as fh:
            raw = fh.read(1 * MiB + 1)
    except OSError as e:
        raise GpudseError(f"${CONFIG_ENV}={path}: cannot be read ({e.strerror or e})") from None
    if len(raw) > 1 * MiB:
        raise GpudseError(f"${CONFIG_ENV}={path}: more than 1 MiB; a configuration file is a few lines")
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise GpudseError(f"${CONFIG_ENV}={path}: not valid TOML ({e})") from None
    table = doc.get("limits", {})
    if not isinstance(table, dict):
        raise GpudseError(f"${CONFIG_ENV}={path}: [limits] must be a table")
    known = {f.name: f for f in fields(Limits)}
    kw: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            raise GpudseError(f"${CONFIG_ENV}={path}: [limits] {key}: unknown limit; known: {', '.join(known)}")
        kind = int if known[key].type in ("int", int) else float
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise GpudseError(f"${CONFIG_ENV}={path}: [limits] {key} = {value!r}: give a positive finite number")
        kw[key] = kind(value)
    return Limits(**kw)


def current() -> Limits:
    """The limits in force: a test override, else the server's ``$GPUDSE_CONFIG``, else the defaults."""
    global _cache
    if _override is not None:
        return _override
    path = os.environ.get(CONFIG_ENV) or None
    mtime = 0.0
    if path:
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            mtime = -1.0
    if _cache is not None and _cache[0] == path and _cache[1] == mtime:
        return _cache[2]
    lim = _from_file(path) if path else Limits()
    _cache = (path, mtime, lim)
    return lim


@contextlib.contextmanager
def override(**changes: Any) -> Iterator[Limits]:
    """Temporarily replace some limits (tests)."""
    global _override
    before = _override
    _override = dataclasses.replace(current(), **changes)
    try:
        yield _override
    finally:
        _override = before


def check(name: str, value: float, what: str, hint: str = "") -> None:
    """``current().check(...)``: raise :class:`LimitError` when *value* exceeds limit *name*."""
    current().check(name, value, what, hint)


def finite_timeout(value: Any, what: str) -> float:
    """A timeout in seconds that is a finite positive number no longer than ``timeout_max_s``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise GpudseError(f"{what}: {value!r} is not a number of seconds")
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise GpudseError(f"{what}: {value!r} seconds; give a finite positive number of seconds")
    current().check("timeout_max_s", v, what)
    return v
