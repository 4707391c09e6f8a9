"""`ctxpack serve --provider`: the same prefix gets the same summary, asked of the model once."""

from __future__ import annotations

import stat
import threading
import time
from pathlib import Path

import pytest

from compactor_core.errors import ProviderError, SummaryCutOff
from compactor_core.providers.base import SummaryRequest
from compactor_core.serve.summaries import KeptSummarizer, SummaryStore


class Model:
    """A model that numbers its summaries: a second call for one prompt gives other words."""

    name = "counting"

    def __init__(self, pause: float = 0.0, cut_off: bool = False) -> None:
        self.calls = 0
        self.pause = pause
        self.cut_off = cut_off
        self._lock = threading.Lock()

    def summarize(self, request: SummaryRequest) -> str:
        time.sleep(self.pause)
        with self._lock:
            self.calls += 1
            summary = f"summary {self.calls} of {len(request.user)} characters"
        if self.cut_off:
            raise SummaryCutOff("counting: the summary was cut off at max_tokens (10)", summary)
        return summary


def request(prefix: str) -> SummaryRequest:
    return SummaryRequest("system prompt", f"summarize:\n\n{prefix}", 2000, [])


def test_the_same_prefix_is_summarized_once_and_another_prefix_again(tmp_path: Path) -> None:
    model = Model()
    kept = KeptSummarizer(model, SummaryStore(tmp_path / "state"), "model@url")
    first = kept.summarize(request("[user]\nbuild it"))
    assert kept.summarize(request("[user]\nbuild it")) == first
    assert kept.summarize(request("[user]\nbuild it now")) != first
    assert (model.calls, kept.written, kept.reused) == (2, 2, 1)


def test_a_restarted_proxy_reads_the_summary_from_disk_kept_private(tmp_path: Path) -> None:
    folder = tmp_path / "state" / "ctxpack"
    first = KeptSummarizer(Model(), SummaryStore(folder), "model@url").summarize(request("a"))
    model = Model()
    again = KeptSummarizer(model, SummaryStore(folder), "model@url").summarize(request("a"))
    assert (again, model.calls) == (first, 0)
    files = list(folder.iterdir())
    assert [path.name.startswith("summary-") for path in files] == [True]
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600


def test_another_model_writes_its_own_summary(tmp_path: Path) -> None:
    store = SummaryStore(tmp_path / "state")
    KeptSummarizer(Model(), store, "model-a@url").summarize(request("a"))
    model = Model()
    KeptSummarizer(model, store, "model-b@url").summarize(request("a"))
    assert model.calls == 1


def test_memory_and_disk_keep_only_the_newest(tmp_path: Path) -> None:
    store = SummaryStore(tmp_path / "state", memory=2, disk=3)
    kept = KeptSummarizer(Model(), store, "m")
    for n in range(5):
        kept.summarize(request(f"prefix {n}"))
        time.sleep(0.01)  # distinct modification times
    assert len(list((tmp_path / "state").glob("summary-*.json"))) == 3
    model = Model()
    again = KeptSummarizer(model, SummaryStore(tmp_path / "state"), "m")
    again.summarize(request("prefix 4"))
    again.summarize(request("prefix 0"))  # the oldest: gone from disk
    assert model.calls == 1


def test_a_summary_cut_off_is_kept_and_said_again(tmp_path: Path) -> None:
    model = Model(cut_off=True)
    kept = KeptSummarizer(model, SummaryStore(tmp_path / "state"), "m")
    for _ in range(2):
        with pytest.raises(SummaryCutOff) as raised:
            kept.summarize(request("a"))
        assert raised.value.summary == "summary 1 of 13 characters"
        assert "cut off at max_tokens" in str(raised.value)
    assert model.calls == 1


def test_a_failed_summary_is_not_kept(tmp_path: Path) -> None:
    class Failing(Model):
        def summarize(self, request: SummaryRequest) -> str:
            self.calls += 1
            raise ProviderError("counting: HTTP 500")

    model = Failing()
    kept = KeptSummarizer(model, SummaryStore(tmp_path / "state"), "m")
    for _ in range(2):
        with pytest.raises(ProviderError):
            kept.summarize(request("a"))
    assert model.calls == 2
    assert not (tmp_path / "state").exists()


def test_requests_for_one_prefix_at_once_ask_the_model_once(tmp_path: Path) -> None:
    model = Model(pause=0.2)
    kept = KeptSummarizer(model, SummaryStore(tmp_path / "state"), "m")
    summaries: list[str] = []
    threads = [
        threading.Thread(target=lambda: summaries.append(kept.summarize(request("a"))))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert model.calls == 1
    assert len(set(summaries)) == 1 and len(summaries) == 8


def test_a_folder_that_cannot_be_written_still_gives_the_summary(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    kept = KeptSummarizer(Model(), SummaryStore(blocked / "ctxpack"), "m")
    assert kept.summarize(request("a")) == kept.summarize(request("a"))
