"""Guards a mutation audit of the web page's application and the experiment scripts found
unguarded: what the page shows of each expert and kind (the undo's answer, the buttons and
counts of a second kind, the question's number, the latest answers, the done page), what its
answers, skips and undos act on, and what the scripts do with their arguments and print.

The page tests drive the application in-process with Flask's test client, with the page helpers
of ``helpers.py`` (:func:`helpers.page_state` and the others); the scripts are imported
(``helpers.experiment_script``) and their functions called, never run in a process of their
own."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import socket
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import helpers
import numpy as np
import pandas as pd
import pytest
from conftest import make_session_data, needs_data
from helpers import (
    SAME,
    Elements,
    answer_shown,
    create_session,
    experiment_script,
    fail_the_next_refit,
    page_state,
    shown,
    sql_rows,
    tiny_problem,
)

from elicit.session.session import Session

ROOT = Path(helpers.__file__).resolve().parents[1]  # the checkout


@pytest.fixture
def serve(tmp_path):
    """``serve(path=None, **create_app_options) -> (path, app)``: the page of a session file
    (a new one of pair questions if none is given); each app's session is closed at the end.
    Skipped without Flask."""
    pytest.importorskip("flask")
    from elicit.session.web import create_app

    apps = []

    def serve(path=None, **kw):
        if path is None:
            path = tmp_path / f"{len(apps)}.session"
            create_session(path).close()
        apps.append(create_app(path, **kw))
        return path, apps[-1]

    yield serve
    for app in apps:
        app.config["ELICIT_SESSION"].close()


def _undo_id(client, expert: str = "") -> int:
    """The answer the page's undo form would withdraw (its ``answer_id`` field)."""
    html = client.get("/", query_string={"expert": expert} if expert else {}).get_data(
        as_text=True)
    return int(re.search(r'name="answer_id" value="(\d+)"', html).group(1))


# -- the web page -------------------------------------------------------------------------------

def test_the_pages_undo_and_skip_act_on_their_own_experts_last_answer_and_question(serve):
    """The undo form carries the expert's own last active answer: not the first, not another
    expert's, not one undone already; a named expert's skip skips their question."""
    path, app = serve()
    s, c = app.config["ELICIT_SESSION"], app.test_client()
    first = s.answer(s.next_query(), "similar")
    alices = s.answer(s.next_query("alice"), "dissimilar", expert="alice")
    last = s.answer(s.next_query(), "dont_know")
    s.next_query(), s.next_query("alice")  # as each page's answer does: the undo is beside them
    assert (_undo_id(c), _undo_id(c, "alice")) == (last.id, alices.id)
    token = shown(c)["token"]
    r = c.post("/undo", data={"csrf_token": token, "answer_id": _undo_id(c)}, headers=SAME)
    assert r.status_code == 303
    assert sql_rows(path, "SELECT id FROM answers WHERE undone_at IS NOT NULL") == [(last.id,)]
    assert _undo_id(c) == first.id  # the one undone is no longer the last
    # alice's own question, skipped through her page
    qid = s.next_query("alice").id
    r = c.post("/skip?expert=alice", data={"csrf_token": token, "expert": "alice",
                                           "query_id": str(qid)}, headers=SAME)
    assert r.status_code == 303, r.get_data(as_text=True)
    assert sql_rows(path, "SELECT status, expert FROM queries WHERE id = ?", qid) == [
        ("skipped", "alice")]


def test_the_latest_answers_are_listed_newest_first(tmp_path, serve, monkeypatch):
    """The page lists the latest HISTORY_ROWS answers (2 here, not 10: fewer answers to
    make), the newest at the top."""
    pytest.importorskip("flask")
    from elicit.session.web import app as web_app

    monkeypatch.setattr(web_app, "HISTORY_ROWS", 2)
    path = tmp_path / "h.session"
    with create_session(path) as s:
        ids = [s.answer(s.next_query(), "similar").id for _ in range(3)]
    html = serve(path)[1].test_client().get("/").get_data(as_text=True)
    table = re.search(r'<table id="history">.*?</table>', html, re.S)[0]
    listed = [int(x) for x in re.findall(r"<tr[^>]*><td>(\d+)</td>", table)]
    assert listed == ids[:0:-1]  # 3, 2


def test_a_question_of_the_second_kind_has_its_buttons_and_every_kind_is_counted(tmp_path, serve):
    """A session of pair and feature questions: a feature question shows its own answers'
    buttons, and the progress line counts the answers of both kinds."""
    path = tmp_path / "b.session"
    with create_session(path, questions="both") as s:
        assert [k.name for k in s.kinds] == ["pairs", "relevance"]
        assert s.next_query().kind == "relevance"  # the second kind is asked first here
    c = serve(path)[1].test_client()
    html = c.get("/").get_data(as_text=True)
    ids = {a.get("id") for _, a in Elements.of(html)}
    assert {"btn-relevant", "btn-irrelevant", "btn-dont_know"} <= ids
    assert not {"btn-similar", "btn-dissimilar"} & ids
    _, r = answer_shown(c, "relevant")
    assert r.status_code == 303
    progress = " ".join(re.search(r'id="progress">(.*?)</div>', c.get("/").get_data(
        as_text=True), re.S)[1].split())
    for count in ("0 similar", "0 dissimilar", "1 relevant", "0 irrelevant"):
        assert re.search(rf"\b{count}\b", progress), (count, progress)


def _closed_by_answers(path) -> None:
    """A session of 3 features and both kinds whose 3 features were called irrelevant: their 3
    pairs are closed, 3 of its 6 questions answered and nothing left to ask."""
    X, y, U = make_session_data(p=3)
    with Session.create(X, y, U, ["a", "b", "c"], path=path, engine="numpy",
                        questions="both") as s:
        for _ in range(3):
            s.answer(s.next_query(), "irrelevant")
        assert s.progress()["left"] == 3 and s.is_done()


def test_an_expert_whose_feature_answers_closed_every_question_sees_the_done_page(tmp_path,
                                                                                  serve):
    """Nothing is left to ask, though fewer answers than questions were given: the done page,
    which says how many were answered, not that all were."""
    _closed_by_answers(tmp_path / "c.session")
    html = serve(tmp_path / "c.session")[1].test_client().get("/").get_data(as_text=True)
    assert 'id="done"' in html and 'id="next-form"' not in html
    done = " ".join(re.search(r'<h2 id="done">(.*?)</h2>', html, re.S)[1].split())
    assert done.startswith("No question is left: 3 of 6 answered, the others closed"), done


def test_the_terminal_says_how_many_were_answered_when_answers_closed_the_rest(tmp_path):
    """`elicit ask` on the same session: no claim that all 6 questions were answered."""
    import io

    from elicit.session.terminal import run_ask

    _closed_by_answers(tmp_path / "c.session")
    out = io.StringIO()
    with Session.open(tmp_path / "c.session") as s:
        assert run_ask(s, io.StringIO("q\n"), out) == 0
    assert "No question is left: 3 of 6 answered, the others closed" in out.getvalue()
    assert "All 6" not in out.getvalue()


def test_the_question_number_and_the_undo_button_follow_the_experts_answers(serve):
    c = serve()[1].test_client()

    def state() -> tuple[str, bool]:
        html = c.get("/").get_data(as_text=True)
        undo = next(a for _, a in Elements.of(html) if a.get("id") == "btn-undo")
        return re.search(r'class="lead">(Question \d+)', html)[1], "disabled" in undo

    assert state() == ("Question 1", True)
    assert answer_shown(c)[1].status_code == 303
    assert state() == ("Question 2", False)


def test_a_comment_of_its_full_length_in_four_byte_characters_is_saved(serve):
    """MAX_COMMENT characters of 4 UTF-8 bytes (12 bytes each, URL-encoded) fit the body."""
    from elicit.session.inputs import MAX_COMMENT

    path, app = serve()
    comment = "\U0001F600" * MAX_COMMENT
    st, r = answer_shown(app.test_client(), comment=comment)
    assert r.status_code == 303
    assert sql_rows(path, "SELECT query_id, comment FROM answers") == [(int(st["qid"]),
                                                                         comment)]


def test_an_empty_name_on_a_named_experts_server_is_the_unnamed_expert(serve):
    """The server's default expert is dora; the name field emptied is the unnamed expert
    (``--expert ''`` of the terminal), not dora."""
    path, app = serve(expert="dora")
    c = app.test_client()
    html = c.get("/?expert=").get_data(as_text=True)
    assert 'name="expert" id="expert" value=""' in html and "dora" not in html
    r = c.post("/next", data={"csrf_token": page_state(html)["token"], "expert": ""},
               headers=SAME)
    assert r.status_code == 303
    assert sorted(sql_rows(path, "SELECT expert FROM queries WHERE status = 'pending'")) \
        == [("",), ("dora",)]


def test_a_comment_saved_before_a_failed_refit_is_not_called_unsaved(serve, monkeypatch):
    """The answer and its comment are saved, the refit fails (503): the page must not say
    the comment was not saved, nor offer it again in the box."""
    path, app = serve()
    c = app.test_client()
    st = shown(c)
    fail_the_next_refit(monkeypatch)
    r = c.post("/answer", data={"csrf_token": st["token"], "query_id": st["qid"],
                                "answer": "similar", "comment": "both praise the lid"},
               headers=SAME)
    assert r.status_code == 503
    html = r.get_data(as_text=True)
    assert "not saved" not in html and "both praise the lid</textarea>" not in html
    assert sql_rows(path, "SELECT comment FROM answers") == [("both praise the lid",)]


def test_a_server_on_every_ipv6_interface_answers_by_this_machines_name(tmp_path):
    """``--host ::`` listens on every interface as ``0.0.0.0`` does: the page answers by the
    machine's name, not only by ``::``."""
    pytest.importorskip("flask")
    from elicit.errors import ElicitError
    from elicit.session.web import make_server

    path = tmp_path / "v.session"
    create_session(path).close()
    try:
        server, app = make_server(path, host="::", port=0)
    except ElicitError as e:
        pytest.skip(f"no IPv6 here: {e}")
    try:
        host = f"{socket.gethostname()}:{server.server_port}"
        assert app.test_client().get("/", headers={"Host": host}).status_code == 200
    finally:
        server.server_close()
        app.config["ELICIT_SESSION"].close()


# -- the experiment scripts ---------------------------------------------------------------------

def _mse_csv(folder: Path, rows: list[tuple]) -> None:
    """``mse.csv`` of (strategy, run, n_feedback, mse) rows; the sweep's ``mean`` line too."""
    df = pd.DataFrame(rows, columns=["strategy", "run", "n_feedback", "mse"])
    df.insert(0, "dataset", "d")
    df.to_csv(folder / "mse.csv", index=False)


def test_compare_targets_pairs_the_runs_params_minus_predictive(tmp_path):
    """Two runs: params - predictive after one answer is -0.5 and -0.1, mean -0.3, s.e.
    std([-0.5, -0.1], ddof=1) / sqrt(2) = 0.2."""
    script = experiment_script("compare_targets")
    for name, mse in (("pred", (1.0, 2.0)), ("params", (0.5, 1.9))):
        (tmp_path / name).mkdir()
        _mse_csv(tmp_path / name, [("random", r, 1, m) for r, m in enumerate(mse)])
    t = script.paired_table(tmp_path / "pred", tmp_path / "params", [1])
    row = t.iloc[0]
    assert (row.strategy, row.answers, row.runs) == ("random", 1, 2)
    assert np.isclose(row.diff_mean, -0.3) and np.isclose(row.diff_se, 0.2)
    assert np.isclose(row.mse_predictive, 1.5) and np.isclose(row.mse_params, 1.2)


def test_diagnose_realdatas_tau2_must_be_above_zero():
    positive_tau2 = experiment_script("diagnose_realdata").positive_tau2
    assert positive_tau2("0.5") == 0.5
    for text in ("0", "0.0", "-0"):
        with pytest.raises(argparse.ArgumentTypeError, match="must be a positive number"):
            positive_tau2(text)


@needs_data
def test_diagnose_realdata_sets_up_the_data_set_seed_tau2_and_run_asked(monkeypatch, capsys):
    from elicit.errors import ElicitError

    script = experiment_script("diagnose_realdata")
    made = []

    def stop(cfg, run):
        made.append((cfg.name, cfg.settings.seed, cfg.fixed_tau2, run))
        raise ElicitError("stopped before the data are read")

    monkeypatch.setattr(script, "realdata_problem", stop)
    monkeypatch.setattr(sys, "argv", ["diagnose_realdata.py", "--dataset", "yelp", "--seed",
                                      "4", "--tau2", "0.5", "--run", "3"])
    with pytest.raises(SystemExit):
        script.main()
    assert made == [("yelp", 4, 0.5, 3)]


def test_the_ideal_kernel_couples_no_feature_outside_a_group():
    """A feature in no group (label -1) is coupled to none: with every feature in no group the
    ideal kernel is I, as with every feature in a group of its own."""
    import dataclasses

    from elicit import GroupOracle

    script = experiment_script("models_table")
    prob = tiny_problem(0, 0)
    prob = dataclasses.replace(prob, hyper=dataclasses.replace(prob.hyper, variant="fixed"))
    p = prob.X.shape[1]
    alone = dataclasses.replace(prob, expert=GroupOracle(np.arange(p)))
    none = dataclasses.replace(prob, expert=GroupOracle(np.full(p, -1)))
    assert script.ideal_control(none) == script.ideal_control(alone)


def test_tall_tables_worker_is_asked_for_the_size_and_rounds_given(tmp_path, monkeypatch,
                                                                   capsys):
    """Each size's process gets its rows, features and rounds (this stand-in reports them back
    as its create, first-question and round times)."""
    worker = tmp_path / "python"
    worker.write_text('#!/bin/sh\necho "{\\"n\\": $3, \\"p\\": $4, \\"create_s\\": $3, '
                      '\\"first_s\\": $4, \\"round_median_s\\": $6, \\"round_max_s\\": $6, '
                      '\\"peak_rss_mb\\": 1}"\n')
    worker.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(worker))
    monkeypatch.setattr(sys, "argv", ["tall_table.py", "--rows", "10", "--features", "5",
                                      "--rounds", "3"])
    experiment_script("tall_table").main()
    assert "| 10 x 5 | 10.00 s | 5.00 s | 3.00 s, 3.00 s | 1 MB |" in capsys.readouterr().out


def _audit(name: str, policy: str, refits: int, asked: list, mse: list, lost=()) -> dict:
    """A result of refit_modes.audit_run with one strategy (random)."""
    return {"name": name, "run": 0, "policy": policy, "counts": {"refits": refits},
            "lost": list(lost), "cpu": 1.0, "wall": 1.0, "engine": {},
            "asked": {"random": asked}, "mse": {"random": mse}}


def test_refit_modes_summary_counts_each_policy_and_compares_it_with_before():
    """Refits 1, 2 and 4 under the three policies; "after" asked another question (1 of 1
    run-strategy) and moved the mean curve by at most |0.5 - 0.8| = 0.3; "unlikely-only"
    asked the same ones."""
    script = experiment_script("refit_modes")
    q, other = [[0, 1, "similar"]], [[0, 2, "similar"]]
    results = [_audit("s", "before", 1, q, [1.0, 0.8], lost=[0.5]),
               _audit("s", "after", 2, other, [1.0, 0.5], lost=[0.25, 2.0]),
               _audit("s", "unlikely-only", 4, q, [1.0, 0.8])]
    s = script.summarize(results)["s"]
    assert [s[p]["refits"] for p in ("before", "after", "unlikely-only")] == [1, 2, 4]
    assert (s["before"]["max_lost"], s["after"]["max_lost"]) == (0.5, 2.0)
    assert s["after"]["runs_strategies_with_other_questions"] == 1
    assert s["unlikely-only"]["runs_strategies_with_other_questions"] == 0
    assert np.isclose(s["after"]["max_mean_mse_change"], 0.3)


def test_refit_modes_audits_a_folder_named_once_with_the_rounds_asked(tmp_path, monkeypatch,
                                                                      capsys):
    """One folder: each policy of run 0 is audited with --rounds, and --json is where the
    summary printed is written."""
    script = experiment_script("refit_modes")
    folder = tmp_path / "syn"
    folder.mkdir()
    shutil.copy(ROOT / "results" / "synthetic" / "config.json", folder)
    calls = []

    def audit(folder, run, policy, rounds, data_dir):
        calls.append((folder, run, policy, rounds, data_dir))
        return _audit(str(folder), policy, 1, [], [1.0])

    monkeypatch.setattr(script, "audit_run", audit)
    monkeypatch.setattr(script, "ProcessPoolExecutor", ThreadPoolExecutor)
    monkeypatch.setattr(sys, "argv", ["refit_modes.py", str(folder), "--runs", "1",
                                      "--rounds", "2", "--json", str(tmp_path / "s.json")])
    script.main()
    assert calls == [(folder, 0, p, 2, None) for p in script.POLICIES]
    written = json.loads((tmp_path / "s.json").read_text())
    assert list(written) == [str(folder)]
    assert json.dumps(written, indent=1) in capsys.readouterr().out


def test_study_table_row_of_a_small_sweep(tmp_path, monkeypatch, capsys):
    """Two runs, answers 0-2, computed by hand: no feedback 3.0 and 5.0, the ceiling 2.0 and
    4.5 (gain 1.0, 0.5); Sequential - Random -0.3, +0.1 after 1 answer and -0.6, -0.6 after 2;
    Non-sequential - Random +0.2, +0.4 after 1."""
    folder = tmp_path / "amazon"
    folder.mkdir()
    shutil.copy(ROOT / "results" / "amazon" / "config.json", folder)
    curves = {"random": ((3.0, 2.8, 2.6), (5.0, 4.8, 4.6)),
              "sequential": ((3.0, 2.5, 2.0), (5.0, 4.9, 4.0)),
              "nonsequential": ((3.0, 3.0, 2.9), (5.0, 5.2, 5.1))}
    rows = [(st, r, n, m) for st, runs in curves.items() for r, curve in enumerate(runs)
            for n, m in enumerate(curve)]
    rows += [("ceiling", 0, 0, 2.0), ("ceiling", 1, 0, 4.5), ("mean", 0, 0, 6.0),
             ("mean", 1, 0, 7.0)]
    _mse_csv(folder, rows)
    monkeypatch.setattr(sys, "argv", ["study_table.py", str(folder), "--at", "1"])
    experiment_script("study_table").main()
    row = capsys.readouterr().out.strip().splitlines()[-1]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:] == ["2", "6.500 ± 0.500", "4.000 ± 1.000", "3.250 ± 1.250",
                         "+0.750 ± 0.250", "-0.100 ± 0.200 (1/2)", "-0.600 ± 0.000 (2/2)",
                         "+0.300 ± 0.100 (0/2)"], row


def test_reproduce_gives_each_step_its_runs_rounds_and_memo(tmp_path, monkeypatch, capsys):
    """--runs (synthetic), --real-runs (real data), --mixed-runs and --mixed-rounds (mixed
    steps) reach the steps and the report; the memo lives in --out."""
    script = experiment_script("reproduce")
    seen = {}

    def run_steps(todo, out, settings, done, **kw):
        seen["settings"] = settings
        for step in todo:
            done(step, "", 60.0, 60.0)

    monkeypatch.setattr(script.steps, "step_config", lambda *a: None)  # no data needed
    monkeypatch.setattr(script.steps, "run_steps", run_steps)
    monkeypatch.setattr(script, "write_report", lambda out, **kw: seen.update(report=kw))
    out = tmp_path / "o"
    monkeypatch.setattr(sys, "argv", [
        "reproduce.py", "--out", str(out), "--steps", "synthetic,amazon,amazon-mixed",
        "--runs", "3", "--real-runs", "9", "--mixed-runs", "4", "--rounds", "7",
        "--mixed-rounds", "5", "--quiet"])
    script.main()
    st = seen["settings"]
    assert (st.rounds, st.mixed_rounds) == (7, 5)
    assert Path(st.memo) == (out / ".memo").absolute()
    assert seen["report"]["step_runs"] == {"synthetic": 3, "amazon": 9, "amazon-mixed": 4}


@needs_data
def test_relevance_orders_runs_the_seed_asked_and_prints_the_mean_curves(monkeypatch, capsys):
    script = experiment_script("relevance_orders")
    seeds = []

    def one_run(cfg, run):
        seeds.append((cfg.settings.seed, run))
        return {"start": 1.0 + run, "hits": 2 * run, "auc": 0.5,
                **{name: [k + run for k in (1.0, 2.0, 3.0)]
                   for name in ("relevant-first", "relevant-random", "ranking")}}

    monkeypatch.setattr(script, "one_run", one_run)
    monkeypatch.setattr(sys, "argv", ["relevance_orders.py", "--seed", "7", "--runs", "2"])
    script.main()
    out = capsys.readouterr().out
    assert seeds == [(7, 0), (7, 1)]
    assert "start (no answer): 1.500" in out
    assert re.search(r"ranking\s+1\.500 / 2\.500 / 3\.500\n", out), out


def test_the_page_with_no_question_waiting_offers_the_undo_of_the_last_answer(serve):
    """An answer given in the terminal, then the page opened: no question is waiting (a GET
    asks none), and the undo of that answer is there as on the other pages."""
    path, app = serve()
    s, c = app.config["ELICIT_SESSION"], app.test_client()
    last = s.answer(s.next_query(), "similar")
    html = c.get("/").get_data(as_text=True)
    assert 'id="no-question"' in html
    undo = next(a for _, a in Elements.of(html) if a.get("id") == "btn-undo")
    assert "disabled" not in undo and _undo_id(c) == last.id
    r = c.post("/undo", data={"csrf_token": page_state(html)["token"],
                              "answer_id": last.id}, headers=SAME)
    assert r.status_code == 303
    assert sql_rows(path, "SELECT id FROM answers WHERE undone_at IS NOT NULL") == [(last.id,)]
