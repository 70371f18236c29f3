"""Issue 18's two lists, row by row, and where `make test` tries each again: a corpus case (run through
`vsandx parse` and the upload API) or the test that sends it. A row without a live check fails here,
and so does one whose check does not run under issue 18's bounds (tests/attacks/bounds.py), so the
attack trial stays reproducible, bounds included, as the code moves."""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path

import pytest

from tests.attacks.corpus import CASES

REPO = Path(__file__).resolve().parents[2]

ROWS: dict[str, list[str]] = {
    # ---- held
    "traversal, absolute and drive-letter names": [
        "case:name_traversal",
        "case:name_absolute",
        "case:name_drive_letter",
    ],
    "control characters in names": ["case:name_control_char"],
    "PAX and GNU long-name header bombs": ["case:pax_header_bomb", "case:gnu_longname_bomb"],
    "a million members": [
        "case:million_members",
        "tests/pipeline/test_read.py::test_zip_directory_announcing_a_million_members",
    ],
    "ratio bombs (tar, nested zip, tgz in zip)": [
        "case:tar_ratio_bomb",
        "case:nested_zip_bomb",
        "case:tgz_in_zip_bomb",
    ],
    "truncated and random files": ["case:truncated_tgz", "case:random_bytes"],
    "CMMDS literal bombs (deep nesting, 9**9**9)": ["case:cmmds_deep_nesting", "case:cmmds_power_literal"],
    "stored XSS through host/device/log names": [
        "tests/service/api/test_ui.py::test_hostile_names_in_a_diagnosis_are_text",
        "tests/service/api/test_ui.py::test_uploaded_names_are_escaped",
    ],
    "SQL wildcards in filters": ["tests/service/api/test_diagnoses.py::test_sql_wildcards_in_filters_match_literally"],
    "GitHub and Bugzilla signatures, delivery-id replay": [
        "tests/service/api/test_webhooks.py::test_github_webhook",
        "tests/service/api/test_webhooks.py::test_bugzilla_webhook",
    ],
    "413 on a 600 MB upload before the body is read": [
        "tests/service/api/test_diagnoses.py::test_oversized_upload_is_refused_before_the_body_is_read",
        "tests/service/api/test_limits.py::test_a_600_mb_upload_is_refused_before_the_body_is_read",
    ],
    "API keys on every write route": ["tests/service/api/test_diagnoses.py::test_api_keys_guard_every_write_route"],
    "8 clients for 3 minutes with 0 errors and no duplicate diagnosis": [
        "tests/service/test_load.py::test_concurrent_clients_get_no_error_and_no_duplicate_diagnosis"
    ],
    "a worker killed mid-diagnosis": [
        "tests/service/test_chaos.py::test_killed_worker_job_finishes_exactly_once",
        "tests/service/queue/test_supervise.py::test_serve_replaces_a_worker_killed_mid_diagnosis_and_its_job_is_taken_over",
    ],
    "the API killed mid-upload (nothing lost, nothing left)": [
        "tests/service/test_serve.py::test_the_api_killed_mid_upload_loses_nothing",
        "tests/service/queue/test_housekeeping.py::test_spool_files_of_killed_uploads_are_swept",
    ],
    "links and devices in a tar (skipped and reported)": ["case:symlink_and_device"],
    # ---- broke
    "CMMDS listing 200,000 disks": ["case:cmmds_200k_disks"],
    "perf dump in JSON form, 240 MB": ["case:perf_json_240mb"],
    "one 250 MB perf-dump XML line": ["case:perf_xml_250mb_line", "case:perf_xml_250mb_entity"],
    "0.9-1 GiB of vmnic Link Up/Down lines": ["case:vmnic_log_1gib"],
    "a zip whose 40,000 central records point at one entry": ["case:zip_40k_records_one_entry"],
    "esxtop CSV with 1,000,000 columns": ["case:esxtop_1m_columns"],
    "a 250 MB CMMDS file": ["case:cmmds_250mb"],
    "a tar holding a 450 MB zip": ["case:tar_with_450mb_zip"],
    "a 1 MB `Link vmnic1 vmnic1 ...` line": [
        "case:link_regex_1mb_line",
        "tests/pipeline/test_budgets.py::test_every_regex_on_untrusted_text_is_linear",
    ],
    "a device name containing `$a^{$` (matplotlib mathtext)": [
        "tests/diagnosis/test_charts.py::test_png_draws_mathtext_and_tex_in_names_as_text"
    ],
    "offset=2**63 (API), page=2**62 (UI)": [
        "tests/service/api/test_diagnoses.py::test_paging_bounds_answer_422",
        "tests/service/api/test_ui.py::test_list_page_bounds",
    ],
    "a 400 MB JSON body to the feedback API": [
        "tests/service/api/test_limits.py::test_feedback_json_and_forms_take_kilobytes",
        "tests/service/api/test_limits.py::test_a_chunked_body_is_cut_as_soon_as_it_passes_the_limit",
        "tests/service/api/test_limits.py::test_a_400_mb_json_body_streamed_to_the_feedback_api_is_cut_at_the_limit",
    ],
    "a cross-origin form POST to the feedback form": [
        "tests/service/api/test_csrf.py::test_cross_origin_writes_are_refused_before_the_route",
        "tests/service/api/test_ui.py::test_feedback_form_refuses_forged_posts",
    ],
    "20,000 requests with random HTTP methods": [
        "tests/service/api/test_metrics.py::test_random_methods_and_paths_keep_metrics_small"
    ],
    "opening the diagnosis page of a bomb": [
        "tests/service/api/test_attacks_upload.py::test_attack_upload",
        "tests/service/api/test_ui.py::test_pages_never_parse_a_bundle",
    ],
    "the same signed GitHub body under new delivery ids": [
        "tests/service/api/test_webhooks.py::test_github_body_replayed_under_new_delivery_ids_queues_one_job"
    ],
    "a killed worker stays a zombie; /ready true with no worker": [
        "tests/service/queue/test_supervise.py::test_a_killed_worker_is_reaped_and_replaced",
        "tests/service/queue/test_supervise.py::test_serve_replaces_a_worker_killed_mid_diagnosis_and_its_job_is_taken_over",
    ],
}


# The tests that run every corpus case: each holds the case to issue 18's bounds.
CASE_RUNNERS = (
    "tests/pipeline/test_attacks.py::test_attack",
    "tests/service/api/test_attacks_upload.py::test_attack_upload",
)
GUARDS = {"bounded", "bounded_tree"}  # tests.attacks.bounds: a block held to the bounds
LIMITS = {"MAX_RSS_ABOVE_IDLE", "MAX_WALL_S"}  # tests.attacks.bounds: both compared with a measured process


def _functions(path: Path) -> dict[str, str]:
    tree = ast.parse(path.read_text())
    return {n.name: ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def _bounded(ref: str) -> bool:
    """Whether the test `file::function` runs under issue 18's bounds: it, or a function of its module
    that it calls, calls `bounded` or `bounded_tree` from tests/attacks/bounds.py, or holds a measure to
    both of its limits."""
    file, _, name = ref.partition("::")
    tree = ast.parse((REPO / file).read_text())
    imported = {
        a.asname or a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module == "tests.attacks.bounds"
        for a in n.names
    }
    funcs = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    seen: set[str] = set()
    todo = [name]
    while todo:
        fn = funcs.get(todo.pop())
        if fn is None or fn.name in seen:
            continue
        seen.add(fn.name)
        names = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
        calls = {c.func.id for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
        if calls & GUARDS & imported or names & imported >= LIMITS:
            return True
        todo += sorted(calls & set(funcs))
    return False


@pytest.mark.parametrize("row", list(ROWS))
def test_every_row_is_tried_again(row: str) -> None:
    for ref in ROWS[row]:
        if ref.startswith("case:"):
            assert ref[5:] in CASES, f"{row}: no corpus case {ref[5:]}"
            continue
        file, _, func = ref.partition("::")
        path = REPO / file
        assert path.is_file() and func in _functions(path), f"{row}: {ref} does not exist"


@pytest.mark.parametrize("row", list(ROWS))
def test_every_row_is_tried_within_the_bounds(row: str) -> None:
    """Each row runs under issue 18's bounds somewhere (peak RSS under 600 MB above the idle process,
    wall under 20 s): a corpus case (its runners hold every case to them), or a test that does; and
    every service test a row names runs its attack under them."""
    tests = [ref for ref in ROWS[row] if not ref.startswith("case:")]
    unbounded = [ref for ref in tests if ref.startswith(("tests/service/", "tests/diagnosis/")) and not _bounded(ref)]
    assert not unbounded, f"{row}: not run under bounded(): {unbounded}"
    assert len(tests) < len(ROWS[row]) or any(_bounded(ref) for ref in tests), f"{row}: nothing under the bounds"


@pytest.mark.parametrize("ref", CASE_RUNNERS)
def test_the_corpus_runners_hold_every_case_to_the_bounds(ref: str) -> None:
    assert _bounded(ref), ref


def test_every_corpus_case_answers_a_row() -> None:
    named = {ref[5:] for refs in ROWS.values() for ref in refs if ref.startswith("case:")}
    assert named == set(CASES), sorted(set(CASES) ^ named)


UNITS = {"": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "M": 10**6, "s": 1}
SERVICE_LIMITS = ("max_upload_bytes", "max_json_bytes", "max_form_bytes", "wait_timeout_s", "task_time_limit_s",
                  "job_memory_limit_mb", "lease_s", "max_attempts")  # fmt: skip


def test_the_readme_lists_every_limit_with_its_default() -> None:
    """Issue 18's "the README lists the limits": every limit of PipelineConfig and the service's body,
    time, memory and retry limits have a row in a README table whose default is the code's."""
    from pipeline.config import PipelineConfig
    from vsandx.settings import ServiceSettings

    rows = re.findall(r"^ *\| `(\w+)` \| ([\d,.]+) ?(KiB|MiB|GiB|M|s)?\b", (REPO / "README.md").read_text(), re.M)
    shown = {name: float(num.replace(",", "")) * UNITS[unit] for name, num, unit in rows}
    pipeline = PipelineConfig()
    limits = [
        f.name for f in fields(PipelineConfig) if f.name.startswith("max_") and f.name != "max_step_s"
    ]  # not the grid
    wanted = {f: float(getattr(pipeline, f)) for f in limits}
    wanted["ratio_min_bytes"] = float(pipeline.ratio_min_bytes)
    service = ServiceSettings(_env_file=None)  # type: ignore[call-arg]
    for f in SERVICE_LIMITS:
        wanted[f"VSANDX_{f.upper()}"] = float(getattr(service, f)) * (2**20 if f.endswith("_mb") else 1)
    missing = sorted(set(wanted) - set(shown))
    assert not missing, f"README: no row for {missing}"
    assert {k: shown[k] for k in wanted} == wanted
