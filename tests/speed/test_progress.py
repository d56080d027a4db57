"""One byte-progress meter (fileio.ByteProgress) for venvs and trees; the CLI's bar only renders it."""

from __future__ import annotations

import threading

from driftscan.fs.reader import ByteProgress
from driftscan.modeldir.hashing import PROGRESS_STEP, Meter


def recorder():
    calls: list[tuple[int, int]] = []
    return calls, lambda done, total: calls.append((done, total))


def test_every_add_is_reported_without_a_step_and_done_never_passes_the_total():
    calls, progress = recorder()
    meter = ByteProgress(progress, total=10)
    for n in (4, 4, 4):
        meter.add(n)
    assert calls == [(4, 10), (8, 10), (10, 10)]
    assert meter.done == 12


def test_a_step_throttles_the_calls_and_a_final_add_is_always_reported():
    calls, progress = recorder()
    meter = ByteProgress(progress, total=100, step=10)
    for _ in range(7):
        meter.add(3)
    assert calls == [(12, 100)]  # 3, 6, 9 stay silent; 12 is a step on; 15, 18, 21 are not yet
    meter.add(0, final=True)
    assert calls == [(12, 100), (21, 100)]


def test_no_callback_still_counts():
    meter = ByteProgress(total=5)
    meter.add(2)
    meter.add(3, final=True)
    assert meter.done == 5


def test_threads_lose_no_byte_and_the_callback_sees_done_grow():
    calls, progress = recorder()
    meter = ByteProgress(progress, total=8 * 5000)

    def work() -> None:
        for _ in range(5000):
            meter.add(1)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert meter.done == 8 * 5000
    assert [d for d, _ in calls] == list(range(1, 8 * 5000 + 1))  # one call per add, in order


def test_the_tree_meter_is_the_same_meter_with_its_own_counters():
    calls, progress = recorder()
    meter = Meter(progress)
    assert isinstance(meter, ByteProgress)
    meter.total = 3 * PROGRESS_STEP
    meter.note_read(100)  # a header read: not hashing progress
    meter.note_hashed(PROGRESS_STEP - 1)
    assert calls == []
    meter.note_hashed(1)
    meter.note_hashed(5, final=True)
    assert calls == [(PROGRESS_STEP, 3 * PROGRESS_STEP), (PROGRESS_STEP + 5, 3 * PROGRESS_STEP)]
    assert (meter.read, meter.hashed, meter.done, meter.unread_large) == (PROGRESS_STEP + 105, PROGRESS_STEP + 5,
                                                                          PROGRESS_STEP + 5, 0)


def test_the_venv_path_counts_with_the_same_meter():
    from driftscan.environment import records

    assert records.ByteProgress is ByteProgress
    assert not [name for name in vars(records) if "meter" in name.lower()]


def test_the_bar_renders_what_the_meter_reports(capsys):
    from driftscan.cli import PROGRESS_MIN_BYTES, Progress

    bar = Progress()
    bar.enabled = True  # as on a terminal
    meter = ByteProgress(bar, total=1_000_000_000)
    for _ in range(4):
        meter.add(250_000_000)
    meter.add(0, final=True)  # the same percentage again: not drawn twice
    assert capsys.readouterr().err == "".join([
        "\rhashing ######                     25% of 1.0 GB",
        "\rhashing ############               50% of 1.0 GB",
        "\rhashing ##################         75% of 1.0 GB",
        "\rhashing ######################### 100% of 1.0 GB\n",
    ])
    small = Progress()
    small.enabled = True
    ByteProgress(small, total=PROGRESS_MIN_BYTES - 1).add(PROGRESS_MIN_BYTES - 1)
    assert capsys.readouterr().err == ""  # short work: no bar
