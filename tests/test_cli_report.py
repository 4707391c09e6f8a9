"""``ctxpack report`` on the command line: the table, the JSON, the filters, files it cannot
read, the kept bills and the picture (issue 33)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers import CORPUS, TESTS, run

CLAUDE = CORPUS / "originals" / "cc_entire_1284c080__full.jsonl"
KIMI = CORPUS / "originals" / "cc_kimi_516b7270__full.jsonl"
PI = TESTS / "fixtures" / "more_agents" / "pi.jsonl"


def report(*args: object) -> dict:
    done = run("report", "--json", "--no-with-ctxpack", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_table_gives_each_day_the_total_and_the_causes() -> None:
    done = run("report", "--no-with-ctxpack", CLAUDE, KIMI)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    assert lines[0].split()[:2] == ["DAY", "REQUESTS"]
    assert [line.split()[0] for line in lines[1:4]] == ["2026-02-08", "2026-03-10", "TOTAL"]
    assert lines[3].split()[1] == "300"  # 258 + 42 requests
    assert "why the cache was written:" in lines
    assert any(line.split()[:2] == ["cache", "expired"] for line in lines)


def test_the_json_total_is_the_sum_of_its_groups() -> None:
    found = report("--by", "session", CLAUDE, KIMI, PI)
    assert found["by"] == "session"
    total, groups = found["total"], found["groups"]
    assert len(groups) == 3
    for key in ("requests", "input", "cache_read", "cache_write", "output"):
        assert total[key] == sum(group[key] for group in groups)
    assert total["cost"] == round(sum(group["cost"] for group in groups), 4)
    assert total["unknown_models"] == ["fake-model"]  # pi's test model has no price
    assert sum(total["causes"].values()) == total["cache_write"] + 7000  # pi: plain input


def test_filters_by_day_agent_and_project() -> None:
    assert report("--since", "2026-03-01", CLAUDE, KIMI)["total"]["requests"] == 42
    assert report("--until", "2026-02-08", CLAUDE, KIMI)["total"]["requests"] == 258
    assert report("--agent", "pi", CLAUDE, PI)["total"]["requests"] == 7
    assert report("--project", "nothing-like-it", CLAUDE)["total"]["requests"] == 0


def test_a_file_it_cannot_read_is_one_line_and_the_report_goes_on(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"type": "user", "message": {"role": "user", "content": "hi"}}\n{oops\n')
    done = run("report", "--json", "--no-with-ctxpack", broken, tmp_path / "missing.jsonl", KIMI)
    assert done.returncode == 0
    assert json.loads(done.stdout)["total"]["requests"] == 42
    assert b"missing.jsonl: not in the report:" in done.stderr
    assert b"Traceback" not in done.stderr


def test_a_kept_bill_is_read_again_when_its_file_grows(tmp_path: Path) -> None:
    session = tmp_path / "session.jsonl"
    shutil.copy(KIMI, session)
    before = report(session)["total"]
    assert (Path.home() / ".local/state/ctxpack/report/bills.sqlite").exists()
    lines = session.read_text().splitlines(keepends=True)
    reply = next(line for line in reversed(lines) if '"usage"' in line)
    record = json.loads(reply)
    record["message"]["id"] = "msg_appended"
    with session.open("a") as file:
        file.write(json.dumps(record) + "\n")
    after = report(session)["total"]
    assert after["requests"] == before["requests"] + 1


def test_a_price_file_prices_a_model_the_table_does_not_know(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    entry = {"model": "fake-model", "input": 1000000, "cache_read": 0, "cache_write_5m": 0}
    prices.write_text(json.dumps({"models": [entry | {"cache_write_1h": 0, "output": 0}]}))
    found = report("--prices", prices, PI)["total"]
    assert found["unknown_models"] == []
    assert found["cost"] == 7000  # 7,000 plain input tokens at $1 each


def test_a_bad_price_file_is_a_configuration_error(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text("{}")
    done = run("report", "--prices", prices, PI)
    assert done.returncode == 78
    assert (
        done.stderr.decode()
        .strip()
        .endswith("not a price table (missing 'models'): see prices.json")
    )


def test_misses_are_listed_one_by_one_with_the_record_before_which_the_request_came() -> None:
    done = run("report", "--no-with-ctxpack", "--misses", CLAUDE)
    text = done.stdout.decode()
    listed = text[text.index("cache misses, one by one") :].splitlines()[1:]
    assert any(
        "compaction" in line and "cc_entire_1284c080__full.jsonl: line" in line for line in listed
    )
    assert any("cache expired" in line for line in listed)


def test_with_ctxpack_the_cache_aware_policy_bills_less_on_the_real_session() -> None:
    done = run("report", "--json", KIMI)
    total = json.loads(done.stdout)["total"]
    assert 0 < total["with_ctxpack"] < total["cost"]


def test_the_picture_is_a_png(tmp_path: Path) -> None:
    picture = tmp_path / "cost.png"
    done = run("report", "--no-with-ctxpack", "--plot", picture, KIMI)
    assert done.returncode == 0, done.stderr
    assert picture.read_bytes().startswith(b"\x89PNG")


def test_the_agents_offered_are_the_registry_s() -> None:
    from cli.agents import AGENTS
    from compactor_core.session_files.registry import agent_formats

    assert set(AGENTS) == {each.agent for each in agent_formats()}
