"""lockfile/memo.py: what a lock pins here is remembered while the lock file is unchanged, made
afresh when it changes, and a memo that does not read back whole is not used."""

from __future__ import annotations

import json
from pathlib import Path

import driftscan.lockfile.memo as memo
from driftscan.lockfile.markers import marker_environment
from fixtures.harness import settle

H = "a" * 64


def counting(monkeypatch) -> list[str]:
    reads: list[str] = []
    real = memo.read_lock

    def read(path):
        reads.append(path)
        return real(path)

    monkeypatch.setattr(memo, "read_lock", read)
    return reads


def test_remembered_while_the_lock_is_unchanged_and_made_again_when_it_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    lock = tmp_path / "requirements.txt"
    lock.write_text(f"alpha==1.0 --hash=sha256:{H}\nold==0.1 ; python_version < '3.0' --hash=sha256:{H}\n")
    settle(tmp_path)
    env = marker_environment("3.11.7")
    reads = counting(monkeypatch)
    first = memo.select_remembered(str(lock), env)
    again = memo.select_remembered(str(lock), env)
    assert len(reads) == 1, "the second selection comes from the memo"
    assert again.required == first.required and again.excluded == first.excluded and set(again.excluded) == {"old"}
    assert again.lock.format is first.lock.format and again.lock.path == first.lock.path
    lock.write_text(f"alpha==2.0 --hash=sha256:{H}\n")
    changed = memo.select_remembered(str(lock), env)
    assert len(reads) == 2 and changed.required["alpha"].version == "2.0"
    assert memo.select_remembered(str(lock), env, use_cache=False).required["alpha"].version == "2.0"
    assert len(reads) == 3, "--no-cache reads the lock"


def test_a_lock_just_written_is_not_remembered_and_a_bad_memo_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    lock = tmp_path / "requirements.txt"
    lock.write_text(f"alpha==1.0 --hash=sha256:{H}\n")
    env = marker_environment("3.11.7")
    reads = counting(monkeypatch)
    memo.select_remembered(str(lock), env)
    assert not list((tmp_path / "cache").rglob("*.json")), "within the racy window: not remembered"
    settle(tmp_path)
    memo.select_remembered(str(lock), env)
    [kept] = list((tmp_path / "cache").rglob("*.json"))
    doc = json.loads(kept.read_text())
    doc["required"][0][0] = 7  # a name that is not a string
    kept.write_text(json.dumps(doc))
    found = memo.select_remembered(str(lock), env)
    assert len(reads) == 3 and found.required["alpha"].version == "1.0"
    Path(kept).write_bytes(b"\xff not json")
    assert memo.select_remembered(str(lock), env).required["alpha"].version == "1.0"
